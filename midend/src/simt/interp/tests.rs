//! Tests of the SIMT interpreter on hand-built SIMT functions.

use super::*;
use crate::ir::{CmpOp, Fill, FuncId, FuncKind, Kernel, Loc};

const I32: Scalar = Scalar::I32;
const F32: Scalar = Scalar::F32;
const F64: Scalar = Scalar::F64;

/// Builds SIMT kernels by hand; ops go to the innermost open region.
struct B {
    f: Function,
    open: Vec<Vec<Op>>,
}

impl B {
    fn new(params: &[Type]) -> B {
        let mut f = Function::new("k", FuncKind::Kernel);
        for t in params {
            let v = f.new_value(t.clone());
            f.body.params.push(v);
        }
        B { f, open: vec![Vec::new()] }
    }

    fn p(&self, i: usize) -> Value {
        self.f.params()[i]
    }

    fn val(&mut self, ty: Type) -> Value {
        self.f.new_value(ty)
    }

    fn op(&mut self, kind: OpKind, args: &[Value], results: &[Value], regions: Vec<Region>) {
        self.open.last_mut().unwrap().push(Op {
            kind,
            args: args.to_vec(),
            results: results.to_vec(),
            regions,
            loc: Loc::default(),
        });
    }

    fn push(&mut self, kind: OpKind, args: &[Value], ty: Scalar) -> Value {
        let r = self.val(Type::Scalar(ty));
        self.op(kind, args, &[r], vec![]);
        r
    }

    fn c(&mut self, c: Const) -> Value {
        self.push(OpKind::Const(c), &[], c.ty())
    }

    fn i32(&mut self, v: i64) -> Value {
        self.c(Const::Int(v, I32))
    }

    fn bin(&mut self, op: BinOp, a: Value, b: Value, ty: Scalar) -> Value {
        self.push(OpKind::Bin(op), &[a, b], ty)
    }

    fn lane(&mut self) -> Value {
        self.push(OpKind::LaneId, &[], I32)
    }

    fn store(&mut self, arr: Value, idx: &[Value], v: Value) {
        let mut args = vec![arr];
        args.extend_from_slice(idx);
        args.push(v);
        self.op(OpKind::Store(vec![Index::At; idx.len()]), &args, &[], vec![]);
    }

    fn load(&mut self, arr: Value, idx: &[Value], ty: Scalar) -> Value {
        let mut args = vec![arr];
        args.extend_from_slice(idx);
        self.push(OpKind::Load(vec![Index::At; idx.len()]), &args, ty)
    }

    fn begin(&mut self) {
        self.open.push(Vec::new());
    }

    /// Closes the innermost region, ending it with `term` of `args`.
    fn end(&mut self, params: Vec<Value>, term: OpKind, args: &[Value]) -> Region {
        self.op(term, args, &[], vec![]);
        Region { params, ops: self.open.pop().unwrap() }
    }

