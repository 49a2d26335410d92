//! Reading and writing `.npy` files (dtypes `<f4`, `<f8`, `<i4`, C order) as [`HostArray`]s.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use npyz::WriterBuilder;
use tilec_midend::Scalar;

use crate::array::HostArray;
use crate::error::RunError;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// The element type of a supported `.npy` dtype string.
fn elem_of_dtype(descr: &str) -> Option<Scalar> {
    match descr {
        "<f4" => Some(Scalar::F32),
        "<f8" => Some(Scalar::F64),
        "<i4" => Some(Scalar::I32),
        _ => None,
    }
}

/// The `.npy` dtype string of an element type.
fn dtype_of_elem(elem: Scalar) -> Result<&'static str, RunError> {
    match elem {
        Scalar::F32 => Ok("<f4"),
        Scalar::F64 => Ok("<f8"),
        Scalar::I32 => Ok("<i4"),
        _ => Err(RunError::UnsupportedElem { elem }),
    }
}

/// Reads until `buf` is full or the input ends; returns the number of bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Reads a `.npy` file.
///
/// Errors, each naming the file: it cannot be opened or read (E0400); it does not start with
/// the `.npy` magic or its header is malformed (E0401); its dtype is not `<f4`, `<f8` or
/// `<i4` (E0402); it is in Fortran order (E0403); it has fewer data bytes than its header
/// announces (E0404); its shape is too large for memory (E0405). Bytes after the data are
/// ignored.
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostArray, RunError> {
    let path = path.as_ref();
    let not_npy = |detail: String| RunError::NotNpy { path: path.to_path_buf(), detail };
    let mut file = File::open(path).map_err(|e| RunError::io(path, "open", &e))?;
    let mut magic = [0u8; 6];
    let got = read_full(&mut file, &mut magic).map_err(|e| RunError::io(path, "read", &e))?;
    if got < MAGIC.len() || &magic != MAGIC {
        return Err(not_npy("it does not start with the \\x93NUMPY magic".into()));
    }
    file.rewind().map_err(|e| RunError::io(path, "read", &e))?;
    let mut reader = BufReader::new(file);
    let header = npyz::NpyHeader::from_reader(&mut reader).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => not_npy("the header is truncated".into()),
        _ => not_npy(format!("bad header: {e}")),
    })?;
    let dtype = match header.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => other.descr(),
    };
    let Some(elem) = elem_of_dtype(&dtype) else {
        return Err(RunError::UnsupportedDtype { path: path.to_path_buf(), dtype });
    };
    if header.order() == npyz::Order::Fortran && header.shape().len() > 1 {
        return Err(RunError::FortranOrder { path: path.to_path_buf() });
    }
    let mut array = HostArray::zeros(elem, header.shape())?;
    let expected = array.byte_len();
    let got = read_full(&mut reader, array.bytes_mut()).map_err(|e| RunError::io(path, "read", &e))?;
    if got < expected {
        return Err(RunError::Truncated { path: path.to_path_buf(), expected: expected as u64, actual: got as u64 });
    }
    Ok(array)
}

/// A fresh temporary path next to `path` (same directory, so that renaming is atomic).
fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = format!(".{name}.{}.{n}.tmp", std::process::id());
    match path.parent() {
        Some(dir) => dir.join(tmp),
        None => PathBuf::from(tmp),
    }
}

fn write_to(file: File, array: &HostArray) -> io::Result<()> {
    let dtype: npyz::TypeStr = dtype_of_elem(array.elem())
        .ok()
        .and_then(|d| d.parse().ok())
        .ok_or_else(|| io::Error::other("unsupported element type"))?;
    let mut w = BufWriter::new(file);
    npyz::WriteOptions::new_header_only()
        .dtype(npyz::DType::Plain(dtype))
        .shape(array.shape())
        .writer(&mut w)
        .write_header_only()?;
    w.write_all(array.bytes())?;
    w.into_inner().map_err(io::IntoInnerError::into_error)?.sync_all()
}

