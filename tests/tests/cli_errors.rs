//! Input and launch errors of `tilec run` (and its argument parsing), run in-process through
//! `tilec::cli::main_with`. Each error case snapshots the exit code and stderr, with the
//! per-test temporary folder replaced by `[TMP]`; all of them exit with code 2 (usage or
//! input errors) and print nothing on stdout. Two more tests check that a failed run leaves
//! no output file behind and that a successful one writes it.

use std::path::PathBuf;

/// Two kernels for the launches: a generic one with a read-only input, and an in-place
/// Cholesky fixed to f32 (matrices of order at most 16).
const KERNELS: &str = r#"// Kernels for the CLI error tests.

/// C = s * A, on 16x16 tiles; one program per matrix.
kernel scale<T: float>(A: T[B, N, N], C: mut T[B, N, N], s: T) grid(B) block(16) {
    let b = program_id(0);
    let nb = cdiv(N, 16);
    for ib in 0..nb {
        let i0 = ib * 16;
        for jb in 0..nb {
            let j0 = jb * 16;
            C[b, i0:i0+16, j0:j0+16] = A[b, i0:i0+16, j0:j0+16] * s;
        }
    }
}

/// In-place Cholesky of matrices of order N <= 16: A[b] = L L^T, L in the lower triangle.
kernel potrf(A: mut f32[B, N, N], eps: f32) grid(B) block(16) {
    let b = program_id(0);
    let d = tile<f32, 16, 16>::eye();
    d[:] = A[b, 0:16, 0:16];
    d.cholesky_(eps);
    A[b, 0:16, 0:16] = d;
}
"#;

/// A temporary folder of one test, removed before use and when dropped.
struct Tmp {
    dir: PathBuf,
}

