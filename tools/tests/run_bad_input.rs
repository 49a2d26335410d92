//! `tilec run` on bad input, through the real binary: crafted `.npy` files (truncated, wrong
//! magic, malformed header, unsupported dtypes, shapes larger than memory), zero-sized extents,
//! in-place outputs, missing or read-only output directories and a run killed midway. Each error
//! must be a coded E04xx diagnostic naming the file, exit status 2, no output file (nor any
//! temporary one), and the input file byte for byte as it was.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `scale` writes another array; `twice` updates its input in place.
const KERNELS: &str = r#"
kernel scale<T: float>(A: T[B, N, N], C: mut T[B, N, N], s: T) grid(B) block(16) {
    let b = program_id(0);
    for ib in 0..cdiv(N, 16) {
        let i0 = ib * 16;
        for jb in 0..cdiv(N, 16) {
            let j0 = jb * 16;
            C[b, i0:i0+16, j0:j0+16] = A[b, i0:i0+16, j0:j0+16] * s;
        }
    }
}

kernel twice<T: float>(A: mut T[B, N, N]) grid(B) block(16) {
    let b = program_id(0);
    for ib in 0..cdiv(N, 16) {
        let i0 = ib * 16;
        for jb in 0..cdiv(N, 16) {
            let j0 = jb * 16;
            A[b, i0:i0+16, j0:j0+16] = A[b, i0:i0+16, j0:j0+16] * 2.0;
        }
    }
}
"#;

/// A fresh folder holding `k.tile`, removed when dropped.
struct Tmp(PathBuf);

