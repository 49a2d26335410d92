//! The scalar semantics on every target, checked against their one definition
//! (`tilec_midend::scalar`): every arithmetic operation, comparison, `min`/`max` and cast of
//! each scalar type on a table of edge values (zeros of both signs, infinities, NaN, the
//! integer limits, values beyond the integer ranges), as scalars and as tile operations.
//!
//! Targets: both CPU code generators (LLVM in a `--features llvm` build), the SIMT form at 4
//! to 64 lanes by its reference interpreter, Vulkan (lavapipe in CI; skipped without a device
//! unless `TILEC_REQUIRE_VULKAN=1`) and CUDA (only where a driver and GPU exist, unless
//! `TILEC_REQUIRE_CUDA=1`). Results
//! must be identical bit for bit, NaN payloads aside, except where the language leaves the
//! rounding to the device: `/`, `%` and `sqrt` on Vulkan (the Vulkan spec allows 2.5 ulp for
//! `/` and 3 ulp for `sqrt`), whose results must be within 3 ulp.

use std::collections::HashMap;
use tilec::{compile, CompileOptions, CpuRunner, SourceSet};
use tilec_frontend::Instances;
use tilec_midend::scalar;
use tilec_midend::simt::lower_kernel;
use tilec_midend::{BinOp, CmpOp, Const, Module, Scalar, UnOp};
use tilec_runtime::{ArgValue, Bound, HostArray};

/// Edge values for the float tables (f32 inputs are these rounded to f32).
const FLOAT_EDGES: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    1.5,
    -2.5,
    7.5,
    3.0,
    0.1,
    1e20,
    -1e20,
    3e9,
    -3e9,
    5e9,
    2147483520.0,
    -2147483904.0,
    9.3e18,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
];

fn int_edges(s: Scalar) -> Vec<i64> {
    let mut v = vec![0, 1, 2, 3, 7, 46341, 65536, 100000];
    match s {
        Scalar::I32 => v.extend([-1, -2, -7, -100000, i32::MAX as i64, i32::MIN as i64, i32::MIN as i64 + 1]),
        Scalar::U32 => v.extend([u32::MAX as i64, u32::MAX as i64 - 1, 1 << 31, (1 << 31) - 1, 3_000_000_000]),
        _ => v.extend([
            -1,
            -7,
            i64::MAX,
            i64::MIN,
            (1 << 53) + 1,
            1 << 53,
            1 << 32,
            -(1 << 32),
            (1 << 31) + 3,
            (1 << 62) + 1,
        ]),
    }
    v
}

/// One operation of the table: its source text (in `x` and `y`), the result type, and the
/// reference.
struct Row {
    text: String,
    ty: Scalar,
    reference: Box<dyn Fn(Const, Const) -> Const>,
    /// Whether Vulkan may round it differently (within 3 ulp).
    device_rounded: bool,
}

fn row(text: &str, ty: Scalar, f: impl Fn(Const, Const) -> Const + 'static) -> Row {
    Row { text: text.to_string(), ty, reference: Box::new(f), device_rounded: false }
}

/// The operations checked on operands of type `s`.
fn rows(s: Scalar) -> Vec<Row> {
    let bin = move |op: BinOp| move |x, y| scalar::bin(op, x, y, s).unwrap();
    let mut rows = vec![
        row("x + y", s, bin(BinOp::Add)),
        row("x - y", s, bin(BinOp::Sub)),
        row("x * y", s, bin(BinOp::Mul)),
        Row { device_rounded: s.is_float(), ..row("x / y", s, bin(BinOp::Div)) },
        Row { device_rounded: s.is_float(), ..row("x % y", s, bin(BinOp::Rem)) },
        row("min(x, y)", s, bin(BinOp::Min)),
        row("max(x, y)", s, bin(BinOp::Max)),
        row("abs(x)", s, move |x, _| scalar::un(UnOp::Abs, x, s).unwrap()),
    ];
    if s != Scalar::U32 {
        rows.push(row("-x", s, move |x, _| scalar::un(UnOp::Neg, x, s).unwrap()));
    }
    if s.is_float() {
        rows.push(Row { device_rounded: true, ..row("sqrt(x)", s, move |x, _| scalar::un(UnOp::Sqrt, x, s).unwrap()) });
    }
    for (op, text) in
        [(CmpOp::Eq, "=="), (CmpOp::Ne, "!="), (CmpOp::Lt, "<"), (CmpOp::Le, "<="), (CmpOp::Gt, ">"), (CmpOp::Ge, ">=")]
    {
        rows.push(row(&format!("(x {text} y) as i32"), Scalar::I32, move |x, y| {
            Const::Int(scalar::cmp(op, x, y) as i64, Scalar::I32)
        }));
    }
    for to in [Scalar::I32, Scalar::U32, Scalar::I64, Scalar::F32, Scalar::F64] {
        if to != s {
            rows.push(row(&format!("x as {}", to.name()), to, move |x, _| scalar::cast(x, to)));
        }
    }
    rows
}

