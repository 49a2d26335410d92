//! Reading and writing `.npy` files (dtypes `<f4`, `<f8`, `<i4`, `<u4`, `<i8`, `<f2`, bf16, C order) as [`HostArray`]s.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
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
        "<u4" => Some(Scalar::U32),
        "<i8" => Some(Scalar::I64),
        "<f2" => Some(Scalar::F16),
        // NumPy has no bfloat16: `ml_dtypes.bfloat16` arrays are saved as 2-byte voids.
        "<V2" | "|V2" => Some(Scalar::BF16),
        _ => None,
    }
}

/// The `.npy` dtype string of an element type.
fn dtype_of_elem(elem: Scalar) -> Result<&'static str, RunError> {
    match elem {
        Scalar::F32 => Ok("<f4"),
        Scalar::F64 => Ok("<f8"),
        Scalar::I32 => Ok("<i4"),
        Scalar::U32 => Ok("<u4"),
        Scalar::I64 => Ok("<i8"),
        Scalar::F16 => Ok("<f2"),
        Scalar::BF16 => Ok("<V2"),
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

/// The largest header accepted (NumPy's own headers are a few hundred bytes; version 2 and 3
/// files announce the length in 32 bits, which must not become a 4 GiB allocation).
const MAX_HEADER: usize = 1 << 20;

/// How deeply literals may nest in a header (structured dtypes nest a few levels).
const MAX_LITERAL_DEPTH: usize = 32;

/// A Python literal of a `.npy` header (the subset NumPy writes).
#[derive(Debug, Clone, PartialEq)]
enum Lit {
    Str(String),
    Bool(bool),
    /// An integer, as written (`i128` holds every u64 and its negation).
    Int(i128),
    /// A tuple or a list.
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
    None,
}

impl std::fmt::Display for Lit {
    /// Python's notation (`[('a', '<f4')]`), for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |items: &mut dyn Iterator<Item = String>| items.collect::<Vec<_>>().join(", ");
        match self {
            Lit::Str(s) => write!(f, "'{s}'"),
            Lit::Bool(b) => f.write_str(if *b { "True" } else { "False" }),
            Lit::Int(n) => write!(f, "{n}"),
            Lit::Seq(items) => write!(f, "[{}]", join(&mut items.iter().map(Lit::to_string))),
            Lit::Dict(pairs) => write!(f, "{{{}}}", join(&mut pairs.iter().map(|(k, v)| format!("{k}: {v}")))),
            Lit::None => f.write_str("None"),
        }
    }
}

/// A recursive-descent reader of the header's Python dict literal.
struct LitParser<'s> {
    text: &'s [u8],
    pos: usize,
}

