//! Tests of the Vulkan launcher. The host-side parts (params words, grid split, capability
//! scan) always run; the launches need a Vulkan device (lavapipe will do) and print a skip
//! line without one, unless `TILEC_REQUIRE_VULKAN=1` makes a missing device a failure.

use std::collections::HashMap;

use tilec_codegen_spirv::{compile, compile_with, Chunks, ParamsLayout, SpirvOptions};
use tilec_midend::simt::SimtKernel;
use tilec_midend::{
    BinOp, Const, Dim, FuncKind, Function, Index, Kernel, KernelParam, Loc, Op, OpKind, ParamKind, Scalar, Type, Value,
};

use super::chunks::chunks_for;
use super::params::{check_bound, module_uses, params_words, Chunk, Uses};
use super::VulkanDevice;
use crate::array::HostArray;
use crate::bind::{bind, ArgValue, Bound};
use crate::params::split_grid;

fn required() -> bool {
    std::env::var("TILEC_REQUIRE_VULKAN").is_ok_and(|v| v == "1")
}

/// The default device, or `None` (with a skip line) when there is none and none is required.
fn device(test: &str) -> Option<VulkanDevice> {
    match VulkanDevice::open(None) {
        Ok(d) => Some(d),
        Err(e) if required() => panic!("TILEC_REQUIRE_VULKAN=1, but: {e}"),
        Err(e) => {
            eprintln!("skipped {test}: no Vulkan device ({}: {e})", e.code());
            None
        }
    }
}

#[test]
fn opens_a_device_when_required() {
    let opened = VulkanDevice::open(None);
    if required() {
        assert!(opened.is_ok(), "TILEC_REQUIRE_VULKAN=1: {opened:?}");
    }
    match opened {
        Ok(d) => {
            eprintln!(
                "Vulkan device: {} [{}], subgroup size {}, shared memory {} bytes, f64 {}, i64 {}",
                d.name(),
                d.driver_info(),
                d.subgroup_size(),
                d.max_shared_bytes(),
                d.supports_f64(),
                d.supports_i64()
            );
            assert!(d.subgroup_size() > 0);
            assert!(!d.name().is_empty());
        }
        Err(e) => eprintln!("skipped opens_a_device_when_required: {}: {e}", e.code()),
    }
}

#[test]
fn devices_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<VulkanDevice>();
}

#[test]
fn device_index_out_of_range_lists_devices() {
    let Some(d) = device("device_index_out_of_range_lists_devices") else {
        return;
    };
    let name = d.name().to_string();
    drop(d);
    let e = VulkanDevice::open(Some(1000)).unwrap_err();
    assert_eq!(e.code(), "E0423");
    let text = e.to_string();
    assert!(text.starts_with("there is no Vulkan device 1000 (devices: 0: "), "{text}");
    assert!(text.contains(&name), "{text}");
}

/// Builds kernels in SIMT form by hand: one straight-line region.
struct Simt {
    f: Function,
    ops: Vec<Op>,
}

impl Simt {
    fn new(params: &[Type]) -> Simt {
        let mut f = Function::new("k", FuncKind::Kernel);
        for t in params {
            let v = f.new_value(t.clone());
            f.body.params.push(v);
        }
        Simt { f, ops: Vec::new() }
    }

    fn p(&self, i: usize) -> Value {
        self.f.params()[i]
    }

    fn op(&mut self, kind: OpKind, args: &[Value], ty: Option<Scalar>) -> Option<Value> {
        let results: Vec<Value> = ty.map(|s| self.f.new_value(Type::Scalar(s))).into_iter().collect();
        self.ops.push(Op { kind, args: args.to_vec(), results: results.clone(), regions: vec![], loc: Loc::default() });
        results.first().copied()
    }

    fn val(&mut self, kind: OpKind, args: &[Value], ty: Scalar) -> Value {
        self.op(kind, args, Some(ty)).expect("a result")
    }

    fn i32(&mut self, v: i64) -> Value {
        self.val(OpKind::Const(Const::Int(v, Scalar::I32)), &[], Scalar::I32)
    }

    fn bin(&mut self, op: BinOp, a: Value, b: Value, ty: Scalar) -> Value {
        self.val(OpKind::Bin(op), &[a, b], ty)
    }

