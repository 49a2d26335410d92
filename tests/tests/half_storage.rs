//! Arrays of the storage types `f16` and `bf16` on every target: loads widen to `f32` exactly
//! and stores round `f32` to nearest with ties to even, as `tilec_midend::half` (the `half`
//! crate) defines them; kernels computing on such arrays match an f64 reference.
//!
//! Targets: both CPU code generators (LLVM in a `--features llvm` build), the SIMT form at 4
//! to 64 lanes by its reference interpreter, Vulkan (lavapipe in CI; skipped without a device
//! unless `TILEC_REQUIRE_VULKAN=1`) and PTX through ptxas (a run where a CUDA device exists).
//! Conversions must be identical bit for bit, NaN payloads aside.

use std::collections::HashMap;
use tilec::{compile, CompileOptions, CpuRunner, SourceSet};
use tilec_frontend::Instances;
use tilec_midend::half::{narrow, widen};
use tilec_midend::simt::lower_kernel;
use tilec_midend::{Module, Scalar};
use tilec_runtime::{ArgValue, HostArray};

const TYPES: [Scalar; 2] = [Scalar::F16, Scalar::BF16];

/// `Y` rounds the f32 values of `X`, `Z` widens the bits of `B` (tiles of 16: the last one
/// partial), and `D` is computed from the 2-D `A` through tiles with partial rows and columns
/// and single elements.
fn source(s: Scalar) -> String {
    let s = s.name();
    format!(
        "kernel conv(X: f32[N], Y: mut {s}[N], B: {s}[M], Z: mut f32[M]) grid(cdiv(max(N, M), 16)) {{
    let i = program_id(0) * 16;
    Y[i:i+16] = X[i:i+16];
    Z[i:i+16] = B[i:i+16];
}}

kernel rows(A: {s}[R, C], D: mut {s}[R, C], k: f32) grid(cdiv(R, 4)) {{
    let r = program_id(0) * 4;
    let a = A[r:r+4, 0:8];
    D[r:r+4, 0:8] = a * k + sum(a, 1)[0];
    let x = A[r, 1];
    D[r, 1] = x * x - 1.0;
    let cols = tile<i32, 4, 8>::iota(1);
    masked_store(D[r:r+4, 0:8], a, cols == 2);
}}
"
    )
}

/// f32 inputs that exercise every rounding case of both storage types.
fn edges() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.5,
        0.1,
        -3.0517,
        1.0 + 2f32.powi(-11),       // f16 tie: to even (1.0)
        1.0 + 3.0 * 2f32.powi(-11), // f16 tie: to even (up)
        65504.0,                    // largest f16
        65519.0,                    // rounds to 65504
        65520.0,                    // rounds to infinity
        2f32.powi(-24),             // smallest f16 subnormal
        3.0 * 2f32.powi(-25),       // tie between f16 subnormals
        2f32.powi(-26),             // rounds to zero
        6.1e-5,                     // near the smallest normal f16
        1e-8,
        1e20,
        -1e20,
        f32::from_bits(0x3f80_8000), // bf16 tie: to even (down)
        f32::from_bits(0x3f81_8000), // bf16 tie: to even (up)
        f32::from_bits(0x3f80_8001), // bf16: just above the tie
        f32::MAX,
        f32::from_bits(1), // smallest f32 subnormal
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
    ];
    // A spread of ordinary values.
    v.extend((0..40).map(|i| ((i * 7919) % 1000) as f32 * 0.0137 - 6.0));
    v
}

/// Every 16-bit pattern with step `step` (1: all 65536), and the extremes.
fn patterns(step: usize) -> Vec<u16> {
    let mut v: Vec<u16> = (0..=u16::MAX).step_by(step).collect();
    v.extend([0x7c00, 0xfc00, 0x7c01, 0x7e00, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8001, 0x03ff, 0xffff]);
    v
}

fn bits16(elem: Scalar, bits: &[u16], shape: &[u64]) -> HostArray {
    let mut a = HostArray::zeros(elem, shape).expect("array");
    for (k, b) in bits.iter().enumerate() {
        a.bytes_mut()[2 * k..2 * k + 2].copy_from_slice(&b.to_le_bytes());
    }
    a
}

fn read16(a: &HostArray) -> Vec<u16> {
    a.bytes().chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect()
}

/// The storage value with these bits, for comparisons (NaN for every NaN).
fn value(s: Scalar, b: u16) -> f64 {
    widen(s, b)
}