impl LitParser<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.text.len() && self.text[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.text.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(x) => Err(format!("expected `{}` at byte {}, found `{}`", c as char, self.pos, x as char)),
            None => Err(format!("expected `{}`, found the end of the header", c as char)),
        }
    }

    /// Items up to `close`, separated by commas (a trailing comma allowed); `item` reads one.
    fn items<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, String>,
    ) -> Result<(Vec<T>, bool), String> {
        let mut out = Vec::new();
        let mut trailing_comma = false;
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok((out, trailing_comma));
            }
            out.push(item(self)?);
            trailing_comma = false;
            match self.peek() {
                Some(b',') => {
                    self.pos += 1;
                    trailing_comma = true;
                }
                Some(c) if c == close => {}
                _ => return Err(format!("expected `,` or `{}` at byte {}", close as char, self.pos)),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit, String> {
        if depth > MAX_LITERAL_DEPTH {
            return Err(format!("literals nested more than {MAX_LITERAL_DEPTH} deep"));
        }
        match self.peek() {
            None => Err("unexpected end of the header".into()),
            Some(q @ (b'\'' | b'"')) => {
                self.pos += 1;
                let mut out = Vec::new();
                loop {
                    match self.text.get(self.pos) {
                        None => return Err("unterminated string".into()),
                        Some(&c) if c == q => break,
                        Some(b'\\') => {
                            self.pos += 1;
                            out.extend(self.text.get(self.pos));
                        }
                        Some(&c) => out.push(c),
                    }
                    self.pos += 1;
                }
                self.pos += 1;
                Ok(Lit::Str(String::from_utf8_lossy(&out).into_owned()))
            }
            Some(b'{') => {
                self.pos += 1;
                let (pairs, _) = self.items(b'}', |p| {
                    let k = p.value(depth + 1)?;
                    p.expect(b':')?;
                    Ok((k, p.value(depth + 1)?))
                })?;
                Ok(Lit::Dict(pairs))
            }
            Some(open @ (b'(' | b'[')) => {
                self.pos += 1;
                let close = if open == b'(' { b')' } else { b']' };
                let (items, trailing_comma) = self.items(close, |p| p.value(depth + 1))?;
                // `(x)` is x in Python; `(x,)` is a tuple.
                if open == b'(' && items.len() == 1 && !trailing_comma {
                    return Ok(items.into_iter().next().expect("one item"));
                }
                Ok(Lit::Seq(items))
            }
            Some(c) if c == b'-' || c.is_ascii_digit() => {
                let start = self.pos;
                self.pos += 1;
                while self.text.get(self.pos).is_some_and(u8::is_ascii_digit) {
                    self.pos += 1;
                }
                let digits = std::str::from_utf8(&self.text[start..self.pos]).expect("ASCII");
                // Python 2's NumPy wrote long integers with an `L`.
                if self.text.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                digits.parse().map(Lit::Int).map_err(|_| format!("integer `{digits}` out of range"))
            }
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.text.get(self.pos).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    self.pos += 1;
                }
                match &self.text[start..self.pos] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    w => Err(format!("unexpected name `{}`", String::from_utf8_lossy(w))),
                }
            }
            Some(c) => Err(format!("unexpected character `{}` at byte {}", c.escape_ascii(), self.pos)),
        }
    }
}

/// What a `.npy` header says.
#[derive(Debug)]
struct Header {
    /// The dtype as text: the string, or the literal in Python's notation (structured dtypes).
    descr: String,
    fortran_order: bool,
    shape: Vec<u64>,
    /// Where the data starts in the file.
    data_offset: u64,
}

/// Parses the header dict `text`: exactly the keys `descr`, `fortran_order` and `shape`.
fn parse_header_dict(text: &[u8]) -> Result<(String, bool, Vec<u64>), String> {
    let mut p = LitParser { text, pos: 0 };
    let Lit::Dict(pairs) = p.value(0)? else {
        return Err("the header is not a Python dict".into());
    };
    if p.peek().is_some() {
        return Err(format!("unexpected text after the header dict at byte {}", p.pos));
    }
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    for (k, v) in pairs {
        let Lit::Str(k) = k else { return Err("a header key is not a string".into()) };
        let slot = match k.as_str() {
            "descr" => &mut descr,
            "fortran_order" => &mut fortran,
            "shape" => &mut shape,
            _ => return Err(format!("unexpected key '{k}'")),
        };
        if slot.replace(v).is_some() {
            return Err(format!("key '{k}' appears twice"));
        }
    }
    let descr = match descr.ok_or("the key 'descr' is missing")? {
        Lit::Str(s) => s,
        other => other.to_string(),
    };
    let Lit::Bool(fortran) = fortran.ok_or("the key 'fortran_order' is missing")? else {
        return Err("'fortran_order' is not True or False".into());
    };
    let Lit::Seq(dims) = shape.ok_or("the key 'shape' is missing")? else {
        return Err("'shape' is not a tuple".into());
    };
    let shape = dims
        .iter()
        .map(|d| match d {
            Lit::Int(n) => u64::try_from(*n).map_err(|_| format!("shape extent {n} is negative or too large")),
            _ => Err("'shape' holds something other than integers".into()),
        })
        .collect::<Result<Vec<u64>, String>>()?;
    Ok((descr, fortran, shape))
}