    fn finish(mut self, params: Vec<KernelParam>, lanes: u32) -> SimtKernel {
        self.op(OpKind::Return, &[], None);
        self.f.body.ops = self.ops;
        SimtKernel {
            kernel: Kernel {
                name: "k".into(),
                symbol: "k".into(),
                params,
                body: tilec_midend::FuncId(0),
                launch: tilec_midend::FuncId(0),
                grid_rank: 3,
                block: None,
                has_flops: false,
                doc: None,
                loc: Default::default(),
            },
            func: self.f,
            lanes,
            shared_bytes: 0,
        }
    }
}

fn array_param(name: &str, elem: Scalar, dims: &[&str], mutable: bool) -> KernelParam {
    KernelParam {
        name: name.into(),
        kind: ParamKind::Array {
            elem,
            dims: dims.iter().map(|d| Dim::Var(d.to_string())).collect(),
            mutable,
            optional: false,
        },
    }
}

fn scalar_param(name: &str, s: Scalar) -> KernelParam {
    KernelParam { name: name.into(), kind: ParamKind::Scalar(s) }
}

/// `k(A: mut T[N])` (or `k(A: mut T[N], x: T)` with `with_x`):
/// `A[program_id(0) * lanes + lane] += 1` (or `+= x`).
fn add_kernel(elem: Scalar, with_x: bool, lanes: u32) -> SimtKernel {
    let mut types = vec![Type::Array { elem, rank: 1, mutable: true }];
    let mut params = vec![array_param("A", elem, &["N"], true)];
    if with_x {
        types.push(Type::Scalar(elem));
        params.push(scalar_param("x", elem));
    }
    let mut b = Simt::new(&types);
    let a = b.p(0);
    let pid = b.val(OpKind::ProgramId(0), &[], Scalar::I32);
    let lane = b.val(OpKind::LaneId, &[], Scalar::I32);
    let l = b.i32(lanes as i64);
    let base = b.bin(BinOp::Mul, pid, l, Scalar::I32);
    let i = b.bin(BinOp::Add, base, lane, Scalar::I32);
    let old = b.val(OpKind::Load(vec![Index::At]), &[a, i], elem);
    let inc = if with_x { b.p(1) } else { b.val(OpKind::Const(Const::Float(1.0, elem)), &[], elem) };
    let new = b.bin(BinOp::Add, old, inc, elem);
    b.op(OpKind::Store(vec![Index::At]), &[a, i, new], None);
    b.finish(params, lanes)
}

/// `k(out: mut i32[M], base: i32)`: every lane of program `p` in grid `g` writes
/// `base + p0 + 16 p1 + 256 p2 + 4096 lane` at `((p2 g1 + p1) g0 + p0) lanes + lane`.
fn ids_kernel(lanes: u32) -> SimtKernel {
    let i32t = Scalar::I32;
    let mut b = Simt::new(&[Type::Array { elem: i32t, rank: 1, mutable: true }, Type::Scalar(i32t)]);
    let (out, base) = (b.p(0), b.p(1));
    let p: Vec<Value> = (0..3).map(|a| b.val(OpKind::ProgramId(a), &[], i32t)).collect();
    let g0 = b.val(OpKind::NumPrograms(0), &[], i32t);
    let g1 = b.val(OpKind::NumPrograms(1), &[], i32t);
    let lane = b.val(OpKind::LaneId, &[], i32t);
    let l = b.i32(lanes as i64);
    let t = b.bin(BinOp::Mul, p[2], g1, i32t);
    let t = b.bin(BinOp::Add, t, p[1], i32t);
    let t = b.bin(BinOp::Mul, t, g0, i32t);
    let t = b.bin(BinOp::Add, t, p[0], i32t);
    let t = b.bin(BinOp::Mul, t, l, i32t);
    let at = b.bin(BinOp::Add, t, lane, i32t);
    let mut v = b.bin(BinOp::Add, base, p[0], i32t);
    for (x, scale) in [(p[1], 16), (p[2], 256), (lane, 4096)] {
        let s = b.i32(scale);
        let m = b.bin(BinOp::Mul, x, s, i32t);
        v = b.bin(BinOp::Add, v, m, i32t);
    }
    b.op(OpKind::Store(vec![Index::At]), &[out, at, v], None);
    b.finish(vec![array_param("out", i32t, &["M"], true), scalar_param("base", i32t)], lanes)
}