impl Tmp {
    fn new(test: &str) -> Tmp {
        let dir = std::env::temp_dir().join(format!("tilec-cli-errors-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        std::fs::write(dir.join("k.tile"), KERNELS).expect("write kernels");
        Tmp { dir }
    }

    /// The path of `name` in the folder, as a string for the command line.
    fn path(&self, name: &str) -> String {
        self.dir.join(name).to_str().expect("UTF-8 path").to_string()
    }

    /// Writes `bytes` to `name` in the folder; returns its path.
    fn write(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.path(name);
        std::fs::write(&p, bytes).expect("write temp file");
        p
    }

    /// The names of the files in the folder, sorted.
    fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .expect("read temp dir")
            .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Runs `tilec ARGS...` in-process without colour; returns (exit code, stdout, stderr)
    /// with this folder's path replaced by `[TMP]`.
    fn tilec(&self, args: &[&str]) -> (i32, String, String) {
        let mut argv = vec!["tilec".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut out = Vec::new();
        let mut err = Vec::new();
        let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
        let dir = self.dir.to_str().expect("UTF-8 path");
        let clean = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8 output").replace(dir, "[TMP]");
        (code, clean(out), clean(err))
    }

    /// Runs a command that must fail with an input error (exit code 2, nothing on stdout);
    /// returns the snapshot text: the exit code and stderr.
    fn fail(&self, args: &[&str]) -> String {
        let (code, out, err) = self.tilec(args);
        assert_eq!(code, 2, "expected exit code 2\nstderr:\n{err}");
        assert!(out.is_empty(), "unexpected stdout:\n{out}");
        assert!(err.starts_with("error[E0"), "stderr does not start with a coded error:\n{err}");
        assert!(err.ends_with("error: 1 error found\n"), "stderr does not end with the error count:\n{err}");
        format!("exit code: {code}\n{err}")
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A `.npy` file (format version 1.0) written by hand: magic, version, header length, the
/// header dict padded with spaces and a newline to a multiple of 64 bytes, then the data.
fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    let unpadded = 6 + 2 + 2 + header.len() + 1;
    header.push_str(&" ".repeat((64 - unpadded % 64) % 64));
    header.push('\n');
    let mut bytes = b"\x93NUMPY".to_vec();
    bytes.extend_from_slice(&[1, 0]);
    bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    assert_eq!(bytes.len() % 64, 0, "header not padded to 64 bytes");
    bytes.extend_from_slice(data);
    bytes
}

fn npy_f32(shape: &[usize], data: &[f32]) -> Vec<u8> {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    let raw: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    npy("<f4", shape, &raw)
}

fn npy_f64(shape: &[usize], data: &[f64]) -> Vec<u8> {
    assert_eq!(shape.iter().product::<usize>(), data.len());
    let raw: Vec<u8> = data.iter().flat_map(|x| x.to_le_bytes()).collect();
    npy("<f8", shape, &raw)
}

/// `b` identity matrices of order `n`, as f32 `.npy` bytes.
fn eye_f32(b: usize, n: usize) -> Vec<u8> {
    let data: Vec<f32> = (0..b * n * n).map(|i| if (i % (n * n)).is_multiple_of(n + 1) { 1.0 } else { 0.0 }).collect();
    npy_f32(&[b, n, n], &data)
}

#[test]
fn npy_dtype_i2_is_unsupported() {
    let t = Tmp::new("dtype-i2");
    let data: Vec<u8> = (0..18i16).flat_map(|x| x.to_le_bytes()).collect();
    let a = t.write("a.npy", &npy("<i2", &[2, 3, 3], &data));
    let snap =
        t.fail(&["run", &t.path("k.tile"), "--kernel", "potrf", "--arg", &format!("A={a}"), "--arg", "eps=1e-6"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn f64_array_for_generic_fixed_to_f32() {
    let t = Tmp::new("f64-for-f32");
    let a = t.write("a.npy", &npy_f64(&[2, 4, 4], &[1.0; 32]));
    let c = t.write("c.npy", &npy_f64(&[2, 4, 4], &[0.0; 32]));
    let snap = t.fail(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "scale",
        "--generic",
        "T=f32",
        "--arg",
        &format!("A={a}"),
        "--arg",
        &format!("C={c}"),
        "--arg",
        "s=2",
    ]);
    insta::assert_snapshot!(snap);
}

#[test]
fn shape_mismatch_at_launch() {
    let t = Tmp::new("shape");
    let a = t.write("a.npy", &npy_f32(&[2, 3, 4], &[0.0; 24]));
    let snap =
        t.fail(&["run", &t.path("k.tile"), "--kernel", "potrf", "--arg", &format!("A={a}"), "--arg", "eps=1e-6"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn missing_arg() {
    let t = Tmp::new("missing-arg");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap = t.fail(&["run", &t.path("k.tile"), "--kernel", "potrf", "--arg", &format!("A={a}")]);
    insta::assert_snapshot!(snap);
}

/// A missing output array: the help names `--out`, which creates it.
#[test]
fn missing_output_arg() {
    let t = Tmp::new("missing-output-arg");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap = t.fail(&["run", &t.path("k.tile"), "--kernel", "scale", "--arg", &format!("A={a}"), "--arg", "s=2"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn unknown_arg_name() {
    let t = Tmp::new("unknown-arg");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap = t.fail(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "potrf",
        "--arg",
        &format!("A={a}"),
        "--arg",
        "eps=1e-6",
        "--arg",
        "tol=1e-3",
    ]);
    insta::assert_snapshot!(snap);
}

#[test]
fn bad_scalar_value() {
    let t = Tmp::new("bad-scalar");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap = t.fail(&["run", &t.path("k.tile"), "--kernel", "potrf", "--arg", &format!("A={a}"), "--arg", "eps=abc"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn missing_input_file() {
    let t = Tmp::new("missing-file");
    let snap = t.fail(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "potrf",
        "--arg",
        &format!("A={}", t.path("nope.npy")),
        "--arg",
        "eps=1e-6",
    ]);
    insta::assert_snapshot!(snap);
}

#[test]
fn out_names_read_only_param() {
    let t = Tmp::new("out-read-only");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let c = t.write("c.npy", &eye_f32(2, 4));
    let snap = t.fail(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "scale",
        "--arg",
        &format!("A={a}"),
        "--arg",
        &format!("C={c}"),
        "--arg",
        "s=2",
        "--out",
        &format!("A={}", t.path("out.npy")),
    ]);
    assert!(!t.dir.join("out.npy").exists(), "an output was written");
    insta::assert_snapshot!(snap);
}

#[test]
fn unknown_kernel() {
    let t = Tmp::new("unknown-kernel");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap =
        t.fail(&["run", &t.path("k.tile"), "--kernel", "potrff", "--arg", &format!("A={a}"), "--arg", "eps=1e-6"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn arg_without_equals() {
    let t = Tmp::new("arg-no-eq");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let snap = t.fail(&["run", &t.path("k.tile"), "--kernel", "potrf", "--arg", &a, "--arg", "eps=1e-6"]);
    insta::assert_snapshot!(snap);
}

#[test]
fn failed_run_leaves_no_output_file() {
    let t = Tmp::new("failed-no-output");
    let a = t.write("a.npy", &eye_f32(2, 4));
    let out = t.path("l.npy");
    let (code, stdout, err) = t.tilec(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "potrf",
        "--arg",
        &format!("A={a}"),
        "--arg",
        "eps=abc",
        "--out",
        &format!("A={out}"),
    ]);
    assert_eq!(code, 2, "stderr:\n{err}");
    assert!(stdout.is_empty(), "unexpected stdout:\n{stdout}");
    assert!(err.contains("E0414"), "stderr:\n{err}");
    assert!(!PathBuf::from(&out).exists(), "a failed run wrote its output");
    // No temporary file is left behind either.
    assert_eq!(t.files(), ["a.npy", "k.tile"]);
}

#[test]
fn successful_run_writes_output_file() {
    let t = Tmp::new("success-output");
    let (b, n) = (3usize, 12usize);
    let a = t.path("a.npy");
    let (code, stdout, err) = t.tilec(&["gen-spd", "--batch", &b.to_string(), "--n", &n.to_string(), "-o", &a]);
    assert_eq!(code, 0, "gen-spd failed:\n{err}");
    assert!(err.is_empty(), "unexpected stderr:\n{err}");
    assert_eq!(stdout, format!("wrote {b} SPD matrices of {n}x{n} f32 to [TMP]/a.npy\n"));

    let out = t.path("l.npy");
    let (code, stdout, err) = t.tilec(&[
        "run",
        &t.path("k.tile"),
        "--kernel",
        "potrf",
        "--arg",
        &format!("A={a}"),
        "--arg",
        "eps=1e-6",
        "--out",
        &format!("A={out}"),
    ]);
    assert_eq!(code, 0, "run failed:\n{err}");
    assert!(err.is_empty(), "unexpected stderr:\n{err}");
    assert!(stdout.starts_with("potrf") && stdout.contains("grid [3, 1, 1], 1 run"), "unexpected stdout:\n{stdout}");
    assert_eq!(t.files(), ["a.npy", "k.tile", "l.npy"]);

    // The output is the Cholesky factor of the input (lower triangle).
    let input = tilec_runtime::read_npy(&a).expect("read input");
    let output = tilec_runtime::read_npy(&out).expect("read output");
    assert_eq!(output.shape(), &[b as u64, n as u64, n as u64]);
    assert_eq!(output.elem(), input.elem());
    let reference: Vec<f64> = input.to_f64_vec().chunks(n * n).flat_map(|m| tilec_tests::cholesky_f64(m, n)).collect();
    let err = tilec_tests::max_rel_err_lower(&output.to_f64_vec(), &reference, n);
    assert!(err < 1e-5, "relative error {err:e}");
}

/// `build` of a file with several kernel instances and `-o` that is not a directory: an error
/// (nothing is written next to the source instead).
#[test]
fn build_several_instances_to_a_file() {
    let t = Tmp::new("several-instances");
    let snap = t.fail(&["build", &t.path("k.tile"), "--target", "spirv", "-o", &t.path("out.spv")]);
    let written: Vec<String> = std::fs::read_dir(&t.dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "k.tile")
        .collect();
    assert!(written.is_empty(), "files written: {written:?}");
    insta::assert_snapshot!(snap);
}

/// Atomics on an `f16` array compile for the CPU and CUDA, not for Vulkan (no 16-bit
/// atomics): E0504 at the atomic, naming the targets that have them.
#[test]
fn half_atomics_on_vulkan() {
    let t = Tmp::new("half-atomics");
    let src = "kernel hist(X: f32[N], H: mut f16[16]) grid(N) {\n    \
               let x = X[program_id(0)];\n    \
               atomic_add(H[0:16], tile<f32, 16>::full(x));\n}\n";
    let k = t.write("hist.tile", src.as_bytes());
    let (code, _, err) = t.tilec(&["build", &k, "--target", "cpu", "-o", &t.path("hist.o")]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = t.tilec(&["build", &k, "--target", "spirv", "-o", &t.path("hist.spv")]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(t.files(), ["hist.o", "hist.tile", "k.tile"], "nothing written for Vulkan");
    insta::assert_snapshot!(format!("exit code: {code}\n{err}"));
}