/// The inputs: every pair of edge values, as `E x E` arrays `X` (rows) and `Y` (columns).
fn inputs(s: Scalar) -> (usize, Vec<Const>, Vec<Const>) {
    let edges: Vec<Const> = if s.is_float() {
        FLOAT_EDGES.iter().map(|&v| Const::Float(s.round(v), s)).collect()
    } else {
        int_edges(s).into_iter().map(|v| Const::Int(v, s)).collect()
    };
    let e = edges.len();
    let xs = (0..e * e).map(|k| edges[k / e]).collect();
    let ys = (0..e * e).map(|k| edges[k % e]).collect();
    (e, xs, ys)
}

/// How values of type `s` live in arrays: `f32`, `f64` and `i32` as themselves; arrays of
/// `u32` and `i64` do not exist, so a `u32` is the `i32` of the same bits and an `i64` is two
/// `i32` arrays, `NAME` (the low 32 bits) and `NAMEh` (the high 32 bits).
fn decl(name: &str, s: Scalar, e: usize, out: bool) -> String {
    let m = if out { "mut " } else { "" };
    match s {
        Scalar::I64 => format!("{name}: {m}i32[{e}, {e}], {name}h: {m}i32[{e}, {e}]"),
        Scalar::U32 => format!("{name}: {m}i32[{e}, {e}]"),
        s => format!("{name}: {m}{}[{e}, {e}]", s.name()),
    }
}

/// The source of element `[i, j]` of array `name` holding values of type `s` ([`decl`]).
fn load(name: &str, s: Scalar) -> String {
    match s {
        Scalar::I64 => format!("({name}h[i, j] as i64) * 4294967296 + (({name}[i, j] as u32) as i64)"),
        Scalar::U32 => format!("{name}[i, j] as u32"),
        _ => format!("{name}[i, j]"),
    }
}

/// Statements storing `value` (of type `s`) as element `[i, j]` of array `name` ([`decl`]).
fn store(name: &str, s: Scalar, value: &str) -> String {
    match s {
        // The high half: (v - the low half, zero-extended) is a multiple of 2^32 in range.
        Scalar::I64 => format!(
            "            let v{name} = {value};\n            {name}[i, j] = v{name} as i32;\n            {name}h[i, j] = ((v{name} - ((v{name} as u32) as i64)) / 4294967296) as i32;\n"
        ),
        Scalar::U32 => format!("            {name}[i, j] = ({value}) as i32;\n"),
        _ => format!("            {name}[i, j] = {value};\n"),
    }
}

/// Host arrays for `vals` of type `s`, by parameter name ([`decl`]).
fn encode(name: &str, s: Scalar, vals: &[Const], e: usize) -> Vec<(String, ArgValue)> {
    let shape = [e as u64, e as u64];
    let i32s = |f: &dyn Fn(i64) -> i64| -> ArgValue {
        let v: Vec<Const> = vals.iter().map(|c| Const::Int(f(c.as_i64()) as i32 as i64, Scalar::I32)).collect();
        ArgValue::Array(host(Scalar::I32, &v, &shape))
    };
    match s {
        Scalar::I64 => vec![(name.to_string(), i32s(&|v| v)), (format!("{name}h"), i32s(&|v| v >> 32))],
        Scalar::U32 => vec![(name.to_string(), i32s(&|v| v))],
        s => vec![(name.to_string(), ArgValue::Array(host(s, vals, &shape)))],
    }
}

/// The values of type `s` in array `name` ([`decl`]), read with `get`.
fn decode(name: &str, s: Scalar, get: &dyn Fn(&str) -> Vec<Const>) -> Vec<Const> {
    match s {
        Scalar::I64 => {
            let (lo, hi) = (get(name), get(&format!("{name}h")));
            lo.iter().zip(hi).map(|(l, h)| Const::Int((h.as_i64() << 32) | (l.as_i64() as u32 as i64), s)).collect()
        }
        Scalar::U32 => get(name).iter().map(|c| Const::Int(c.as_i64() as u32 as i64, s)).collect(),
        _ => get(name),
    }
}