fn bound(k: &Kernel, args: Vec<(&str, ArgValue)>) -> Bound {
    let args: HashMap<String, ArgValue> = args.into_iter().map(|(n, v)| (n.to_string(), v)).collect();
    bind(k, args).unwrap()
}

#[test]
fn params_words_follow_the_layout() {
    let k = Kernel {
        params: vec![
            array_param("A", Scalar::F32, &["N", "M"], true),
            scalar_param("s", Scalar::F32),
            scalar_param("d", Scalar::F64),
            scalar_param("b", Scalar::Bool),
            array_param("B", Scalar::I32, &["K"], false),
            scalar_param("i", Scalar::I64),
        ],
        ..add_kernel(Scalar::F32, false, 4).kernel
    };
    let layout = ParamsLayout::of(&k);
    let b = bound(
        &k,
        vec![
            ("A", ArgValue::Array(HostArray::zeros(Scalar::F32, &[3, 5]).unwrap())),
            ("s", ArgValue::Scalar(Const::Float(1.5, Scalar::F32))),
            ("d", ArgValue::Scalar(Const::Float(0.1, Scalar::F64))),
            ("b", ArgValue::Scalar(Const::Bool(true))),
            ("B", ArgValue::Array(HostArray::zeros(Scalar::I32, &[7]).unwrap())),
            ("i", ArgValue::Scalar(Const::Int(-3, Scalar::I64))),
        ],
    );
    check_bound(&k, &layout, &b).unwrap();
    let w = params_words(&layout, &b, [9, 2, 1]);
    let d = 0.1f64.to_bits();
    let i = (-3i64) as u64;
    assert_eq!(layout.offsets, [6, 8, 10, 12, 13, 14]);
    assert_eq!(
        w,
        [9, 2, 1, 0, 0, 0, 3, 5, 1.5f32.to_bits(), 0, d as u32, (d >> 32) as u32, 1, 7, i as u32, (i >> 32) as u32]
    );
    // Arguments for another kernel, or a layout of another kernel: E0417.
    let other = add_kernel(Scalar::F32, false, 4).kernel;
    let ob = bound(&other, vec![("A", ArgValue::Array(HostArray::zeros(Scalar::F32, &[3]).unwrap()))]);
    assert_eq!(check_bound(&k, &layout, &ob).unwrap_err().code(), "E0417");
    let e = check_bound(&k, &ParamsLayout::of(&other), &b).unwrap_err();
    assert_eq!(e.code(), "E0417");
}

#[test]
fn grids_split_within_limits() {
    assert_eq!(split_grid([5, 1, 1], [65535; 3]).unwrap(), [Chunk { offset: [0, 0, 0], count: [5, 1, 1] }]);
    let chunks = split_grid([7, 5, 3], [3, 2, 2]).unwrap();
    assert_eq!(chunks.len(), 3 * 3 * 2);
    assert_eq!(
        chunks[..4],
        [
            Chunk { offset: [0, 0, 0], count: [3, 2, 2] },
            Chunk { offset: [3, 0, 0], count: [3, 2, 2] },
            Chunk { offset: [6, 0, 0], count: [1, 2, 2] },
            Chunk { offset: [0, 2, 0], count: [3, 2, 2] },
        ]
    );
    // Every program exactly once.
    let mut seen = vec![0; 7 * 5 * 3];
    for c in &chunks {
        for z in 0..c.count[2] {
            for y in 0..c.count[1] {
                for x in 0..c.count[0] {
                    let (x, y, z) = (c.offset[0] + x, c.offset[1] + y, c.offset[2] + z);
                    seen[((z * 5 + y) * 7 + x) as usize] += 1;
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n == 1));
    assert_eq!(split_grid([i32::MAX as u32; 3], [1; 3]), None);
    assert_eq!(split_grid([i32::MAX as u32, 1, 1], [65535; 3]).unwrap().len(), 32769);
}

#[test]
fn capabilities_are_read_from_the_module() {
    let f32k = compile(&add_kernel(Scalar::F32, false, 8)).unwrap();
    assert_eq!(module_uses(&f32k.words).unwrap(), Uses::default());
    let f64k = compile(&add_kernel(Scalar::F64, true, 8)).unwrap();
    assert_eq!(module_uses(&f64k.words).unwrap(), Uses { f64: true, i64: false, storage16: false });
    assert_eq!(module_uses(&[1, 2, 3]).unwrap_err().code(), "E0417");
    let mut bad = f32k.words.clone();
    bad.truncate(6);
    assert_eq!(module_uses(&bad).unwrap_err().code(), "E0417");
}

fn f32_array(n: usize) -> HostArray {
    let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
    HostArray::from_f32(&v, &[n as u64]).unwrap()
}

#[test]
fn adds_one_on_the_device() {
    let Some(d) = device("adds_one_on_the_device") else {
        return;
    };
    let lanes = d.subgroup_size();
    let sk = add_kernel(Scalar::F32, false, lanes);
    let k = compile(&sk).unwrap();
    assert_eq!((k.lanes, k.arrays), (lanes, 1));
    // The last program is partly out of bounds: its extra lanes store nothing.
    let n = lanes as usize * 5 - 3;
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(n)))]);
    let times = d.launch(&k, &sk.kernel, &mut b, [5, 1, 1], 3).unwrap();
    assert_eq!(times.len(), 3);
    let want: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
    // Every run starts from the bound input, so three runs add 1 once.
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), want);
    // A smaller grid leaves the rest alone; an empty one runs nothing.
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(n)))]);
    d.launch(&k, &sk.kernel, &mut b, [2, 1, 1], 1).unwrap();
    let a = b.array("A").unwrap().as_f32().unwrap();
    let split = 2 * lanes as usize;
    assert!((0..n).all(|i| a[i] == i as f32 + (i < split) as u32 as f32));
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(n)))]);
    let times = d.launch(&k, &sk.kernel, &mut b, [0, 1, 1], 2).unwrap();
    assert_eq!(times.len(), 2);
    assert_eq!(b.array("A").unwrap(), &f32_array(n));
}