/// Writes `array` to `path` as a `.npy` file (C order, little-endian), atomically: the data
/// goes to a temporary file in the same directory that is then renamed over `path`, so a
/// failure never leaves a partial file at `path`.
///
/// Errors: the element type has no supported dtype (E0406); the file cannot be created,
/// written or renamed (E0400, naming `path`).
pub fn write_npy_atomic(path: impl AsRef<Path>, array: &HostArray) -> Result<(), RunError> {
    let path = path.as_ref();
    dtype_of_elem(array.elem())?;
    let tmp = temp_path(path);
    let file = File::options().write(true).create_new(true).open(&tmp).map_err(|e| RunError::io(path, "create", &e))?;
    let result = write_to(file, array)
        .map_err(|e| RunError::io(path, "write", &e))
        .and_then(|()| fs::rename(&tmp, path).map_err(|e| RunError::io(path, "rename a temporary file to", &e)));
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh empty directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(tag: &str) -> TempDir {
            static N: AtomicU64 = AtomicU64::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("tilec-runtime-{tag}-{}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// A hand-made `.npy` v1.0 file: header dict padded so the data starts at byte 64.
    fn raw_npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = MAGIC.to_vec();
        out.extend([1u8, 0]);
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn round_trip_each_dtype() {
        let dir = TempDir::new("rt");
        let arrays = [
            HostArray::from_f32(&[1.5, -2.0, 3.25, 0.0, 1e-7, 6.0], &[2, 3]).unwrap(),
            HostArray::from_f64(&[1.0 / 3.0, -2.0, f64::MAX], &[3, 1]).unwrap(),
            HostArray::from_i32(&[i32::MIN, -1, 0, 7, i32::MAX, 3, 2, 1], &[2, 2, 2]).unwrap(),
            HostArray::zeros(Scalar::F32, &[0, 4]).unwrap(),
        ];
        for (i, a) in arrays.iter().enumerate() {
            let p = dir.0.join(format!("a{i}.npy"));
            write_npy_atomic(&p, a).unwrap();
            assert_eq!(&read_npy(&p).unwrap(), a);
            // Overwriting an existing file works and leaves no temporary behind.
            write_npy_atomic(&p, a).unwrap();
        }
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), arrays.len());
    }

    #[test]
    fn reads_numpy_written_header() {
        let dir = TempDir::new("hdr");
        let p = dir.0.join("x.npy");
        let data: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_le_bytes()).collect();
        fs::write(&p, raw_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", &data)).unwrap();
        assert_eq!(read_npy(&p).unwrap().as_i32(), Some(&[1, 2, 3][..]));
    }

    #[test]
    fn read_errors() {
        let dir = TempDir::new("err");
        let p = dir.0.join("i2.npy");
        fs::write(&p, raw_npy("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", &[1, 0, 2, 0])).unwrap();
        let e = read_npy(&p).unwrap_err();
        assert_eq!(e.code(), "E0402");
        let msg = e.to_string();
        assert!(
            msg.contains("i2.npy") && msg.contains("`<i2`") && msg.contains("<f4 (f32), <f8 (f64), <i4 (i32)"),
            "{msg}"
        );

        let p = dir.0.join("f.npy");
        fs::write(&p, raw_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", &[0; 32])).unwrap();
        assert_eq!(read_npy(&p).unwrap_err().code(), "E0403");

        let p = dir.0.join("t.npy");
        fs::write(&p, raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", &[0; 10])).unwrap();
        let e = read_npy(&p).unwrap_err();
        assert_eq!(e.code(), "E0404");
        assert!(e.to_string().contains("announces 16 bytes of data, the file has 10"), "{e}");

        let p = dir.0.join("n.npy");
        fs::write(&p, b"hello world").unwrap();
        let e = read_npy(&p).unwrap_err();
        assert_eq!(e.code(), "E0401");
        assert!(e.to_string().contains("n.npy"), "{e}");

        let p = dir.0.join("h.npy");
        fs::write(&p, &raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", &[])[..20]).unwrap();
        assert_eq!(read_npy(&p).unwrap_err().code(), "E0401");

        let e = read_npy(dir.0.join("missing.npy")).unwrap_err();
        assert_eq!(e.code(), "E0400");
        assert!(e.to_string().contains("missing.npy"), "{e}");
    }

    #[test]
    fn failed_write_leaves_nothing() {
        let dir = TempDir::new("fail");
        let a = HostArray::from_f32(&[1.0], &[1]).unwrap();
        // The target is a directory: the rename fails and the temporary file is removed.
        let target = dir.0.join("sub");
        fs::create_dir(&target).unwrap();
        fs::write(target.join("keep"), b"x").unwrap();
        let e = write_npy_atomic(&target, &a).unwrap_err();
        assert_eq!(e.code(), "E0400");
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 1);
        // A missing directory is reported with the target path.
        let e = write_npy_atomic(dir.0.join("no/such/out.npy"), &a).unwrap_err();
        assert!(e.to_string().contains("out.npy"), "{e}");
    }
}