impl Tmp {
    fn new(test: &str) -> Tmp {
        let dir = std::env::temp_dir().join(format!("tilec-bad-input-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k.tile"), KERNELS).unwrap();
        Tmp(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        std::fs::write(self.path(name), bytes).unwrap();
        self.path(name)
    }

    /// `tilec run k.tile --kernel scale --arg <a> --arg s=2 --out C=<c>`.
    fn scale(&self, a: &str, c: &str) -> (i32, String, String) {
        tilec(&[
            "run",
            &self.path("k.tile"),
            "--kernel",
            "scale",
            "--arg",
            a,
            "--arg",
            "s=2",
            "--out",
            &format!("C={c}"),
        ])
    }

    /// The names in the folder, sorted (hidden temporary files included).
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the `tilec` binary; returns (exit status, stdout, stderr).
fn tilec(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tilec")).args(args).output().expect("run tilec");
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code().unwrap_or(-1), text(out.stdout), text(out.stderr))
}

/// A `.npy` v1.0 file: magic, version, header `dict` padded to 64 bytes, then `data`.
fn npy_raw(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    header.push_str(&" ".repeat((64 - (10 + header.len() + 1) % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(data);
    bytes
}

/// An f32 C-order array of `shape` holding 0, 1, 2, ...
fn npy_f32(shape: &[usize]) -> Vec<u8> {
    let n: usize = shape.iter().product();
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
    npy_raw(&format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({},), }}", dims.join(", ")), &data)
}

/// Asserts a failed run: exit status 2, nothing on stdout, the error `code` first on stderr,
/// naming `names`.
fn assert_fails(run: &(i32, String, String), code: &str, names: &[&str]) {
    let (status, out, err) = run;
    assert_eq!(*status, 2, "exit status; stderr:\n{err}");
    assert!(out.is_empty(), "stdout: {out}");
    assert!(err.starts_with(&format!("error[{code}]")), "expected {code}:\n{err}");
    for n in names {
        assert!(err.contains(n), "the error does not name `{n}`:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

/// Bad input files, each run twice: into a separate output, and in place (`--out` naming the
/// input itself). Neither run may write anything or change the input.
#[test]
fn bad_npy_inputs_give_coded_errors_and_write_nothing() {
    let t = Tmp::new("bad-npy");
    let good = npy_f32(&[2, 4, 4]);
    let dict = |descr: &str, order: &str, shape: &str| {
        format!("{{'descr': '{descr}', 'fortran_order': {order}, 'shape': {shape}, }}")
    };
    let mut malformed = good.clone();
    malformed[10] = b'[';
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated_data", good[..good.len() - 5].to_vec(), "E0404"),
        ("truncated_header", good[..40].to_vec(), "E0401"),
        ("cut_in_magic", good[..4].to_vec(), "E0401"),
        ("empty", Vec::new(), "E0401"),
        ("wrong_magic", [b"\x93NUMPZ", &good[6..]].concat(), "E0401"),
        ("malformed_dict", malformed, "E0401"),
        ("missing_key", npy_raw("{'descr': '<f4', 'shape': (2, 4, 4), }", &good[64..]), "E0401"),
        ("big_endian", npy_raw(&dict(">f4", "False", "(2, 4, 4)"), &good[64..]), "E0402"),
        ("object", npy_raw(&dict("|O", "False", "(2, 4, 4)"), &good[64..]), "E0402"),
        ("bool", npy_raw(&dict("|b1", "False", "(2, 8, 8)"), &good[64..]), "E0402"),
        ("uint16", npy_raw(&dict("<u2", "False", "(2, 4, 8)"), &good[64..]), "E0402"),
        ("big_endian_float16", npy_raw(&dict(">f2", "False", "(2, 4, 8)"), &good[64..]), "E0402"),
        (
            "structured",
            npy_raw("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 4, 4), }", &good[64..]),
            "E0402",
        ),
        ("fortran", npy_raw(&dict("<f4", "True", "(2, 4, 4)"), &good[64..]), "E0403"),
        // 2^62 bytes announced by a tiny file, and a byte count past 64 bits: no allocation.
        ("huge", npy_raw(&dict("<f4", "False", "(1099511627776, 1048576, 1)"), &good[64..]), "E0404"),
        ("overflow", npy_raw(&dict("<f4", "False", "(1099511627776, 1048576, 1048576)"), &good[64..]), "E0429"),
    ];
    for (name, bytes, code) in &cases {
        let file = format!("{name}.npy");
        let input = t.write(&file, bytes);
        let arg = format!("A={input}");
        let run = t.scale(&arg, &t.path("out.npy"));
        assert_fails(&run, code, &[&file]);
        let run = tilec(&["run", &t.path("k.tile"), "--kernel", "twice", "--arg", &arg, "--out", &arg]);
        assert_fails(&run, code, &[&file]);
        assert_eq!(&std::fs::read(&input).unwrap(), bytes, "{name}: the input changed");
        assert!(!t.files().iter().any(|f| f.starts_with("out") || f.starts_with('.')), "{name}: {:?}", t.files());
    }
    // An int64 file is read (an `i64` array), but `T` of this kernel is a float type.
    let input = t.write("int64.npy", &npy_raw(&dict("<i8", "False", "(2, 2, 4)"), &good[64..]));
    let run = t.scale(&format!("A={input}"), &t.path("out.npy"));
    assert_fails(&run, "E0216", &["`A`", "i64"]);
}

/// Arrays with a zero extent are a correct no-op: exit 0, and the output is written with its
/// empty shape (a zero batch launches no program; programs over empty matrices touch nothing).
#[test]
fn zero_sized_extents_run_as_a_no_op() {
    let t = Tmp::new("zero");
    for (name, shape) in [("batch0", [0usize, 4, 4]), ("n0", [3, 0, 0])] {
        let input = t.write(&format!("{name}.npy"), &npy_f32(&shape));
        let out = t.path(&format!("{name}_out.npy"));
        let (status, stdout, err) = t.scale(&format!("A={input}"), &out);
        assert_eq!(status, 0, "{name}: {err}");
        assert!(stdout.contains(&format!("grid [{}, 1, 1]", shape[0])), "{stdout}");
        let written = std::fs::read(&out).expect("the output is written");
        let header = String::from_utf8_lossy(&written);
        let dims = format!("'shape': ({}, {}, {}", shape[0], shape[1], shape[2]);
        assert!(header.contains(&dims) && header.contains("'<f4'"), "{name}: {header}");
        assert_eq!(written.len() % 64, 0, "{name}: no data after the header");
    }
}

#[test]
fn out_may_name_the_input_for_an_in_place_update() {
    let t = Tmp::new("in-place");
    let input = t.write("a.npy", &npy_f32(&[2, 20, 20]));
    let arg = format!("A={input}");
    let (status, _, err) = tilec(&["run", &t.path("k.tile"), "--kernel", "twice", "--arg", &arg, "--out", &arg]);
    assert_eq!(status, 0, "{err}");
    let bytes = std::fs::read(&input).unwrap();
    let data = &bytes[bytes.len() - 800 * 4..];
    let values: Vec<f32> = data.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    let want: Vec<f32> = (0..800).map(|i| 2.0 * i as f32).collect();
    assert!(values == want, "the file does not hold twice the input");
    assert!(String::from_utf8_lossy(&bytes).contains("'shape': (2, 20, 20"));
    assert_eq!(t.files(), ["a.npy", "k.tile"]);
}

/// An output into a missing directory (or one that is a file) fails before anything runs, names
/// the directory, and no other output is written either.
#[test]
fn missing_output_directory_is_named_and_nothing_is_written() {
    let t = Tmp::new("missing-dir");
    let input = t.write("a.npy", &npy_f32(&[2, 4, 4]));
    let before = std::fs::read(&input).unwrap();
    for dir in ["nodir", "a.npy"] {
        let bad = t.path(&format!("{dir}/c.npy"));
        let run = tilec(&[
            "run",
            &t.path("k.tile"),
            "--kernel",
            "twice",
            "--arg",
            &format!("A={input}"),
            "--out",
            &format!("A={}", t.path("first.npy")),
            "--out",
            &format!("A={bad}"),
        ]);
        assert_fails(&run, "E0400", &[&format!("{dir}`")]);
        assert_eq!(t.files(), ["a.npy", "k.tile"]);
        assert_eq!(std::fs::read(&input).unwrap(), before);
    }
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().map(|o| o.stdout.starts_with(b"0\n")).unwrap_or(false)
}

#[cfg(unix)]
#[test]
fn read_only_output_directory_is_named() {
    use std::os::unix::fs::PermissionsExt;
    if is_root() {
        eprintln!("skipped: running as root, where a read-only directory is still writable");
        return;
    }
    let t = Tmp::new("read-only");
    let input = t.write("a.npy", &npy_f32(&[2, 4, 4]));
    let ro = t.0.join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let run = t.scale(&format!("A={input}"), &ro.join("c.npy").display().to_string());
    let listing = std::fs::read_dir(&ro).unwrap().count();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_fails(&run, "E0400", &["ro`", "ermission denied"]);
    assert_eq!(listing, 0);
}

/// A run killed while its kernel runs leaves no output file and the input as it was.
#[test]
fn killed_run_leaves_no_output() {
    let t = Tmp::new("killed");
    let input = t.write("a.npy", &npy_f32(&[64, 64, 64]));
    let before = std::fs::read(&input).unwrap();
    let arg = format!("A={input}");
    let out = t.path("out.npy");
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["run", &t.path("k.tile"), "--kernel", "twice", "--arg", &arg, "--out", &format!("A={out}")])
        .args(["--out", &arg, "--repeat", "1000000"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "the run ended before it could be killed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60));
    assert!(!Path::new(&out).exists(), "a killed run wrote its output");
    assert_eq!(std::fs::read(&input).unwrap(), before, "a killed run changed its in-place input");
    assert_eq!(t.files(), ["a.npy", "k.tile"]);
}