#[test]
fn f64_scalars_and_arrays() {
    let Some(d) = device("f64_scalars_and_arrays") else {
        return;
    };
    let lanes = d.subgroup_size();
    let sk = add_kernel(Scalar::F64, true, lanes);
    let k = compile(&sk).unwrap();
    let n = lanes as usize * 3;
    let v: Vec<f64> = (0..n).map(|i| i as f64 * 0.25).collect();
    let mut b = bound(
        &sk.kernel,
        vec![
            ("A", ArgValue::Array(HostArray::from_f64(&v, &[n as u64]).unwrap())),
            ("x", ArgValue::Scalar(Const::Float(1e-9 + 0.5, Scalar::F64))),
        ],
    );
    let r = d.launch(&k, &sk.kernel, &mut b, [3, 1, 1], 1);
    if !d.supports_f64() {
        assert_eq!(r.unwrap_err().code(), "E0427");
        return;
    }
    r.unwrap();
    let want: Vec<f64> = v.iter().map(|x| x + (1e-9 + 0.5)).collect();
    assert_eq!(b.array("A").unwrap().as_f64().unwrap(), want);
}

#[test]
fn program_ids_across_split_dispatches() {
    let Some(d) = device("program_ids_across_split_dispatches") else {
        return;
    };
    let lanes = d.subgroup_size();
    let sk = ids_kernel(lanes);
    let k = compile(&sk).unwrap();
    let g = [7u32, 5, 3];
    let m = (g[0] * g[1] * g[2] * lanes) as usize;
    let want: Vec<i32> = (0..m)
        .map(|i| {
            let (lane, p) = ((i % lanes as usize) as i32, (i / lanes as usize) as i32);
            let (p0, p1, p2) = (p % 7, p / 7 % 5, p / 35);
            -100 + p0 + 16 * p1 + 256 * p2 + 4096 * lane
        })
        .collect();
    for max in [[65535; 3], [3, 2, 2], [1, 1, 1]] {
        let out = HostArray::zeros(Scalar::I32, &[m as u64]).unwrap();
        let mut b = bound(
            &sk.kernel,
            vec![("out", ArgValue::Array(out)), ("base", ArgValue::Scalar(Const::Int(-100, Scalar::I32)))],
        );
        d.launch_split(&k, &sk.kernel, &mut b, g.map(i64::from), 1, max).unwrap();
        assert_eq!(b.array("out").unwrap().as_i32().unwrap(), want, "max {max:?}");
    }
}