/// Reads the magic, the version, the header length and the header of a `.npy` file.
fn read_header(r: &mut impl Read) -> Result<Header, String> {
    let truncated = || "the header is truncated".to_string();
    let mut pre = [0u8; 8];
    let got = read_full(r, &mut pre).map_err(|e| e.to_string())?;
    if got < MAGIC.len() || &pre[..6] != MAGIC {
        return Err("it does not start with the \\x93NUMPY magic".into());
    }
    if got < pre.len() {
        return Err(truncated());
    }
    let (major, minor) = (pre[6], pre[7]);
    let len_bytes = match major {
        1 => 2,
        2 | 3 => 4,
        _ => return Err(format!("format version {major}.{minor} is not 1.0, 2.0 or 3.0")),
    };
    let mut len = [0u8; 4];
    if read_full(r, &mut len[..len_bytes]).map_err(|e| e.to_string())? < len_bytes {
        return Err(truncated());
    }
    let header_len = u32::from_le_bytes(len) as usize;
    if header_len > MAX_HEADER {
        return Err(format!("its header length {header_len} is over the limit of {MAX_HEADER} bytes"));
    }
    let mut text = vec![0u8; header_len];
    if read_full(r, &mut text).map_err(|e| e.to_string())? < header_len {
        return Err(truncated());
    }
    let (descr, fortran_order, shape) = parse_header_dict(&text).map_err(|e| format!("bad header: {e}"))?;
    let data_offset = (8 + len_bytes + header_len) as u64;
    Ok(Header { descr, fortran_order, shape, data_offset })
}

/// Reads a `.npy` file (format versions 1.0 to 3.0).
///
/// Errors, each naming the file: it cannot be opened or read (E0400); it does not start with
/// the `.npy` magic, or its header is truncated or malformed (E0401); its dtype is not `<f4`,
/// `<f8` or `<i4` (E0402); it is in Fortran order (E0403); it has fewer data bytes than its
/// header's shape needs (E0404); that byte count overflows 64 bits or cannot be allocated
/// (E0429). The sizes are checked against the file's length before any memory is allocated,
/// so a header claiming terabytes is an error, not an allocation failure. Bytes after the data
/// are ignored; the file is only read.
pub fn read_npy(path: impl AsRef<Path>) -> Result<HostArray, RunError> {
    let path = path.as_ref();
    let not_npy = |detail: String| RunError::NotNpy { path: path.to_path_buf(), detail };
    let file = File::open(path).map_err(|e| RunError::io(path, "open", &e))?;
    let meta = file.metadata().map_err(|e| RunError::io(path, "read", &e))?;
    let mut reader = BufReader::new(file);
    let header = read_header(&mut reader).map_err(not_npy)?;
    let Some(elem) = elem_of_dtype(&header.descr) else {
        return Err(RunError::UnsupportedDtype { path: path.to_path_buf(), dtype: header.descr });
    };
    if header.fortran_order && header.shape.len() > 1 {
        return Err(RunError::FortranOrder { path: path.to_path_buf() });
    }
    let esize = u64::from(elem.bytes());
    let too_large =
        || RunError::NpyTooLarge { path: path.to_path_buf(), shape: header.shape.clone(), elem_bytes: esize };
    let expected = header.shape.iter().try_fold(esize, |acc, &d| acc.checked_mul(d)).ok_or_else(too_large)?;
    // A regular file's length bounds the data: compare before allocating anything.
    if meta.is_file() {
        let available = meta.len().saturating_sub(header.data_offset);
        if available < expected {
            return Err(RunError::Truncated { path: path.to_path_buf(), expected, actual: available });
        }
    }
    let mut array = HostArray::zeros(elem, &header.shape).map_err(|_| too_large())?;
    let got = read_full(&mut reader, array.bytes_mut()).map_err(|e| RunError::io(path, "read", &e))?;
    if (got as u64) < expected {
        return Err(RunError::Truncated { path: path.to_path_buf(), expected, actual: got as u64 });
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

/// The directory `path` is in (`.` for a bare file name).
fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Checks, before a long run, that `path` can be written as an output: its directory exists
/// and accepts new files (a temporary file is created there and removed), and `path` is not
/// a directory.
///
/// Errors (E0400): the directory is missing, not a directory or not writable (the message
/// names the directory); `path` is a directory.
pub fn check_output_path(path: impl AsRef<Path>) -> Result<(), RunError> {
    let path = path.as_ref();
    let dir = dir_of(path);
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(RunError::Io { path: dir.into(), action: "write into", message: "not a directory".into() })
        }
        Err(e) => return Err(RunError::io(dir, "write into directory", &e)),
    }
    if path.is_dir() {
        return Err(RunError::Io { path: path.into(), action: "write", message: "it is a directory".into() });
    }
    let probe = temp_path(path);
    File::options()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| RunError::io(dir, "write into directory", &e))?;
    let _ = fs::remove_file(&probe);
    Ok(())
}

