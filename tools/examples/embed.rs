//! Calling tilec kernels from a Rust program, on your own memory (no files):
//!
//! 1. the standard library: factor a batch of SPD matrices in place (`potrf_batched`), solve
//!    with the factors (`potrs_batched`), and multiply with `gemm` at a chosen block size;
//! 2. a kernel of your own, compiled from source text.
//!
//! Every result is checked against a plain f64 computation; the program exits non-zero when
//! one is off. Run it with `cargo run --example embed -p tilec [-- vulkan]` (Vulkan needs a
//! device; lavapipe will do).

use tilec::GenericArg;
use tilec::{Args, Program, Target};

/// `batch` SPD matrices `n x n` (row-major, f64): `M M^T / n + I` for a pseudo-random `M`.
fn spd(batch: usize, n: usize) -> Vec<f64> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    let mut out = Vec::with_capacity(batch * n * n);
    for _ in 0..batch {
        let m: Vec<f64> = (0..n * n).map(|_| rnd()).collect();
        for i in 0..n {
            for j in 0..n {
                let dot: f64 = (0..n).map(|k| m[i * n + k] * m[j * n + k]).sum();
                out.push(dot / n as f64 + if i == j { 1.0 } else { 0.0 });
            }
        }
    }
    out
}

/// `max |a - b| / max(1, max |b|)`.
fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let scale = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

fn check(what: &str, err: f64, tol: f64) -> bool {
    let ok = err <= tol;
    println!("{what}: relative error {err:.2e} ({})", if ok { "ok" } else { "TOO LARGE" });
    ok
}

fn main() {
    if let Err(e) = run() {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let target = match std::env::args().nth(1).as_deref() {
        Some("vulkan") => Target::Vulkan { device: None },
        Some("cuda") => Target::Cuda { device: None },
        _ => Target::CPU,
    };
    let (batch, n, k) = (37usize, 21usize, 5usize);
    let a64 = spd(batch, n);
    let linalg = Program::linalg()?;
    let mut ok = true;

    // 1a. potrf: L L^T = A, in place (f64 arrays choose the f64 instance).
    let mut l = a64.clone();
    linalg.launch(
        "potrf_batched",
        target,
        Args::new().array_mut("A", &mut l, &[batch, n, n]).scalar("eps", 0.0),
        &[],
    )?;
    let mut recon = vec![0.0; batch * n * n];
    for b in 0..batch {
        let m = &l[b * n * n..(b + 1) * n * n];
        for i in 0..n {
            for j in 0..n {
                recon[b * n * n + i * n + j] = (0..=i.min(j)).map(|p| m[i * n + p] * m[j * n + p]).sum();
            }
        }
    }
    ok &= check("potrf_batched f64 (L L^T vs A)", rel_err(&recon, &a64), 1e-12);

    // 1b. potrs: A X = R with the factors, in f32 this time (f32 arrays, f32 instance).
    let l32: Vec<f32> = l.iter().map(|&x| x as f32).collect();
    let r: Vec<f64> = (0..batch * n * k).map(|i| ((i * 7) % 11) as f64 - 5.0).collect();
    let mut x32: Vec<f32> = r.iter().map(|&x| x as f32).collect();
    let args = Args::new().array("L", &l32, &[batch, n, n]).array_mut("X", &mut x32, &[batch, n, k]);
    linalg.launch("potrs_batched", target, args, &[])?;
    let mut ax = vec![0.0; batch * n * k];
    for b in 0..batch {
        for i in 0..n {
            for c in 0..k {
                ax[(b * n + i) * k + c] =
                    (0..n).map(|p| a64[(b * n + i) * n + p] * x32[(b * n + p) * k + c] as f64).sum();
            }
        }
    }
    ok &= check("potrs_batched f32 (A X vs R)", rel_err(&ax, &r), 1e-4);

    // 1c. gemm with a const parameter: C = 2 A B, 64-row blocks.
    let (m, kk, nn) = (77usize, 50usize, 131usize);
    let a: Vec<f32> = (0..m * kk).map(|i| ((i * 13) % 17) as f32 / 17.0 - 0.5).collect();
    let b: Vec<f32> = (0..kk * nn).map(|i| ((i * 5) % 19) as f32 / 19.0 - 0.5).collect();
    let mut c = vec![f32::NAN; m * nn];
    let args = Args::new()
        .array("A", &a, &[m, kk])
        .array("B", &b, &[kk, nn])
        .array_mut("C", &mut c, &[m, nn])
        .scalar("alpha", 2.0)
        .scalar("beta", 0.0);
    linalg.launch("gemm", target, args, &[("BM", GenericArg::Const(64))])?;
    let want: Vec<f64> = (0..m * nn)
        .map(|e| 2.0 * (0..kk).map(|p| a[e / nn * kk + p] as f64 * b[p * nn + e % nn] as f64).sum::<f64>())
        .collect();
    let got: Vec<f64> = c.iter().map(|&x| x as f64).collect();
    ok &= check("gemm f32 BM=64 (C vs 2 A B)", rel_err(&got, &want), 1e-5);

    // 2. A kernel from source: scale each row of X by its index, in place.
    let prog = Program::new(
        "scale.tile",
        "kernel scale_rows<T: float>(X: mut T[M, N], s: T) grid(M) block(16) {\n\
         \x20   let i = program_id(0);\n\
         \x20   for j in 0..N { X[i, j] = X[i, j] * s * (i as T); }\n\
         }\n",
    )?;
    let mut x = vec![1.5f64; 9 * 4];
    prog.launch("scale_rows", target, Args::new().array_mut("X", &mut x, &[9, 4]).scalar("s", 2.0), &[])?;
    let want: Vec<f64> = (0..36).map(|e| 3.0 * (e / 4) as f64).collect();
    ok &= check("scale_rows f64 (from source)", rel_err(&x, &want), 0.0);

    if !ok {
        return Err("a result is off".into());
    }
    Ok(())
}