#[test]
fn launch_errors() {
    let Some(d) = device("launch_errors") else {
        return;
    };
    let lanes = d.subgroup_size();
    let sk = add_kernel(Scalar::F32, false, lanes);
    let k = compile(&sk).unwrap();
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(4)))]);

    let wide = compile(&add_kernel(Scalar::F32, false, lanes * 2)).unwrap();
    let e = d.launch(&wide, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0425");
    assert!(e.to_string().contains(&format!("subgroups of {lanes}")), "{e}");

    let mut big = k.clone();
    big.shared_bytes = d.max_shared_bytes() + 1;
    let e = d.launch(&big, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0426");
    let text = e.to_string();
    assert!(text.contains(&big.shared_bytes.to_string()), "{text}");
    assert!(text.contains(&d.max_shared_bytes().to_string()), "{text}");

    let e = d.launch(&k, &sk.kernel, &mut b, [1 << 31, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0416");

    let ids = ids_kernel(lanes);
    let e = d.launch(&k, &ids.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0417");
    let mut garbage = k.clone();
    garbage.words = vec![0; 16];
    let e = d.launch(&garbage, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0417");

    // Nothing ran, and the device still works.
    assert_eq!(b.array("A").unwrap(), &f32_array(4));
    d.launch(&k, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap();
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn too_large_array_is_an_error_and_frees_what_was_made() {
    let Some(d) = device("too_large_array_is_an_error_and_frees_what_was_made") else {
        return;
    };
    let lanes = d.subgroup_size();
    let params = vec![array_param("A", Scalar::F32, &["N"], true), array_param("B", Scalar::F32, &["M"], false)];
    let array = |mutable| Type::Array { elem: Scalar::F32, rank: 1, mutable };
    let sk = Simt::new(&[array(true), array(false)]).finish(params, lanes);
    let k = compile(&sk).unwrap();
    assert_eq!(k.arrays, 2);
    // lavapipe allows 128 MiB; a zeroed array is not touched before the check.
    let huge = 1u64 << 32;
    let b_arr = match HostArray::zeros(Scalar::F32, &[huge / 4 + 1]) {
        Ok(a) => a,
        Err(_) => return,
    };
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(4))), ("B", ArgValue::Array(b_arr))]);
    // Compiled without chunks: B does not fit in one buffer.
    let e = d.launch(&k, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0417");
    assert!(e.to_string().contains("binds array `B` (4294967300 bytes) as one storage buffer"), "{e}");
    // Chunks of the largest power of two within the limit.
    let limit = d.max_storage_buffer_range() as u64;
    let chunks = d.chunking(&sk.kernel, &b);
    let log2 = (limit / 4).ilog2();
    let count = (huge / 4 + 1).div_ceil(1 << log2) as u32;
    assert_eq!(chunks, [None, Some(Chunks { log2: log2 as u8, count })]);
    // The device still works (run under the validation layer to check nothing leaked).
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(4))), ("B", ArgValue::Array(f32_array(4)))]);
    d.launch(&k, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap();
}

#[test]
fn grids_beyond_the_device_limit_are_split() {
    let Some(d) = device("grids_beyond_the_device_limit_are_split") else {
        return;
    };
    let max = d.limits.max_group_count[0] as usize;
    if max > 1 << 20 {
        eprintln!("skipped grids_beyond_the_device_limit_are_split: the limit is {max}");
        return;
    }
    let lanes = d.subgroup_size();
    let sk = add_kernel(Scalar::F32, false, lanes);
    let k = compile(&sk).unwrap();
    let programs = max + 5;
    let n = lanes as usize * programs;
    let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(n)))]);
    let grid = [programs as i64, 1, 1];
    let times = d.launch(&k, &sk.kernel, &mut b, grid, 2).unwrap();
    eprintln!("{} programs of {lanes} lanes: {times:?}", programs);
    let a = b.array("A").unwrap().as_f32().unwrap();
    assert!((0..n).all(|i| a[i] == i as f32 + 1.0));
}

#[test]
fn chunks_follow_the_limit() {
    let c = |log2, count| Some(Chunks { log2, count });
    // What fits in one buffer (at least 16 bytes) stays whole.
    assert_eq!(chunks_for(1024, 4, 4096), None);
    assert_eq!(chunks_for(0, 4, 16), None);
    assert_eq!(chunks_for(4, 4, 16), None);
    assert_eq!(chunks_for(1025, 4, 4096), c(10, 2));
    assert_eq!(chunks_for(4096, 4, 4096), c(10, 4));
    assert_eq!(chunks_for(4097, 8, 4096), c(9, 9));
    // The largest power of two of elements within the limit.
    assert_eq!(chunks_for(1000, 4, 3000), c(9, 2));
    assert_eq!(chunks_for((1 << 30) + 1, 4, 128 << 20), c(25, 33));
    assert_eq!(chunks_for(10, 8, 16), c(1, 5));
}

