//! Run tests: kernels of the stdlib and the examples on the CPU target, against the plain f64
//! Cholesky of `tilec_tests` (not the compiler's own path).

use std::collections::HashMap;
use tilec::SourceSet;
use tilec_midend::{Const, Scalar};
use tilec_runtime::{random_spd, ArgValue, HostArray};
use tilec_tests::{cholesky_f64, cli_ok, max_rel_err, max_rel_err_lower};

fn stdlib() -> SourceSet {
    SourceSet::with_stdlib("stdlib/linalg.tile", include_str!("../../stdlib/linalg.tile"))
}

fn example(name: &str) -> SourceSet {
    let path = format!("{}/../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    SourceSet::with_stdlib(format!("examples/{name}"), std::fs::read_to_string(path).expect("example"))
}

/// Factors a batch with `potrf_batched` and returns (factor, reference factor).
fn potrf(batch: usize, n: usize, elem: Scalar, seed: u64) -> (Vec<f64>, Vec<f64>) {
    let a = random_spd(batch, n, seed);
    let shape = [batch as u64, n as u64, n as u64];
    let host = HostArray::from_f64_as(elem, &a, &shape).unwrap();
    // The reference factors exactly the values the kernel sees (rounded to f32 if f32).
    let seen = host.to_f64_vec();
    let mut args = HashMap::new();
    args.insert("A".to_string(), ArgValue::Array(host));
    let eps = match elem {
        // Scalars of the storage types are f32.
        Scalar::F32 | Scalar::F16 | Scalar::BF16 => Const::Float(1e-6_f32 as f64, Scalar::F32),
        _ => Const::Float(1e-12, Scalar::F64),
    };
    args.insert("eps".to_string(), ArgValue::Scalar(eps));
    let runner = tilec_tests::cpu_runner(&stdlib(), "potrf_batched", &args, &HashMap::new()).expect("compiles");
    let (bound, launch) = runner.run(args).expect("runs");
    assert_eq!(launch.grid, [batch as i64, 1, 1]);
    let out = bound.array("A").unwrap().to_f64_vec();
    let reference: Vec<f64> = seen.chunks(n * n).flat_map(|m| cholesky_f64(m, n)).collect();
    (out, reference)
}

const SIZES: &[usize] = &[1, 5, 15, 16, 17, 31, 32, 33, 92];

#[test]
fn potrf_f32_matches_f64_reference_for_all_sizes() {
    for &n in SIZES {
        for batch in [1, 7] {
            let (out, reference) = potrf(batch, n, Scalar::F32, n as u64 * 31 + batch as u64);
            let err = max_rel_err_lower(&out, &reference, n);
            assert!(err <= 1e-4, "f32 n={n} batch={batch}: relative error {err:e}");
        }
    }
}

/// `f16` and `bf16` arrays: the factorization computes in f32 and rounds what it stores (also
/// between blocks), so the error is a few of the storage type's units.
#[test]
fn potrf_of_storage_types_matches_f64_reference() {
    for (elem, tol) in [(Scalar::F16, 1e-2), (Scalar::BF16, 6e-2)] {
        for &n in &[1, 17, 33, 92] {
            let (out, reference) = potrf(3, n, elem, n as u64 + 5);
            let err = max_rel_err_lower(&out, &reference, n);
            assert!(err <= tol, "{} n={n}: relative error {err:e}", elem.name());
        }
    }
}

/// `tilec run` reads and writes `<f2` and `<V2` (bf16) files and instantiates `potrf_batched`
/// for them.
#[test]
fn cli_runs_potrf_on_f16_and_bf16_files() {
    cli_potrf("f16", 9, 45, 1, "eps=1e-6", 1e-2);
    cli_potrf("bf16", 9, 45, 1, "eps=1e-6", 6e-2);
}

#[test]
fn potrf_f64_matches_f64_reference_for_all_sizes() {
    for &n in SIZES {
        for batch in [1, 7] {
            let (out, reference) = potrf(batch, n, Scalar::F64, n as u64 * 17 + batch as u64);
            let err = max_rel_err_lower(&out, &reference, n);
            assert!(err <= 1e-10, "f64 n={n} batch={batch}: relative error {err:e}");
        }
    }
}

#[test]
fn potrf_leaves_blocks_above_the_diagonal_untouched() {
    let n = 33;
    let a = random_spd(2, n, 5);
    let (out, _) = potrf(2, n, Scalar::F64, 5);
    // Row 0, column 20 lies in block (0, 1), above the diagonal blocks.
    assert_eq!(out[20], a[20]);
    // Inside a diagonal block the upper triangle is zeroed.
    assert_eq!(out[1], 0.0);
}

#[test]
fn example_cholesky_matches_reference_and_zeroes_the_upper_triangle() {
    for (n, elem, tol) in [(40usize, Scalar::F32, 1e-4), (17, Scalar::F64, 1e-10)] {
        let batch = 5;
        let a = random_spd(batch, n, 99);
        let shape = [batch as u64, n as u64, n as u64];
        let host = HostArray::from_f64_as(elem, &a, &shape).unwrap();
        let seen = host.to_f64_vec();
        let mut args = HashMap::new();
        args.insert("A".to_string(), ArgValue::Array(host));
        args.insert("L".to_string(), ArgValue::Array(HostArray::zeros(elem, &shape).unwrap()));
        args.insert("eps".to_string(), ArgValue::Scalar(Const::Float(1e-12, elem)));
        let runner =
            tilec_tests::cpu_runner(&example("cholesky.tile"), "cholesky", &args, &HashMap::new()).expect("compiles");
        let (bound, _) = runner.run(args).expect("runs");
        let out = bound.array("L").unwrap().to_f64_vec();
        let reference: Vec<f64> = seen.chunks(n * n).flat_map(|m| cholesky_f64(m, n)).collect();
        let err = max_rel_err(&out, &reference, n);
        assert!(err <= tol, "{elem:?} n={n}: {err:e}");
    }
}

/// The main job of the README, through the command line: 4096 SPD matrices of 92x92, in f32
/// (within 1e-4 of the f64 reference) and in f64 (within 1e-10).
#[test]
fn cli_potrf_4096x92x92_f32_within_1e4_of_reference() {
    cli_potrf_4096("f32", 1e-4);
}

#[test]
fn cli_potrf_4096x92x92_f64_within_1e10_of_reference() {
    cli_potrf_4096("f64", 1e-10);
}

fn cli_potrf_4096(dtype: &str, tol: f64) {
    cli_potrf(dtype, 4096, 92, 7, if dtype == "f32" { "eps=1e-6" } else { "eps=1e-12" }, tol);
}

/// `gen-spd` writes `batch` SPD `n x n` matrices of `dtype` (seed `seed`), `tilec run` factors
/// them with `potrf_batched` and writes the result; it must be of the same dtype and shape and
/// within `tol` of the f64 Cholesky of the input.
fn cli_potrf(dtype: &str, batch: usize, n: usize, seed: u64, eps: &str, tol: f64) {
    let dir = std::env::temp_dir().join(format!("tilec-run-{dtype}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (input, output) = (dir.join("spd.npy"), dir.join("l.npy"));
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (b, nn, s) = (batch.to_string(), n.to_string(), seed.to_string());
    let inp = input.to_str().unwrap();
    cli_ok(&["gen-spd", "--batch", &b, "--n", &nn, "--dtype", dtype, "--seed", &s, "-o", inp]);
    let printed = cli_ok(&[
        "run",
        &format!("{root}/stdlib/linalg.tile"),
        "--kernel",
        "potrf_batched",
        "--arg",
        &format!("A={inp}"),
        "--arg",
        eps,
        "--out",
        &format!("A={}", output.display()),
    ]);
    assert!(printed.contains(&format!("potrf_batched__{dtype}: grid [{batch}, 1, 1]")), "{printed}");
    let a = tilec_runtime::read_npy(&input).unwrap();
    let l = tilec_runtime::read_npy(&output).unwrap();
    let shape = [batch as u64, n as u64, n as u64];
    assert_eq!((a.elem().name(), l.elem().name(), l.shape()), (dtype, dtype, &shape[..]));
    let reference: Vec<f64> = a.to_f64_vec().chunks(n * n).flat_map(|m| cholesky_f64(m, n)).collect();
    let err = max_rel_err_lower(&l.to_f64_vec(), &reference, n);
    assert!(err <= tol, "{dtype}: relative error {err:e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec run --out` sizes output arrays from extent expressions: the unknown of `Z * H` once
/// `H` is known, a scalar parameter `n`, `cdiv`, and a const parameter taken from an input's
/// extent; an extent the inputs do not determine is E0502, a negative one E0441.
#[test]
fn cli_sizes_outputs_from_extent_expressions() {
    let dir = std::env::temp_dir().join(format!("tilec-run-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = "
        kernel k<const C: i32>(X: f64[Z * H, N], P: f64[H], n: i32, W: f64[C],
                S: mut f64[Z, N], F: mut f64[n], M: mut f64[cdiv(Z * H, 4) + 1], O: mut f64[C, 2])
                grid(Z) block(16) {
            let z = program_id(0);
            for j in 0..N {
                S[z, j] = X[z * H, j] + P[0];
            }
            if z == 0 {
                for i in 0..n { F[i] = i as f64; }
                M[0] = W[C - 1];
                O[0:C, 0:2] = outer(W[0:C], tile<f64, 2>::full(1.0));
            }
        }
    ";
    let prog = dir.join("k.tile");
    std::fs::write(&prog, src).unwrap();
    let save = |name: &str, data: &[f64], shape: &[u64]| {
        let p = dir.join(name);
        tilec_runtime::write_npy_atomic(&p, &HostArray::from_f64(data, shape).unwrap()).unwrap();
        p.display().to_string()
    };
    let x = save("x.npy", &(0..30).map(f64::from).collect::<Vec<_>>(), &[10, 3]);
    let x11 = save("x11.npy", &[0.0; 33], &[11, 3]);
    let p = save("p.npy", &[0.5, 0.25], &[2]);
    let w = save("w.npy", &[1.0, 2.0, 3.0], &[3]);
    let run = |x: &str, n: &str| {
        let mut argv: Vec<String> = vec!["tilec".into(), "run".into(), prog.display().to_string()];
        argv.extend(["--kernel", "k"].map(String::from));
        for a in [format!("X={x}"), format!("P={p}"), format!("n={n}"), format!("W={w}")] {
            argv.extend(["--arg".to_string(), a]);
        }
        for o in ["S", "F", "M", "O"] {
            argv.extend(["--out".to_string(), format!("{o}={}", dir.join(format!("{o}.npy")).display())]);
        }
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
        (code, String::from_utf8_lossy(&out).into_owned() + &String::from_utf8_lossy(&err))
    };
    let (code, printed) = run(&x, "4");
    assert_eq!(code, 0, "{printed}");
    assert!(printed.contains("k__3: grid [5, 1, 1]"), "{printed}");
    let read = |o: &str| tilec_runtime::read_npy(dir.join(format!("{o}.npy"))).unwrap();
    assert_eq!(read("S").shape(), &[5, 3]);
    assert_eq!(read("S").to_f64_vec(), (0..15).map(|e| (e / 3 * 6 + e % 3) as f64 + 0.5).collect::<Vec<_>>());
    assert_eq!(read("F").to_f64_vec(), [0.0, 1.0, 2.0, 3.0]);
    assert_eq!(read("M").shape(), &[4]);
    assert_eq!(read("M").to_f64_vec()[0], 3.0);
    assert_eq!(read("O").to_f64_vec(), [1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    // 11 rows are not Z * 2 for any Z; a negative n.
    let (code, printed) = run(&x11, "4");
    assert!(code == 2 && printed.contains("error[E0502]: `--out S`: the extent `Z` is not bound"), "{printed}");
    let (code, printed) = run(&x, "-1");
    assert!(
        code == 2 && printed.contains("error[E0441]: the extent `n` of `F` cannot be computed: it is negative (-1)"),
        "{printed}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec run` leaves an optional array out when neither `--arg` nor `--out` names it
/// (`tests/tests/cases/optional.tile`): `Y` without the bias and without `Extra`, then with
/// both, against a plain reference; a required array left out is still E0407.
#[test]
fn cli_omits_optional_arrays() {
    let dir = std::env::temp_dir().join(format!("tilec-run-optional-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = format!("{}/tests/cases/optional.tile", env!("CARGO_MANIFEST_DIR"));
    let path = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let x: Vec<f64> = (0..10 * 13).map(|k| ((k * 7) % 11) as f64 / 4.0 - 1.0).collect();
    let bias: Vec<f64> = (0..13).map(|k| k as f64 / 8.0).collect();
    let save = |name: &str, data: &[f64], shape: &[u64]| {
        let a = tilec_runtime::HostArray::from_f64_as(Scalar::F64, data, shape).unwrap();
        tilec_runtime::write_npy_atomic(path(name), &a).unwrap();
    };
    save("x.npy", &x, &[10, 13]);
    save("bias.npy", &bias, &[13]);
    save("extra.npy", &[1.0, 2.0, 3.0], &[3]);
    let base = ["run", &src, "--kernel", "optional"];
    let (xa, ya, fa) =
        (format!("X={}", path("x.npy")), format!("Y={}", path("y.npy")), format!("Flags={}", path("f.npy")));
    cli_ok(&[&base[..], &["--arg", &xa, "--out", &ya, "--out", &fa]].concat());
    let y = tilec_runtime::read_npy(std::path::Path::new(&path("y.npy"))).unwrap().to_f64_vec();
    assert_eq!(y, x.iter().map(|v| 2.0 * v).collect::<Vec<_>>(), "omitted: Y = 2 X");
    let (ba, ea) = (format!("Bias={}", path("bias.npy")), format!("Extra={}", path("extra.npy")));
    cli_ok(&[&base[..], &["--arg", &xa, "--arg", &ba, "--arg", &ea, "--out", &ya, "--out", &fa]].concat());
    let y = tilec_runtime::read_npy(std::path::Path::new(&path("y.npy"))).unwrap().to_f64_vec();
    let want: Vec<f64> = (0..130).map(|k| 2.0 * x[k] + bias[k % 13] + [1.0, 2.0, 3.0, 0.0][k / 13 % 4] + 3.0).collect();
    assert_eq!(y, want, "given: Y = 2 X + bias + Extra[row % 4] + L");
    let given: [&str; 4] = ["--arg", &ya, "--arg", &fa];
    let argv: Vec<String> = [&base[..], &given[..]].concat().iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with([vec!["tilec".to_string()], argv].concat(), &mut out, &mut err, false);
    let err = String::from_utf8_lossy(&err);
    assert!(code != 0 && err.contains("E0407") && err.contains("X: f64[M, N]"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec run --print NAME` (the README's demo): small outputs whole, in the element type's
/// shortest form; large ones as shape, first and last three, minimum and maximum. The demo's
/// residual of a potrf_batched factor is that of the f64 reference, and tiny.
#[test]
fn print_shows_outputs_after_the_run() {
    let dir = std::env::temp_dir().join(format!("tilec-print-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = |n: &str| dir.join(n).display().to_string();
    let (batch, n) = (5usize, 23usize);
    let a = random_spd(batch, n, 41);
    let shape = [batch as u64, n as u64, n as u64];
    let host = HostArray::from_f64_as(Scalar::F32, &a, &shape).unwrap();
    tilec_runtime::write_npy_atomic(std::path::Path::new(&p("a.npy")), &host).unwrap();
    let lib = format!("{}/../stdlib/linalg.tile", env!("CARGO_MANIFEST_DIR"));
    let ex = format!("{}/../examples/cholesky.tile", env!("CARGO_MANIFEST_DIR"));
    let (aa, la) = (format!("A={}", p("a.npy")), format!("L={}", p("l.npy")));
    let out = cli_ok(&[
        "run",
        &lib,
        "--kernel",
        "potrf_batched",
        "--arg",
        &aa,
        "--arg",
        "eps=1e-6",
        "--out",
        &format!("A={}", p("l.npy")),
        "--print",
        "A",
    ]);
    let line = out.lines().find(|l| l.starts_with("A = ")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("A = f32[5, 23, 23] [") && line.contains(", .., ") && line.contains(" min "), "{line}");
    let out = cli_ok(&[
        "run",
        &ex,
        "--kernel",
        "residual",
        "--arg",
        &aa,
        "--arg",
        &la,
        "--out",
        &format!("R={}", p("r.npy")),
        "--print",
        "R",
    ]);
    let line = out.lines().find(|l| l.starts_with("R = [")).unwrap_or_else(|| panic!("{out}"));
    let r: f32 =
        line.trim_start_matches("R = [").trim_end_matches(']').parse().unwrap_or_else(|e| panic!("{line}: {e}"));
    let saved = tilec_runtime::read_npy(std::path::Path::new(&p("r.npy"))).unwrap().to_f64_vec();
    assert_eq!(r as f64, saved[0], "printed as saved");
    assert!(r > 0.0 && r < 1e-5, "residual {r}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The README's "Your first kernel": its kernel and commands, run as written, print the
/// result line the README shows.
#[test]
fn the_readme_first_kernel_runs_as_shown() {
    let readme = std::fs::read_to_string(format!("{}/../README.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let section = &readme[readme.find("## Your first kernel").expect("the section")..];
    let block = |fence: &str| {
        let start = section.find(fence).unwrap_or_else(|| panic!("no {fence} block")) + fence.len();
        section[start..start + section[start..].find("```").unwrap()].trim().to_string()
    };
    let (kernel, commands, shown) = (block("```tile\n"), block("```sh\n"), block("```text\n"));
    let dir = std::env::temp_dir().join(format!("tilec-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("axpy.tile"), &kernel).unwrap();
    let mut last = String::new();
    for cmd in commands.lines().flat_map(|l| l.split("&&")).map(str::trim).filter(|c| c.starts_with("tilec ")) {
        let argv: Vec<String> = cmd
            .split_whitespace()
            .skip(1)
            .map(|w| match w.split_once('=') {
                Some((k, f)) if f.ends_with(".npy") => format!("{k}={}", dir.join(f).display()),
                _ if w.ends_with(".npy") || w.ends_with(".tile") => dir.join(w).display().to_string(),
                _ => w.to_string(),
            })
            .collect();
        let args: Vec<&str> = argv.iter().map(String::as_str).collect();
        last = cli_ok(&args);
    }
    let want = shown.lines().find(|l| l.starts_with("Y = ")).expect("the README shows the Y line");
    assert!(last.lines().any(|l| l == want), "the README shows\n{want}\nthe run printed\n{last}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec run --repeat N` times N runs of an in-place kernel and writes what one run gives:
/// its `mut` array is restored before every run (`Bound::restore_mut_arrays`), on both CPU
/// backends.
#[test]
fn repeated_runs_start_from_the_inputs() {
    let dir = std::env::temp_dir().join(format!("tilec-run-repeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = |n: &str| dir.join(n).to_str().unwrap().to_string();
    std::fs::write(
        path("k.tile"),
        "kernel twice_plus(A: mut f32[N], B: f32[N]) grid(cdiv(N, 16)) {
            let i0 = program_id(0) * 16;
            A[i0:i0+16] = A[i0:i0+16] * 2.0 + B[i0:i0+16];
        }",
    )
    .unwrap();
    let (a, b): (Vec<f64>, Vec<f64>) = (0..37).map(|k| (k as f64 - 9.5, (k % 5) as f64 / 4.0)).unzip();
    for (name, data) in [("a.npy", &a), ("b.npy", &b)] {
        let arr = HostArray::from_f64_as(Scalar::F32, data, &[data.len() as u64]).unwrap();
        tilec_runtime::write_npy_atomic(path(name), &arr).unwrap();
    }
    let backends: &[&str] = if cfg!(feature = "llvm") { &["cranelift", "llvm"] } else { &["cranelift"] };
    for backend in backends {
        let (aa, ba, out) =
            (format!("A={}", path("a.npy")), format!("B={}", path("b.npy")), format!("A={}", path("o.npy")));
        let k = path("k.tile");
        let argv = ["run", &k, "--kernel", "twice_plus", "--arg", &aa, "--arg", &ba, "--out", &out, "--repeat", "5"];
        cli_ok(&[&argv[..], &["--backend", backend]].concat());
        let got = tilec_runtime::read_npy(std::path::Path::new(&path("o.npy"))).unwrap().to_f64_vec();
        let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| 2.0 * x + y).collect();
        assert_eq!(got, want, "{backend}: one run's A = 2 A + B");
    }
    std::fs::remove_dir_all(&dir).ok();
}