/// A kernel computing every row once per element with scalar code (`S{i}`) and once with
/// tile operations on the whole `E x E` tile (`T{i}`).
fn source(s: Scalar, e: usize, rows: &[Row]) -> String {
    let mut params = vec![decl("X", s, e, false), decl("Y", s, e, false)];
    let (mut scalar_body, mut tile_body) = (String::new(), String::new());
    for (i, r) in rows.iter().enumerate() {
        params.push(decl(&format!("S{i}"), r.ty, e, true));
        scalar_body.push_str(&store(&format!("S{i}"), r.ty, &r.text));
        if has_tile_form(s, r) {
            params.push(decl(&format!("T{i}"), r.ty, e, true));
            tile_body.push_str(&format!("    T{i}[0:{e}, 0:{e}] = {};\n", r.text));
        }
    }
    let tiles = if tile_body.is_empty() {
        String::new()
    } else {
        format!("    let x = X[0:{e}, 0:{e}];\n    let y = Y[0:{e}, 0:{e}];\n{tile_body}")
    };
    format!(
        "kernel semantics({}) grid(1) {{\n    for i in 0..{e} {{\n        for j in 0..{e} {{\n            let x = {};\n            let y = {};\n{scalar_body}        }}\n    }}\n{tiles}}}\n",
        params.join(", "),
        load("X", s),
        load("Y", s),
    )
}

/// Whether row `r` is also computed on whole tiles: element-wise arithmetic and `min`/`max`
/// (tiles cannot be cast, comparisons of tiles are masks: tile_ops/masks.rs), on the types
/// that have arrays to load tiles from.
fn has_tile_form(s: Scalar, r: &Row) -> bool {
    !matches!(s, Scalar::U32 | Scalar::I64) && !r.text.contains(" as ")
}

fn host(elem: Scalar, vals: &[Const], shape: &[u64]) -> HostArray {
    let mut a = HostArray::zeros(elem, shape).expect("array");
    let n = elem.bytes() as usize;
    for (k, c) in vals.iter().enumerate() {
        let dst = &mut a.bytes_mut()[k * n..k * n + n];
        match elem {
            Scalar::F32 => dst.copy_from_slice(&(c.as_f64() as f32).to_le_bytes()),
            Scalar::F64 => dst.copy_from_slice(&c.as_f64().to_le_bytes()),
            _ => dst.copy_from_slice(&(c.as_i64() as i32).to_le_bytes()),
        }
    }
    a
}

fn read(a: &HostArray) -> Vec<Const> {
    let (elem, b) = (a.elem(), a.bytes());
    let n = elem.bytes() as usize;
    (0..a.len())
        .map(|k| {
            let x = &b[k * n..k * n + n];
            match elem {
                Scalar::F32 => Const::Float(f32::from_le_bytes(x.try_into().unwrap()) as f64, elem),
                Scalar::F64 => Const::Float(f64::from_le_bytes(x.try_into().unwrap()), elem),
                _ => Const::Int(i32::from_le_bytes(x.try_into().unwrap()) as i64, elem),
            }
        })
        .collect()
}

/// The arguments: inputs, and outputs filled with 7 (any value the results overwrite).
fn args(s: Scalar, e: usize, rows: &[Row], xs: &[Const], ys: &[Const]) -> HashMap<String, ArgValue> {
    let mut m: HashMap<String, ArgValue> = HashMap::new();
    m.extend(encode("X", s, xs, e));
    m.extend(encode("Y", s, ys, e));
    for (i, r) in rows.iter().enumerate() {
        let fill = vec![scalar::cast(Const::Int(7, Scalar::I32), r.ty); e * e];
        m.extend(encode(&format!("S{i}"), r.ty, &fill, e));
        if has_tile_form(s, r) {
            m.extend(encode(&format!("T{i}"), r.ty, &fill, e));
        }
    }
    m
}

/// Whether `got` is `want`: NaN for NaN, else the same bits; with `ulps`, floats within that
/// many units in the last place of `ty`.
fn same(got: Const, want: Const, ulps: u64) -> bool {
    match (got, want) {
        (Const::Float(g, ty), Const::Float(w, _)) => {
            if g.is_nan() || w.is_nan() {
                return g.is_nan() && w.is_nan();
            }
            if ulps == 0 || g.is_infinite() || w.is_infinite() {
                return g.to_bits() == w.to_bits();
            }
            let ord = |v: f64| -> i64 {
                let b = if ty == Scalar::F32 { (v as f32).to_bits() as i64 } else { v.to_bits() as i64 };
                let sign = if ty == Scalar::F32 { 1 << 31 } else { i64::MIN };
                if b & sign != 0 {
                    -(b & !sign)
                } else {
                    b
                }
            };
            ord(g).abs_diff(ord(w)) <= ulps
        }
        (g, w) => g == w,
    }
}