/// `k(A: mut f32[N], B: f32[N], C: f32[K])`: `A[i] += B[i] * C[1]` for
/// `i = program_id(0) * lanes + lane`.
fn axpy_kernel(lanes: u32) -> SimtKernel {
    let f32t = Scalar::F32;
    let array = |mutable| Type::Array { elem: f32t, rank: 1, mutable };
    let mut b = Simt::new(&[array(true), array(false), array(false)]);
    let (a, x, c) = (b.p(0), b.p(1), b.p(2));
    let pid = b.val(OpKind::ProgramId(0), &[], Scalar::I32);
    let lane = b.val(OpKind::LaneId, &[], Scalar::I32);
    let l = b.i32(lanes as i64);
    let base = b.bin(BinOp::Mul, pid, l, Scalar::I32);
    let i = b.bin(BinOp::Add, base, lane, Scalar::I32);
    let one = b.i32(1);
    let old = b.val(OpKind::Load(vec![Index::At]), &[a, i], f32t);
    let xi = b.val(OpKind::Load(vec![Index::At]), &[x, i], f32t);
    let c1 = b.val(OpKind::Load(vec![Index::At]), &[c, one], f32t);
    let t = b.bin(BinOp::Mul, xi, c1, f32t);
    let new = b.bin(BinOp::Add, old, t, f32t);
    b.op(OpKind::Store(vec![Index::At]), &[a, i, new], None);
    b.finish(
        vec![
            array_param("A", f32t, &["N"], true),
            array_param("B", f32t, &["N"], false),
            array_param("C", f32t, &["K"], false),
        ],
        lanes,
    )
}

fn axpy_args(sk: &SimtKernel, n: usize) -> Bound {
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
    bound(
        &sk.kernel,
        vec![
            ("A", ArgValue::Array(f32_array(n))),
            ("B", ArgValue::Array(HostArray::from_f32(&x, &[n as u64]).unwrap())),
            ("C", ArgValue::Array(HostArray::from_f32(&[7.0, 2.0, 9.0], &[3]).unwrap())),
        ],
    )
}

fn axpy_want(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32 + (i % 1000) as f32).collect()
}

/// Chunked arrays: with storage buffers of 4 KiB pretended, arrays of 3 chunks and a partial
/// one (1024 `f32` a chunk), one of them `mut` and copied back chunk by chunk.
#[test]
fn chunked_arrays_on_the_device() {
    let Some(mut d) = device("chunked_arrays_on_the_device") else {
        return;
    };
    let real = d.max_storage_buffer_range();
    d.pretend_max_storage_buffer_range(4096);
    assert_eq!(d.max_storage_buffer_range(), 4096.min(real));
    let lanes = d.subgroup_size() as usize;
    let sk = axpy_kernel(lanes as u32);
    let n = 3 * 1024 + 100;
    let mut b = axpy_args(&sk, n);
    let chunks = d.chunking(&sk.kernel, &b);
    let four = Some(Chunks { log2: 10, count: 4 });
    assert_eq!(chunks, [four, four, None]);
    let k = compile_with(&sk, &SpirvOptions { chunks }).unwrap();
    let programs = n.div_ceil(lanes) as i64;
    let times = d.launch(&k, &sk.kernel, &mut b, [programs, 1, 1], 2).unwrap();
    assert_eq!(times.len(), 2);
    // Two runs from the bound input add once; the last, partial chunk too.
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), axpy_want(n));

    // Fewer programs: the chunks past them are copied back unchanged.
    let mut b = axpy_args(&sk, n);
    d.launch(&k, &sk.kernel, &mut b, [2048 / lanes as i64, 1, 1], 1).unwrap();
    let a = b.array("A").unwrap().as_f32().unwrap();
    let want = axpy_want(n);
    assert!((0..n).all(|i| a[i] == if i < 2048 { want[i] } else { i as f32 }));

    // More chunks than the arrays need (a shader compiled for larger ones) will do.
    let big = Some(Chunks { log2: 9, count: 9 });
    let k = compile_with(&sk, &SpirvOptions { chunks: vec![big, big, big] }).unwrap();
    let mut b = axpy_args(&sk, n);
    d.launch(&k, &sk.kernel, &mut b, [programs, 1, 1], 1).unwrap();
    assert_eq!(b.array("A").unwrap().as_f32().unwrap(), axpy_want(n));
}