/// Writes `array` to `path` as a `.npy` file (C order, little-endian), atomically: the data
/// goes to a temporary file in the same directory that is then renamed over `path`, so a
/// failure never leaves a partial file at `path`.
///
/// Errors: the element type has no supported dtype (E0406); the file cannot be created,
/// written or renamed (E0400, naming `path`).
pub fn write_npy_atomic(path: impl AsRef<Path>, array: &HostArray) -> Result<(), RunError> {
    write_npys_atomic(&[(path.as_ref(), array)])
}

/// Writes several `.npy` files as one: every array goes to a temporary file next to its
/// target first, and only when all of them are written and synced are they renamed over their
/// targets. A failure while writing removes every temporary file and leaves all targets as
/// they were. (Renames within a directory that accepted the temporary files fail only if
/// something changes it meanwhile, e.g. a target replaced by a directory; then the targets
/// renamed so far keep their new contents.) Targets should be distinct: a later one wins.
///
/// Errors as [`write_npy_atomic`], naming the target whose write failed.
pub fn write_npys_atomic(outputs: &[(&Path, &HostArray)]) -> Result<(), RunError> {
    for (_, array) in outputs {
        dtype_of_elem(array.elem())?;
    }
    let mut temps: Vec<PathBuf> = Vec::new();
    let remove_all = |temps: &[PathBuf]| {
        for t in temps {
            let _ = fs::remove_file(t);
        }
    };
    for (path, array) in outputs {
        let tmp = temp_path(path);
        let file = match File::options().write(true).create_new(true).open(&tmp) {
            Ok(f) => f,
            Err(e) => {
                remove_all(&temps);
                return Err(RunError::io(*path, "create", &e));
            }
        };
        temps.push(tmp);
        if let Err(e) = write_to(file, array) {
            remove_all(&temps);
            return Err(RunError::io(*path, "write", &e));
        }
    }
    for (i, ((path, _), tmp)) in outputs.iter().zip(&temps).enumerate() {
        if let Err(e) = fs::rename(tmp, path) {
            remove_all(&temps[i..]);
            return Err(RunError::io(*path, "rename a temporary file to", &e));
        }
    }
    Ok(())
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
            HostArray::from_f64_as(Scalar::F16, &[1.0, -0.5, 65504.0, 1e-7], &[4]).unwrap(),
            HostArray::from_f64_as(Scalar::BF16, &[1.0, -0.5, 3e38, 1e-30, 0.1, 2.0], &[3, 2]).unwrap(),
            HostArray::from_f64_as(Scalar::U32, &[0.0, 1.0, 4294967295.0], &[3]).unwrap(),
            HostArray::from_f64_as(Scalar::I64, &[-9.0e15, 0.0, 3.0e12, 1.0], &[2, 2]).unwrap(),
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
    fn u32_and_i64_files_read_as_numpy_writes_them() {
        let dir = TempDir::new("ints");
        let p = dir.0.join("u.npy");
        fs::write(
            &p,
            raw_npy("{'descr': '<u4', 'fortran_order': False, 'shape': (2,), }", &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
        )
        .unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!((a.elem(), a.to_f64_vec()), (Scalar::U32, vec![1.0, 4294967295.0]));
        let mut d = (-5i64).to_le_bytes().to_vec();
        d.extend(4_000_000_000i64.to_le_bytes());
        fs::write(&p, raw_npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", &d)).unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!((a.elem(), a.to_f64_vec()), (Scalar::I64, vec![-5.0, 4e9]));
    }

    #[test]
    fn storage_types_use_numpy_and_ml_dtypes_descrs() {
        let dir = TempDir::new("half");
        let p = dir.0.join("h.npy");
        // NumPy's float16 and ml_dtypes' bfloat16 (a 2-byte void to NumPy).
        fs::write(&p, raw_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", &[0, 0x3c, 0, 0xc0]))
            .unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!((a.elem(), a.to_f64_vec()), (Scalar::F16, vec![1.0, -2.0]));
        fs::write(&p, raw_npy("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }", &[0x80, 0x3f, 0x49, 0x40]))
            .unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!((a.elem(), a.to_f64_vec()), (Scalar::BF16, vec![1.0, 3.140625]));
        write_npy_atomic(&p, &a).unwrap();
        assert!(fs::read(&p).unwrap().windows(11).any(|w| w == b"'descr': '<"), "a plain descr");
        assert_eq!(read_npy(&p).unwrap(), a);
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
            msg.contains("i2.npy")
                && msg.contains("`<i2`")
                && msg.contains("<f4 (f32), <f8 (f64), <i4 (i32), <u4 (u32), <i8 (i64), <f2 (f16)"),
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

    /// The E0401 detail of reading `bytes` as a `.npy` file.
    fn header_error(dir: &TempDir, bytes: &[u8]) -> String {
        let p = dir.0.join("h.npy");
        fs::write(&p, bytes).unwrap();
        match read_npy(&p).unwrap_err() {
            RunError::NotNpy { detail, .. } => detail,
            e => panic!("expected E0401, got {e:?}"),
        }
    }

    #[test]
    fn malformed_headers_are_e0401() {
        let dir = TempDir::new("malformed");
        let cases = [
            ("{'descr': '<f4', 'fortran_order': False}", "the key 'shape' is missing"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'"),
            ("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "appears twice"),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "not True or False"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", "negative"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}", "too large"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 'a')}", "other than integers"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': 2}", "not a tuple"),
            ("['descr', '<f4']", "not a Python dict"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x", "unexpected text"),
            ("{'descr': '<f4", "unterminated string"),
            ("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}", "unexpected name `Maybe`"),
        ];
        for (dict, want) in cases {
            let detail = header_error(&dir, &raw_npy(dict, &[0; 8]));
            assert!(detail.contains(want), "{dict}: {detail}");
        }
        // Deep nesting is refused, not a stack overflow.
        let deep =
            format!("{{'descr': {}1{}, 'fortran_order': False, 'shape': (2,)}}", "[".repeat(5000), "]".repeat(5000));
        assert!(header_error(&dir, &raw_npy(&deep, &[])).contains("nested more than 32 deep"));
        // A version 2.0 header announcing 4 GiB is refused before it is read.
        let mut v2 = MAGIC.to_vec();
        v2.extend([2u8, 0]);
        v2.extend(u32::MAX.to_le_bytes());
        assert!(header_error(&dir, &v2).contains("over the limit"));
        let mut v9 = MAGIC.to_vec();
        v9.extend([9u8, 0, 0, 0]);
        assert!(header_error(&dir, &v9).contains("format version 9.0"));
        // Cut inside the magic, the version and the length.
        for cut in [3, 7, 9] {
            let detail =
                header_error(&dir, &raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", &[])[..cut]);
            assert!(detail.contains(if cut < 6 { "magic" } else { "truncated" }), "{cut}: {detail}");
        }
    }

    #[test]
    fn other_header_forms_are_read() {
        let dir = TempDir::new("forms");
        let data: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        // Python 2 long integers, a scalar's empty shape, a 1-D Fortran-order array, a
        // version 3.0 header, double quotes.
        let p = dir.0.join("x.npy");
        fs::write(&p, raw_npy("{'descr': '<f8', 'fortran_order': True, 'shape': (2L,), }", &data)).unwrap();
        assert_eq!(read_npy(&p).unwrap().as_f64(), Some(&[1.5, -2.0][..]));
        fs::write(&p, raw_npy("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": ()}", &data)).unwrap();
        let a = read_npy(&p).unwrap();
        assert_eq!((a.shape(), a.as_f64()), (&[][..], Some(&[1.5][..])));
        let mut v3 = raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2), }", &data);
        let len = u16::from_le_bytes([v3[8], v3[9]]);
        v3.splice(6..10, [3u8, 0, len as u8, (len >> 8) as u8, 0, 0]);
        fs::write(&p, v3).unwrap();
        assert_eq!(read_npy(&p).unwrap().shape(), &[1, 2]);
    }

    #[test]
    fn shapes_larger_than_memory_fail_before_allocating() {
        let dir = TempDir::new("huge");
        let p = dir.0.join("x.npy");
        // 2^62 bytes claimed by a 64-byte header and 16 bytes of data: compared with the file.
        fs::write(
            &p,
            raw_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1048576), }", &[0; 16]),
        )
        .unwrap();
        let e = read_npy(&p).unwrap_err();
        assert_eq!(e.code(), "E0404");
        assert!(e.to_string().contains("announces 4611686018427387904 bytes of data, the file has 16"), "{e}");
        // A byte count beyond 64 bits.
        fs::write(&p, raw_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", &[]))
            .unwrap();
        let e = read_npy(&p).unwrap_err();
        assert_eq!(e.code(), "E0429");
        assert!(e.to_string().contains("[4294967296, 4294967296]"), "{e}");
    }

    #[test]
    fn several_outputs_are_written_all_or_none() {
        let dir = TempDir::new("all-or-none");
        let a = HostArray::from_f32(&[1.0], &[1]).unwrap();
        let b = HostArray::from_i32(&[7, 8], &[2]).unwrap();
        let (pa, pb) = (dir.0.join("a.npy"), dir.0.join("b.npy"));
        fs::write(&pa, b"old").unwrap();
        // The second target cannot be created: the first keeps its old contents.
        let missing = dir.0.join("no/b.npy");
        let e = write_npys_atomic(&[(&pa, &a), (&missing, &b)]).unwrap_err();
        assert!(e.to_string().contains("no/b.npy"), "{e}");
        assert_eq!(fs::read(&pa).unwrap(), b"old");
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 1, "a temporary file was left");
        write_npys_atomic(&[(&pa, &a), (&pb, &b)]).unwrap();
        assert_eq!(read_npy(&pa).unwrap(), a);
        assert_eq!(read_npy(&pb).unwrap(), b);
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 2);
    }

    #[test]
    fn output_paths_are_checked_before_running() {
        let dir = TempDir::new("check-out");
        check_output_path(dir.0.join("x.npy")).unwrap();
        assert_eq!(fs::read_dir(&dir.0).unwrap().count(), 0, "the probe file was left");
        let e = check_output_path(dir.0.join("missing/x.npy")).unwrap_err();
        assert_eq!(e.code(), "E0400");
        assert!(e.to_string().contains("write into directory") && e.to_string().contains("missing`"), "{e}");
        let e = check_output_path(&dir.0).unwrap_err();
        assert!(e.to_string().contains("it is a directory"), "{e}");
        fs::write(dir.0.join("file"), b"").unwrap();
        let e = check_output_path(dir.0.join("file/x.npy")).unwrap_err();
        assert!(e.to_string().contains("file`"), "{e}");
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