fn same16(s: Scalar, got: u16, want: u16) -> bool {
    let (g, w) = (value(s, got), value(s, want));
    (g.is_nan() && w.is_nan()) || got == want
}

struct Case {
    s: Scalar,
    src: SourceSet,
    conv: HashMap<String, ArgValue>,
    rows: HashMap<String, ArgValue>,
    xs: Vec<f32>,
    bs: Vec<u16>,
    a: Vec<u16>,
    k: f32,
}

/// `R x C` = 9 x 5: partial tiles in both dimensions.
const R: usize = 9;
const C: usize = 5;

fn case(s: Scalar, step: usize) -> Case {
    let xs = edges();
    let bs = patterns(step);
    let mut conv = HashMap::new();
    conv.insert("X".to_string(), ArgValue::Array(HostArray::from_f32(&xs, &[xs.len() as u64]).unwrap()));
    conv.insert("Y".to_string(), ArgValue::Array(bits16(s, &vec![0x5555; xs.len()], &[xs.len() as u64])));
    conv.insert("B".to_string(), ArgValue::Array(bits16(s, &bs, &[bs.len() as u64])));
    conv.insert(
        "Z".to_string(),
        ArgValue::Array(HostArray::from_f32(&vec![7.0; bs.len()], &[bs.len() as u64]).unwrap()),
    );
    let a: Vec<u16> = (0..R * C).map(|i| narrow(s, (i as f32 * 0.37 - 5.0).sin() * 3.0)).collect();
    let k = 1.75f32;
    let mut rows = HashMap::new();
    rows.insert("A".to_string(), ArgValue::Array(bits16(s, &a, &[R as u64, C as u64])));
    rows.insert("D".to_string(), ArgValue::Array(bits16(s, &[0; R * C], &[R as u64, C as u64])));
    rows.insert("k".to_string(), ArgValue::Scalar(tilec_midend::Const::Float(k as f64, Scalar::F32)));
    Case { s, src: SourceSet::with_stdlib("half.tile", source(s)), conv, rows, xs, bs, a, k }
}

/// The reference for `D` of kernel `rows`: computed in f64 from the widened `A`, then rounded
/// to f32 and the storage type (each f32 step rounds at most half an f32 ulp, far below the
/// storage type's: the result is compared within one storage ulp).
fn rows_reference(c: &Case) -> Vec<f64> {
    let s = c.s;
    let a = |r: usize, j: usize| value(s, c.a[r * C + j]);
    let mut d = vec![0.0; R * C];
    for r in 0..R {
        let first = r - r % 4;
        let row0: f64 = (0..C).map(|j| a(first, j)).sum();
        for j in 0..C {
            d[r * C + j] = if j == 2 { a(r, j) } else { a(r, j) * c.k as f64 + row0 };
        }
        if r % 4 == 0 {
            d[r * C + 1] = a(r, 1) * a(r, 1) - 1.0;
        }
    }
    d
}

/// Checks the outputs of both kernels, read through `get`.
fn check(target: &str, c: &Case, get: &dyn Fn(&str) -> HostArray) {
    let s = c.s;
    let y = read16(&get("Y"));
    for (i, x) in c.xs.iter().enumerate() {
        let want = narrow(s, *x);
        assert!(
            same16(s, y[i], want),
            "{target}: {} of {x:e} ({:#x}): {:#06x}, want {want:#06x}",
            s.name(),
            x.to_bits(),
            y[i]
        );
    }
    let z = get("Z").to_f64_vec();
    for (i, b) in c.bs.iter().enumerate() {
        let want = value(s, *b);
        assert!(
            (z[i].is_nan() && want.is_nan()) || z[i] == want,
            "{target}: {} bits {b:#06x}: {}, want {want}",
            s.name(),
            z[i]
        );
    }
    let d = get("D");
    let got: Vec<f64> = read16(&d).iter().map(|b| value(s, *b)).collect();
    let ulp = if s == Scalar::F16 { 2f64.powi(-10) } else { 2f64.powi(-7) };
    for (i, want) in rows_reference(c).iter().enumerate() {
        let tol = ulp * want.abs().max(1e-3) * 1.01;
        assert!(
            (got[i] - want).abs() <= tol,
            "{target}: {} D[{}, {}] = {}, want {want}",
            s.name(),
            i / C,
            i % C,
            got[i]
        );
    }
}

/// Copies the outputs `Y`, `Z` and `D` that `b` holds into `out`.
fn keep_outputs(b: &tilec_runtime::Bound, out: &mut HashMap<String, HostArray>) {
    for n in ["Y", "Z", "D"] {
        if let Some(a) = b.array(n) {
            out.insert(n.to_string(), a.clone());
        }
    }
}