/// Compares every output of one target with the references; panics with the first few
/// differences.
fn check(
    target: &str,
    s: Scalar,
    rows: &[Row],
    xs: &[Const],
    ys: &[Const],
    out: &dyn Fn(&str) -> Vec<Const>,
    ulps: u64,
) {
    let mut bad = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let want: Vec<Const> = xs.iter().zip(ys).map(|(x, y)| (r.reference)(*x, *y)).collect();
        let tol = if r.device_rounded { ulps } else { 0 };
        let mut outs = vec![("scalar", decode(&format!("S{i}"), r.ty, out))];
        if has_tile_form(s, r) {
            outs.push(("tile", decode(&format!("T{i}"), r.ty, out)));
        }
        for (form, got) in outs {
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                if !same(*g, *w, tol) && bad.len() < 20 {
                    bad.push(format!("  {form} `{}` x = {:?}, y = {:?}: got {g:?}, want {w:?}", r.text, xs[k], ys[k]));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{target}, {}: results differ from tilec_midend::scalar:\n{}", s.name(), bad.join("\n"));
}

struct Table {
    s: Scalar,
    rows: Vec<Row>,
    xs: Vec<Const>,
    ys: Vec<Const>,
    src: SourceSet,
    args: HashMap<String, ArgValue>,
}

/// The tables of type `s`: its rows split over kernels of at most 24 arrays each (Vulkan
/// devices may bind as few as 32 storage buffers).
fn tables(s: Scalar) -> Vec<Table> {
    let (e, xs, ys) = inputs(s);
    let mut out = Vec::new();
    let mut all = rows(s).into_iter().peekable();
    while all.peek().is_some() {
        let mut rows = Vec::new();
        let mut arrays = 0;
        while let Some(r) = all.peek() {
            let n = if r.ty == Scalar::I64 { 2 } else { 1 } * if has_tile_form(s, r) { 2 } else { 1 };
            if arrays + n > 24 {
                break;
            }
            arrays += n;
            rows.push(all.next().expect("peeked"));
        }
        let text = source(s, e, &rows);
        let args = args(s, e, &rows, &xs, &ys);
        let src = SourceSet::with_stdlib("semantics.tile", text);
        out.push(Table { s, src, rows, xs: xs.clone(), ys: ys.clone(), args });
    }
    out
}

const TYPES: [Scalar; 5] = [Scalar::F32, Scalar::F64, Scalar::I32, Scalar::U32, Scalar::I64];

fn module(t: &Table) -> Module {
    let inst = Instances::One { kernel: "semantics".into(), generics: HashMap::new() };
    compile(&t.src, &inst, &CompileOptions { verify: true, ..Default::default() }).expect("compiles").module
}

/// The table's kernel run on `target` ([`tilec_tests::run_on`]).
fn run_on(target: tilec::Target, t: &Table) -> Result<Bound, tilec::Error> {
    tilec_tests::run_on(target, &t.src, "semantics", t.args.clone(), &HashMap::new())
}

fn check_bound(target: &str, t: &Table, b: &Bound, ulps: u64) {
    check(target, t.s, &t.rows, &t.xs, &t.ys, &|n| read(b.array(n).expect("output")), ulps);
}

#[test]
fn cpu_targets_follow_the_scalar_semantics() {
    let backends = tilec_tests::cpu_backends();
    for t in TYPES.into_iter().flat_map(tables) {
        for &be in &backends {
            let runner = CpuRunner::with_backend(&t.src, "semantics", &t.args, &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("does not compile: {d:?}"));
            let (b, _) = runner.run(t.args.clone()).expect("runs");
            check_bound(&format!("CPU ({be:?})"), &t, &b, 0);
        }
    }
}

#[test]
fn simt_form_follows_the_scalar_semantics() {
    for t in TYPES.into_iter().flat_map(tables) {
        let m = module(&t);
        let k = &m.kernels[0];
        for lanes in [4, 8, 16, 32, 64] {
            let arrays = tilec_tests::run_simt(&m, k, &t.args, lanes, [1, 1, 1])
                .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", t.s.name()));
            let get = |n: &str| read(&arrays[n]);
            check(&format!("SIMT form at {lanes} lanes"), t.s, &t.rows, &t.xs, &t.ys, &get, 0);
        }
    }
}

#[test]
fn vulkan_follows_the_scalar_semantics() {
    let Some(dev) = tilec_tests::vulkan_device() else {
        return;
    };
    for t in TYPES.into_iter().filter(|&s| s != Scalar::F64 || dev.supports_f64()).flat_map(tables) {
        let b = run_on(tilec::Target::Vulkan { device: None }, &t).unwrap_or_else(|e| panic!("{e}"));
        check_bound(&format!("Vulkan on {}", dev.name()), &t, &b, 3);
    }
}

#[test]
fn cuda_follows_the_scalar_semantics() {
    let dev = tilec_runtime::CudaDevice::open(None);
    if let Err(e) = &dev {
        // On a GPU machine a missing driver is a failure, not a skip (as TILEC_REQUIRE_VULKAN).
        assert!(std::env::var("TILEC_REQUIRE_CUDA").as_deref() != Ok("1"), "TILEC_REQUIRE_CUDA=1: {e}");
    }
    let Ok(dev) = dev else {
        // Without a GPU: the tables' PTX at least assembles (the run needs a device).
        if tilec_codegen_ptx::AVAILABLE {
            let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs it)");
            for t in TYPES.into_iter().flat_map(tables) {
                let m = module(&t);
                let simt = lower_kernel(&m, &m.kernels[0], 32).expect("lowers");
                let p = tilec_codegen_ptx::compile(&simt, "sm_70").expect("PTX");
                tilec::ptxas(&ptxas, &p.text, "sm_70").unwrap_or_else(|e| panic!("ptxas: {e}"));
            }
        }
        eprintln!("skipped the run: no CUDA driver or device");
        return;
    };
    for t in TYPES.into_iter().flat_map(tables) {
        let b = run_on(tilec::Target::Cuda { device: None }, &t).unwrap_or_else(|e| panic!("{e}"));
        check_bound(&format!("CUDA on {}", dev.name()), &t, &b, 0);
    }
}

/// Operations on constants, which the compiler folds, give what the generated code computes
/// on the same values at run time (the miscompiles of issue 12 among them).
#[test]
fn constant_operands_give_the_run_time_results() {
    let src = "const C: i32 = cdiv(-6, 4);
    const H: f32 = min(1.5, 2.5);
    const THIRD: f32 = 1.0 / 3.0;
    kernel folds(O: mut i32[7], F: mut f32[7], one: f32, m6: i32) grid(1) {
        O[0] = 3000000000.0 as i32;
        O[1] = (-3000000000.0) as i32;
        O[2] = (0.0 / 0.0) as i32;
        let big: i64 = 9007199254740993;
        let b2: i64 = 9007199254740992;
        O[3] = (big == b2) as i32;
        O[4] = (3000000000.0 * one) as i32;
        F[0] = min(0.0 / 0.0, 1.0);
        F[1] = 7.5 % -2.0;
        F[2] = max(-0.0, 0.0);
        F[3] = min(0.0, -0.0);
        F[4] = min(0.0 / 0.0 * one, 1.0);
        O[5] = C;
        O[6] = cdiv(m6, 4);
        F[5] = H;
        F[6] = THIRD * 3.0 - (one / 3.0) * 3.0;
    }";
    let set = SourceSet::with_stdlib("folds.tile", src);
    let mut a = HashMap::new();
    a.insert("O".to_string(), ArgValue::Array(HostArray::zeros(Scalar::I32, &[7]).unwrap()));
    a.insert("F".to_string(), ArgValue::Array(HostArray::zeros(Scalar::F32, &[7]).unwrap()));
    a.insert("m6".to_string(), ArgValue::Scalar(Const::Int(-6, Scalar::I32)));
    a.insert("one".to_string(), ArgValue::Scalar(Const::Float(1.0, Scalar::F32)));
    let runner = tilec_tests::cpu_runner(&set, "folds", &a, &HashMap::new()).expect("compiles");
    let (b, _) = runner.run(a).expect("runs");
    let o = read(b.array("O").unwrap());
    // cdiv truncates at compile time as at run time: cdiv(-6, 4) = (-6 + 3) / 4 = 0.
    let want = [i32::MAX as i64, i32::MIN as i64, 0, 0, i32::MAX as i64, 0, 0];
    assert_eq!(o, want.iter().map(|&v| Const::Int(v, Scalar::I32)).collect::<Vec<_>>());
    let f: Vec<f64> = read(b.array("F").unwrap()).iter().map(|c| c.as_f64()).collect();
    assert!(f[0].is_nan() && f[4].is_nan(), "min with a NaN operand is NaN: {f:?}");
    assert_eq!(f[1], 1.5);
    assert_eq!(f[5], 1.5, "a constant `min` of floats is a float");
    assert_eq!(f[6], 0.0, "an f32 constant holds the f32 value, as the run-time division gives");
    assert_eq!((f[2].to_bits(), f[3].to_bits()), (0.0f64.to_bits(), (-0.0f64).to_bits()), "{f:?}");
}

/// Comparison masks kept as `bool` tiles and read by two element-wise ops (the CPU code
/// generators load them as vector lane masks and store them back as bytes) give the scalar
/// comparison's results: `A = where(x OP y, x, y)` and `B = where(x OP y, 1, 0)` against
/// `tilec_midend::scalar::cmp` on every pair of edge values, both CPU backends and the SIMT
/// form.
#[test]
fn shared_masks_follow_the_scalar_semantics() {
    let ops = [
        (CmpOp::Eq, "=="),
        (CmpOp::Ne, "!="),
        (CmpOp::Lt, "<"),
        (CmpOp::Le, "<="),
        (CmpOp::Gt, ">"),
        (CmpOp::Ge, ">="),
    ];
    let backends = tilec_tests::cpu_backends();
    for s in [Scalar::F32, Scalar::F64, Scalar::I32] {
        let (e, xs, ys) = inputs(s);
        let mut params = vec![decl("X", s, e, false), decl("Y", s, e, false)];
        let mut body = format!("    let x = X[0:{e}, 0:{e}];\n    let y = Y[0:{e}, 0:{e}];\n");
        let mut args: HashMap<String, ArgValue> = HashMap::new();
        args.extend(encode("X", s, &xs, e));
        args.extend(encode("Y", s, &ys, e));
        for (i, (_, text)) in ops.iter().enumerate() {
            params.push(decl(&format!("A{i}"), s, e, true));
            params.push(decl(&format!("B{i}"), Scalar::I32, e, true));
            body.push_str(&format!(
                "    let m{i} = x {text} y;\n    A{i}[0:{e}, 0:{e}] = where(m{i}, x, y);\n    B{i}[0:{e}, 0:{e}] = where(m{i}, 1, 0);\n"
            ));
            args.extend(encode(&format!("A{i}"), s, &vec![Const::Int(7, s); e * e], e));
            args.extend(encode(&format!("B{i}"), Scalar::I32, &vec![Const::Int(7, Scalar::I32); e * e], e));
        }
        let text = format!("kernel masks({}) grid(1) {{\n{body}}}\n", params.join(", "));
        let src = SourceSet::with_stdlib("masks.tile", text);
        let check = |target: &str, get: &dyn Fn(&str) -> Vec<Const>| {
            for (i, (op, text)) in ops.iter().enumerate() {
                let (a, b) = (get(&format!("A{i}")), get(&format!("B{i}")));
                for k in 0..e * e {
                    let m = scalar::cmp(*op, xs[k], ys[k]);
                    let want = if m { xs[k] } else { ys[k] };
                    assert!(
                        same(a[k], want, 0) && b[k].as_i64() == m as i64,
                        "{target}, {}: x {text} y at x = {:?}, y = {:?}: got {:?} and {:?}, want {want:?} and {}",
                        s.name(),
                        xs[k],
                        ys[k],
                        a[k],
                        b[k],
                        m as i32
                    );
                }
            }
        };
        for &be in &backends {
            let runner = CpuRunner::with_backend(&src, "masks", &args, &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("does not compile: {d:?}"));
            let (b, _) = runner.run(args.clone()).expect("runs");
            check(&format!("CPU ({be:?})"), &|n| read(b.array(n).expect("output")));
        }
        let inst = Instances::One { kernel: "masks".into(), generics: HashMap::new() };
        let m = compile(&src, &inst, &CompileOptions { verify: true, ..Default::default() }).expect("compiles").module;
        for lanes in [4, 32] {
            let arrays = tilec_tests::run_simt(&m, &m.kernels[0], &args, lanes, [1, 1, 1]).expect("runs");
            check(&format!("SIMT form at {lanes} lanes"), &|n| read(&arrays[n]));
        }
    }
}