/// A shader whose chunks do not fit the arrays is an error before anything is made.
#[test]
fn chunks_must_fit_the_arrays() {
    let Some(mut d) = device("chunks_must_fit_the_arrays") else {
        return;
    };
    d.pretend_max_storage_buffer_range(4096);
    let lanes = d.subgroup_size();
    let sk = axpy_kernel(lanes);
    let n = 3 * 1024 + 100;
    let mut b = axpy_args(&sk, n);
    let chunked = compile_with(&sk, &SpirvOptions { chunks: d.chunking(&sk.kernel, &b) }).unwrap();
    // The shader is not run: other chunks in its description will do.
    let with = |chunks: Vec<Option<Chunks>>| {
        let mut k = chunked.clone();
        k.chunks = chunks;
        k
    };

    // One buffer for an array larger than the limit.
    let single = compile(&sk).unwrap();
    let e = d.launch(&single, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0417");
    assert!(e.to_string().contains("binds array `A` (12688 bytes) as one storage buffer"), "{e}");

    // The checks below fail before any Vulkan object is made or shader run.
    let c = |log2, count| Some(Chunks { log2, count });
    for (chunks, text) in [
        (
            vec![c(10, 3), c(10, 4), None],
            "binds array `A` as 3 chunks of 1024 elements, which do not hold its 3172 elements",
        ),
        (vec![c(10, 4), c(10, 0), None], "binds array `B` as 0 chunks"),
        (vec![c(11, 2), c(10, 4), None], "binds array `A` in chunks of 2^11 elements"),
        (vec![c(10, 4), c(64, 1), None], "binds array `B` in chunks of 2^64 elements"),
        (vec![c(10, 4), c(10, 4)], "has chunks for 2 arrays"),
    ] {
        let k = with(chunks.clone());
        let e = d.launch(&k, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
        assert_eq!(e.code(), "E0417", "{chunks:?}: {e}");
        assert!(e.to_string().contains(text), "{chunks:?}: {e}");
    }
    // More storage buffers than a shader may use.
    let many = c(10, d.limits.max_storage_buffers);
    let k = with(vec![many, c(10, 4), None]);
    let e = d.launch(&k, &sk.kernel, &mut b, [1, 1, 1], 1).unwrap_err();
    assert_eq!(e.code(), "E0424");
    assert!(e.to_string().contains(&format!("needs {} storage buffers", d.limits.max_storage_buffers + 6)), "{e}");
    assert_eq!(b.array("A").unwrap(), &f32_array(n));
}

/// Launches of one shader reuse its pipeline (kept by the device); another shader gets its
/// own; results are those of fresh pipelines.
#[test]
fn pipelines_are_kept_and_reused() {
    let Some(d) = device("pipelines_are_kept_and_reused") else {
        return;
    };
    let lanes = d.subgroup_size();
    let kept = |d: &VulkanDevice| d.pipelines.lock().unwrap().map.len();
    let before = kept(&d);
    let sk = add_kernel(Scalar::F32, false, lanes);
    let k = compile(&sk).unwrap();
    let n = lanes as usize * 2;
    for _ in 0..3 {
        let mut b = bound(&sk.kernel, vec![("A", ArgValue::Array(f32_array(n)))]);
        d.launch(&k, &sk.kernel, &mut b, [2, 1, 1], 1).unwrap();
        let want: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
        assert_eq!(b.array("A").unwrap().as_f32().unwrap(), want);
        assert_eq!(kept(&d), before + 1);
    }
    let sk2 = ids_kernel(lanes);
    let k2 = compile(&sk2).unwrap();
    assert_ne!(k.words, k2.words);
    let out = ArgValue::Array(HostArray::zeros(Scalar::I32, &[lanes as u64]).unwrap());
    let mut b = bound(&sk2.kernel, vec![("out", out), ("base", ArgValue::Scalar(Const::Int(0, Scalar::I32)))]);
    d.launch(&k2, &sk2.kernel, &mut b, [1, 1, 1], 1).unwrap();
    assert_eq!(kept(&d), before + 2);
}