fn module(c: &Case, kernel: &str) -> Module {
    let inst = Instances::One { kernel: kernel.into(), generics: HashMap::new() };
    compile(&c.src, &inst, &CompileOptions { verify: true, ..Default::default() }).expect("compiles").module
}

/// Merges the outputs of the two kernels' runs.
fn outputs(conv: HashMap<String, HostArray>, rows: HashMap<String, HostArray>) -> HashMap<String, HostArray> {
    let mut m = conv;
    m.extend(rows);
    m
}

#[test]
fn cpu_targets_convert_and_compute_storage_types() {
    let backends = tilec_tests::cpu_backends();
    for s in TYPES {
        let c = case(s, 1);
        for &be in &backends {
            let mut out = HashMap::new();
            for (kernel, args) in [("conv", &c.conv), ("rows", &c.rows)] {
                let runner = CpuRunner::with_backend(&c.src, kernel, args, &HashMap::new(), be)
                    .unwrap_or_else(|d| panic!("does not compile: {d:?}"));
                let (b, _) = runner.run(args.clone()).expect("runs");
                keep_outputs(&b, &mut out);
            }
            check(&format!("CPU ({be:?})"), &c, &|n| out[n].clone());
        }
    }
}

#[test]
fn simt_form_converts_and_computes_storage_types() {
    for s in TYPES {
        let c = case(s, 97);
        let (mc, mr) = (module(&c, "conv"), module(&c, "rows"));
        let conv_grid = [c.xs.len().max(c.bs.len()).div_ceil(16) as i64, 1, 1];
        for lanes in [4, 8, 16, 32, 64] {
            let run = |m: &Module, args, grid| {
                tilec_tests::run_simt(m, &m.kernels[0], args, lanes, grid)
                    .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", s.name()))
            };
            let out = outputs(run(&mc, &c.conv, conv_grid), run(&mr, &c.rows, [R.div_ceil(4) as i64, 1, 1]));
            check(&format!("SIMT form at {lanes} lanes"), &c, &|n| out[n].clone());
        }
    }
}

#[test]
fn vulkan_converts_and_computes_storage_types() {
    let Some(dev) = tilec_tests::vulkan_device() else {
        return;
    };
    if !dev.supports_storage16() {
        eprintln!("skipped: {} has no storageBuffer16BitAccess", dev.name());
        return;
    }
    for s in TYPES {
        let c = case(s, 1);
        let mut out = HashMap::new();
        for (kernel, args) in [("conv", &c.conv), ("rows", &c.rows)] {
            let vulkan = tilec::Target::Vulkan { device: None };
            let b = tilec_tests::run_on(vulkan, &c.src, kernel, args.clone(), &HashMap::new())
                .unwrap_or_else(|e| panic!("{e}"));
            keep_outputs(&b, &mut out);
        }
        check(&format!("Vulkan on {}", dev.name()), &c, &|n| out[n].clone());
    }
}

#[test]
fn ptx_of_storage_types_assembles_and_runs_where_a_gpu_exists() {
    if !tilec_codegen_ptx::AVAILABLE {
        eprintln!("skipped: built without the ptx feature");
        return;
    }
    let dev = tilec_runtime::CudaDevice::open(None).ok();
    for s in TYPES {
        let c = case(s, 1);
        let mut out = HashMap::new();
        for (kernel, args) in [("conv", &c.conv), ("rows", &c.rows)] {
            let m = module(&c, kernel);
            let k = &m.kernels[0];
            let simt = lower_kernel(&m, k, 32).expect("lowers");
            let p = tilec_codegen_ptx::compile(&simt, "sm_80").expect("PTX");
            assert!(p.text.contains("cvt.f32.f16") == (s == Scalar::F16), "f16 loads use cvt");
            let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs it)");
            tilec::ptxas(&ptxas, &p.text, "sm_80").unwrap_or_else(|e| panic!("ptxas: {e}"));
            if dev.is_some() {
                let cuda = tilec::Target::Cuda { device: None };
                let b = tilec_tests::run_on(cuda, &c.src, kernel, args.clone(), &HashMap::new())
                    .unwrap_or_else(|e| panic!("{e}"));
                keep_outputs(&b, &mut out);
            }
        }
        if let Some(dev) = &dev {
            check(&format!("CUDA on {}", dev.name()), &c, &|n| out[n].clone());
        }
    }
}