    fn kernel(mut self, lanes: u32) -> SimtKernel {
        self.op(OpKind::Return, &[], &[], vec![]);
        self.f.body.ops = self.open.pop().unwrap();
        SimtKernel {
            kernel: Kernel {
                name: "k".into(),
                symbol: "k".into(),
                params: vec![],
                body: FuncId(0),
                launch: FuncId(0),
                grid_rank: 1,
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

fn arr(elem: Scalar, rank: u8) -> Type {
    Type::Array { elem, rank, mutable: true }
}

fn i32_bytes(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn i32s(b: &[u8]) -> Vec<i32> {
    b.chunks(4).map(|c| i32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn f32s(b: &[u8]) -> Vec<f32> {
    b.chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn array<'a>(elem: Scalar, dims: &[u64], data: &'a mut [u8]) -> InterpArg<'a> {
    InterpArg::Array { elem, dims: dims.to_vec(), data }
}

/// ids[p * 8 + l] = l; rot[p * 8 + l] = value of lane (l + 1) % 8, where lane l holds
/// 10 l + 100 p.
#[test]
fn lane_ids_and_shuffle_rotation() {
    let mut b = B::new(&[arr(I32, 1), arr(I32, 1)]);
    let (ids, rot) = (b.p(0), b.p(1));
    let lane = b.lane();
    let pid = b.push(OpKind::ProgramId(0), &[], I32);
    let (one, eight, ten, hundred) = (b.i32(1), b.i32(8), b.i32(10), b.i32(100));
    let base = b.bin(BinOp::Mul, pid, hundred, I32);
    let v = b.push(OpKind::Fma, &[lane, ten, base], I32);
    let next = b.bin(BinOp::Add, lane, one, I32);
    let src = b.bin(BinOp::Rem, next, eight, I32);
    let s = b.push(OpKind::Shuffle, &[v, src], I32);
    let at = b.push(OpKind::Fma, &[pid, eight, lane], I32);
    b.store(ids, &[at], lane);
    b.store(rot, &[at], s);
    let k = b.kernel(8);
    let (mut d0, mut d1) = (vec![0u8; 64], vec![0u8; 64]);
    run(&k, &mut [array(I32, &[16], &mut d0), array(I32, &[16], &mut d1)], [2, 1, 1]).unwrap();
    let want_ids: Vec<i32> = (0..16).map(|i| i % 8).collect();
    let want_rot: Vec<i32> = (0..16).map(|i| (i / 8) * 100 + ((i + 1) % 8) * 10).collect();
    assert_eq!(i32s(&d0), want_ids);
    assert_eq!(i32s(&d1), want_rot);
}

#[test]
fn shuffle_from_a_lane_out_of_range_is_an_error() {
    let mut b = B::new(&[]);
    let lane = b.lane();
    let one = b.i32(1);
    let src = b.bin(BinOp::Add, lane, one, I32);
    b.push(OpKind::Shuffle, &[lane, src], I32);
    let e = run(&b.kernel(4), &mut [], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("shuffle"), "{e}");
    assert!(e.to_string().contains("lane 3 reads lane"), "{e}");
}

/// out[l] = sum over iv in 1, 3, 5, 7 of (iv + l).
#[test]
fn for_loop_with_carried_value() {
    let mut b = B::new(&[arr(I32, 1)]);
    let out = b.p(0);
    let lane = b.lane();
    let (lo, hi, step, zero) = (b.i32(1), b.i32(8), b.i32(2), b.i32(0));
    let (iv, acc) = (b.val(Type::Scalar(I32)), b.val(Type::Scalar(I32)));
    let res = b.val(Type::Scalar(I32));
    b.begin();
    let t = b.bin(BinOp::Add, acc, iv, I32);
    let t = b.bin(BinOp::Add, t, lane, I32);
    let body = b.end(vec![iv, acc], OpKind::Yield, &[t]);
    b.op(OpKind::For, &[lo, hi, step, zero], &[res], vec![body]);
    b.store(out, &[lane], res);
    let mut d = vec![0u8; 16];
    run(&b.kernel(4), &mut [array(I32, &[4], &mut d)], [1, 1, 1]).unwrap();
    assert_eq!(i32s(&d), vec![16, 20, 24, 28]);
}

/// for iv in 0..10 { out[iv] = iv; if iv == 3 { return } }: stops after iteration 3.
#[test]
fn return_inside_a_loop_ends_the_program() {
    let mut b = B::new(&[arr(I32, 1)]);
    let out = b.p(0);
    let (lo, hi, step, three) = (b.i32(0), b.i32(10), b.i32(1), b.i32(3));
    let iv = b.val(Type::Scalar(I32));
    b.begin();
    b.store(out, &[iv], iv);
    let is3 = b.push(OpKind::Cmp(CmpOp::Eq), &[iv, three], Scalar::Bool);
    b.begin();
    let then = b.end(vec![], OpKind::Return, &[]);
    b.begin();
    let els = b.end(vec![], OpKind::Yield, &[]);
    b.op(OpKind::If, &[is3], &[], vec![then, els]);
    let body = b.end(vec![iv], OpKind::Yield, &[]);
    b.op(OpKind::For, &[lo, hi, step], &[], vec![body]);
    let last = b.i32(9);
    b.store(out, &[last], last);
    let mut d = i32_bytes(&[-1; 10]);
    run(&b.kernel(2), &mut [array(I32, &[10], &mut d)], [1, 1, 1]).unwrap();
    assert_eq!(i32s(&d), vec![0, 1, 2, 3, -1, -1, -1, -1, -1, -1]);
}

/// y[l] = x[l - 1, 2] (0 out of bounds), then y[l + 3] = 99 and y[l - 10] = 7 (only lane 0
/// of the first is in bounds).
#[test]
fn out_of_bounds_load_reads_zero_and_store_is_skipped() {
    let mut b = B::new(&[arr(F32, 2), arr(F32, 1)]);
    let (x, y) = (b.p(0), b.p(1));
    let lane = b.lane();
    let (one, two, three, ten) = (b.i32(1), b.i32(2), b.i32(3), b.i32(10));
    let row = b.bin(BinOp::Sub, lane, one, I32);
    let v = b.load(x, &[row, two], F32);
    b.store(y, &[lane], v);
    let at = b.bin(BinOp::Add, lane, three, I32);
    let c99 = b.c(Const::Float(99.0, F32));
    b.store(y, &[at], c99);
    let neg = b.bin(BinOp::Sub, lane, ten, I32);
    let c7 = b.c(Const::Float(7.0, F32));
    b.store(y, &[neg], c7);
    let mut dx = f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let mut dy = f32_bytes(&[-1.0; 4]);
    run(&b.kernel(4), &mut [array(F32, &[2, 3], &mut dx), array(F32, &[4], &mut dy)], [1, 1, 1]).unwrap();
    assert_eq!(f32s(&dy), vec![0.0, 3.0, 6.0, 99.0]);
}

/// out[l] = x[l] if in bounds, else 100 l.
#[test]
fn load_into_keeps_old() {
    let mut b = B::new(&[arr(I32, 1), arr(I32, 1)]);
    let (x, out) = (b.p(0), b.p(1));
    let lane = b.lane();
    let hundred = b.i32(100);
    let old = b.bin(BinOp::Mul, lane, hundred, I32);
    let v = b.push(OpKind::LoadInto(vec![Index::At]), &[old, x, lane], I32);
    b.store(out, &[lane], v);
    let mut dx = i32_bytes(&[7, 8]);
    let mut d = vec![0u8; 16];
    run(&b.kernel(4), &mut [array(I32, &[2], &mut dx), array(I32, &[4], &mut d)], [1, 1, 1]).unwrap();
    assert_eq!(i32s(&d), vec![7, 8, 200, 300]);
}

/// Every lane of 3 programs adds its id to out[l % 2]; adds to out[l + 2] are skipped.
#[test]
fn atomic_add_from_all_lanes() {
    let mut b = B::new(&[arr(F64, 1)]);
    let out = b.p(0);
    let lane = b.lane();
    let two = b.i32(2);
    let at = b.bin(BinOp::Rem, lane, two, I32);
    let v = b.push(OpKind::Cast(F64), &[lane], F64);
    b.op(OpKind::AtomicAdd(vec![Index::At]), &[out, at, v], &[], vec![]);
    let oob = b.bin(BinOp::Add, lane, two, I32);
    b.op(OpKind::AtomicAdd(vec![Index::At]), &[out, oob, v], &[], vec![]);
    let mut d = vec![0u8; 16];
    run(&b.kernel(32), &mut [array(F64, &[2], &mut d)], [3, 1, 1]).unwrap();
    let got: Vec<f64> = d.chunks(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(got, vec![3.0 * 240.0, 3.0 * 256.0]);
}

/// out[l] = if cond { 1 } else { 2 }.
fn if_kernel(divergent: bool) -> SimtKernel {
    let mut b = B::new(&[arr(I32, 1)]);
    let out = b.p(0);
    let lane = b.lane();
    let pid = b.push(OpKind::ProgramId(0), &[], I32);
    let two = b.i32(2);
    let x = if divergent { lane } else { pid };
    let cond = b.push(OpKind::Cmp(CmpOp::Lt), &[x, two], Scalar::Bool);
    let r = b.val(Type::Scalar(I32));
    b.begin();
    let one = b.i32(1);
    let then = b.end(vec![], OpKind::Yield, &[one]);
    b.begin();
    let els = b.end(vec![], OpKind::Yield, &[two]);
    b.op(OpKind::If, &[cond], &[r], vec![then, els]);
    b.store(out, &[lane], r);
    b.kernel(4)
}

#[test]
fn divergent_if_is_an_error() {
    let mut d = vec![0u8; 16];
    let e = run(&if_kernel(true), &mut [array(I32, &[4], &mut d)], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("divergent control flow"), "{e}");
    run(&if_kernel(false), &mut [array(I32, &[4], &mut d)], [1, 1, 1]).unwrap();
    assert_eq!(i32s(&d), vec![1; 4]);
}

#[test]
fn divergent_loop_bound_is_an_error() {
    let mut b = B::new(&[]);
    let lane = b.lane();
    let (lo, step) = (b.i32(0), b.i32(1));
    let iv = b.val(Type::Scalar(I32));
    b.begin();
    let body = b.end(vec![iv], OpKind::Yield, &[]);
    b.op(OpKind::For, &[lo, lane, step], &[], vec![body]);
    let e = run(&b.kernel(2), &mut [], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("divergent control flow"), "{e}");
    assert!(e.to_string().contains("upper bound"), "{e}");
}

/// k = 0; while k < n { k += 1 }; out[l] = k.
#[test]
fn while_loop() {
    let mut b = B::new(&[arr(I32, 1), Type::Scalar(I32)]);
    let (out, n) = (b.p(0), b.p(1));
    let lane = b.lane();
    let (zero, one) = (b.i32(0), b.i32(1));
    let (k0, k1, res) = (b.val(Type::Scalar(I32)), b.val(Type::Scalar(I32)), b.val(Type::Scalar(I32)));
    b.begin();
    let c = b.push(OpKind::Cmp(CmpOp::Lt), &[k0, n], Scalar::Bool);
    let before = b.end(vec![k0], OpKind::Yield, &[c]);
    b.begin();
    let k2 = b.bin(BinOp::Add, k1, one, I32);
    let body = b.end(vec![k1], OpKind::Yield, &[k2]);
    b.op(OpKind::While, &[zero], &[res], vec![before, body]);
    b.store(out, &[lane], res);
    let mut d = vec![0u8; 12];
    let k = b.kernel(3);
    run(&k, &mut [array(I32, &[3], &mut d), InterpArg::Scalar(Const::Int(5, I32))], [1, 1, 1]).unwrap();
    assert_eq!(i32s(&d), vec![5; 3]);
    let e = run(&k, &mut [array(I32, &[3], &mut d)], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("takes 2 arguments"), "{e}");
}

/// s[l] = l; barrier; out[l] = s[(l + 1) % 8].
#[test]
fn shared_array_rotation() {
    let mut b = B::new(&[arr(F32, 1)]);
    let out = b.p(0);
    let s = b.val(arr(F32, 1));
    b.op(OpKind::AllocShared(vec![8]), &[], &[s], vec![]);
    let lane = b.lane();
    let lf = b.push(OpKind::Cast(F32), &[lane], F32);
    b.store(s, &[lane], lf);
    b.op(OpKind::Barrier, &[], &[], vec![]);
    let (one, eight) = (b.i32(1), b.i32(8));
    let next = b.bin(BinOp::Add, lane, one, I32);
    let src = b.bin(BinOp::Rem, next, eight, I32);
    let v = b.load(s, &[src], F32);
    b.store(out, &[lane], v);
    let mut d = vec![0u8; 32];
    run(&b.kernel(8), &mut [array(F32, &[8], &mut d)], [1, 1, 1]).unwrap();
    assert_eq!(f32s(&d), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 0.0]);
}

#[test]
fn tile_ops_are_rejected() {
    let mut b = B::new(&[]);
    let t = b.val(Type::Tile { elem: F32, shape: vec![4, 4] });
    b.op(OpKind::Fill(Fill::Zeros), &[], &[t], vec![]);
    let e = run(&b.kernel(4), &mut [], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("op `fill.zeros` is not allowed in SIMT form"), "{e}");
}

#[test]
fn bad_arguments_are_rejected() {
    let k = B::new(&[arr(F32, 1)]).kernel(1);
    let mut d = vec![0u8; 12];
    let e = run(&k, &mut [array(F32, &[4], &mut d)], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("has 12 bytes"), "{e}");
    let e = run(&k, &mut [array(I32, &[3], &mut d)], [1, 1, 1]).unwrap_err();
    assert!(e.to_string().contains("parameter type"), "{e}");
}
