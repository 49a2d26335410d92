//! Pass `lower-debug`: every `print` and `assert` of a kernel body becomes ordinary IR that
//! writes the debug buffer (the layout in `debug/mod.rs`): one atomic add reserves a record,
//! stores write the site, the program ids and the values' words. An `assert` does so only
//! when its condition is false (an `if` on a uniform scalar, so GPU control flow stays
//! uniform). The buffer becomes the kernel's last parameter (and its launch function's).
//! Debug ops left in `fn` bodies (already inlined) are dropped.

use super::{has_debug, value_words, BUFFER_PARAM, BUFFER_WORDS, HEADER_WORDS, RECORD_WORDS};
use crate::ir::*;
use crate::types::{Scalar, Type};

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for k in 0..m.kernels.len() {
        let (body, launch) = (m.kernels[k].body.index(), m.kernels[k].launch.index());
        if !has_debug(&m.funcs[body].body) {
            continue;
        }
        let f = &mut m.funcs[body];
        let buf = f.new_value(Type::Array { elem: Scalar::U32, rank: 1, mutable: true });
        f.body.params.push(buf);
        let l = &mut m.funcs[launch];
        let lp = l.new_value(Type::Array { elem: Scalar::U32, rank: 1, mutable: true });
        l.body.params.push(lp);
        m.kernels[k].params.push(KernelParam {
            name: BUFFER_PARAM.to_string(),
            kind: ParamKind::Array {
                elem: Scalar::U32,
                dims: vec![Dim::Fixed(BUFFER_WORDS)],
                mutable: true,
                optional: false,
            },
        });
        let grid_rank = m.kernels[k].grid_rank;
        let f = &mut m.funcs[body];
        let mut region = std::mem::take(&mut f.body);
        let mut b = B { f, buf, grid_rank, out: Vec::new(), loc: Loc::default() };
        b.region(&mut region, &m.debug);
        m.funcs[body].body = region;
    }
    // What is left is in `fn`s, inlined already, and kernels of no use.
    super::strip(m, super::DebugOptions { prints: false, asserts: false });
}

/// Emits the replacement ops of one function.
struct B<'f> {
    f: &'f mut Function,
    buf: Value,
    grid_rank: u8,
    out: Vec<Op>,
    loc: Loc,
}

impl B<'_> {
    /// Rewrites the debug ops of `r` and its nested regions in place.
    fn region(&mut self, r: &mut Region, sites: &[super::DebugSite]) {
        let old = std::mem::take(&mut r.ops);
        for mut op in old {
            for reg in &mut op.regions {
                self.region(reg, sites);
            }
            self.loc = op.loc;
            match op.kind {
                OpKind::Print(site) => {
                    let words = sites.get(site as usize).map_or(0, |s| s.payload_words());
                    let base = self.reserve(site, words);
                    let mut off = RECORD_WORDS;
                    for &v in &op.args {
                        let ty = self.f.ty(v).clone();
                        for (part, n) in self.words(v, &ty) {
                            self.store(base, off, part);
                            off += n;
                        }
                    }
                    r.ops.append(&mut self.out);
                }
                OpKind::Assert(site) => {
                    let cond = op.args[0];
                    let yield0 =
                        || Op { kind: OpKind::Yield, args: vec![], results: vec![], regions: vec![], loc: op.loc };
                    let failed_count = self.i32c(2);
                    self.rmw_add(failed_count, 1);
                    self.reserve(site, 0);
                    let mut failed = std::mem::take(&mut self.out);
                    failed.push(yield0());
                    let then = Region { params: vec![], ops: vec![yield0()] };
                    let els = Region { params: vec![], ops: failed };
                    r.ops.push(Op {
                        kind: OpKind::If,
                        args: vec![cond],
                        results: vec![],
                        regions: vec![then, els],
                        loc: op.loc,
                    });
                }
                _ => r.ops.push(op),
            }
        }
    }

    fn op(&mut self, kind: OpKind, args: Vec<Value>, ty: Option<Scalar>) -> Value {
        let results: Vec<Value> = ty.map(|s| self.f.new_value(Type::Scalar(s))).into_iter().collect();
        let v = results.first().copied().unwrap_or(Value(u32::MAX));
        self.out.push(Op { kind, args, results, regions: vec![], loc: self.loc });
        v
    }

    fn i32c(&mut self, v: i64) -> Value {
        self.op(OpKind::Const(Const::Int(v, Scalar::I32)), vec![], Some(Scalar::I32))
    }

    fn u32c(&mut self, v: i64) -> Value {
        self.op(OpKind::Const(Const::Int(v, Scalar::U32)), vec![], Some(Scalar::U32))
    }

    /// `buf[at] += n` (atomically); the old value.
    fn rmw_add(&mut self, at: Value, n: i64) -> Value {
        let n = self.u32c(n);
        self.op(OpKind::AtomicRmw(Rmw::Add), vec![self.buf, at, n], Some(Scalar::U32))
    }

    /// Reserves a record of `site` with `payload` words and writes its site and program ids;
    /// the record's first word's index (outside the buffer when it did not fit).
    fn reserve(&mut self, site: u32, payload: u32) -> Value {
        let started = self.i32c(1);
        self.rmw_add(started, 1);
        let reserved = self.i32c(0);
        let old = self.rmw_add(reserved, (RECORD_WORDS + payload) as i64);
        // Past 2^31 words the index wraps negative: outside the buffer, as it should be.
        let old = self.op(OpKind::Cast(Scalar::I32), vec![old], Some(Scalar::I32));
        let header = self.i32c(HEADER_WORDS as i64);
        let base = self.op(OpKind::Bin(BinOp::Add), vec![old, header], Some(Scalar::I32));
        // A record that does not fit is not written at all: its first word moves out of the
        // buffer with it, so the host never reads a partial record.
        let end = self.i32c((RECORD_WORDS + payload) as i64);
        let last = self.op(OpKind::Bin(BinOp::Add), vec![base, end], Some(Scalar::I32));
        let cap = self.i32c(BUFFER_WORDS as i64);
        let fits = self.op(OpKind::Cmp(CmpOp::Le), vec![last, cap], Some(Scalar::Bool));
        let outside = self.i32c(-(1 << 30));
        let base = self.op(OpKind::Select, vec![fits, base, outside], Some(Scalar::I32));
        let s = self.u32c(site as i64);
        self.store(base, 0, s);
        for axis in 0..self.grid_rank {
            let pid = self.op(OpKind::ProgramId(axis), vec![], Some(Scalar::I32));
            let pid = self.op(OpKind::Cast(Scalar::U32), vec![pid], Some(Scalar::U32));
            self.store(base, 1 + axis as u32, pid);
        }
        base
    }

    /// Stores `v` (a `u32` scalar or tile) at `buf[base + off ..]`, row by row for a matrix.
    fn store(&mut self, base: Value, off: u32, v: Value) {
        let ty = self.f.ty(v).clone();
        match ty {
            Type::Tile { shape, .. } if shape.len() == 2 => {
                for row in 0..shape[0] {
                    let k = self.i32c(row as i64);
                    let line = self.f.new_value(Type::Tile { elem: Scalar::U32, shape: vec![shape[1]] });
                    self.out.push(Op {
                        kind: OpKind::ExtractLine(0),
                        args: vec![v, k],
                        results: vec![line],
                        regions: vec![],
                        loc: self.loc,
                    });
                    self.store(base, off + row * shape[1], line);
                }
            }
            Type::Tile { shape, .. } => {
                let at = self.at(base, off);
                self.op(OpKind::Store(vec![Index::Slice(shape[0])]), vec![self.buf, at, v], None);
            }
            _ => {
                let at = self.at(base, off);
                self.op(OpKind::Store(vec![Index::At]), vec![self.buf, at, v], None);
            }
        }
    }

    fn at(&mut self, base: Value, off: u32) -> Value {
        if off == 0 {
            return base;
        }
        let o = self.i32c(off as i64);
        self.op(OpKind::Bin(BinOp::Add), vec![base, o], Some(Scalar::I32))
    }

    /// The `u32` words of value `v` of type `ty`: one part (a scalar or a tile of the value's
    /// shape) per word of an element (two for 64-bit elements: low words, then high), with
    /// the number of words of each part.
    fn words(&mut self, v: Value, ty: &Type) -> Vec<(Value, u32)> {
        let elem = ty.elem();
        let n = ty.tile_len();
        let parts = (value_words(ty) / n.max(1)) as usize;
        let Type::Tile { shape, .. } = ty else {
            return self.scalar_words(v, elem).into_iter().map(|w| (w, 1)).collect();
        };
        (0..parts)
            .map(|part| {
                // A map per part: the element's word `part`.
                let x = self.f.new_value(Type::Scalar(elem));
                let outer = std::mem::take(&mut self.out);
                let ws = self.scalar_words(x, elem);
                let mut ops = std::mem::replace(&mut self.out, outer);
                ops.push(Op {
                    kind: OpKind::Yield,
                    args: vec![ws[part]],
                    results: vec![],
                    regions: vec![],
                    loc: self.loc,
                });
                let res = self.f.new_value(Type::Tile { elem: Scalar::U32, shape: shape.clone() });
                self.out.push(Op {
                    kind: OpKind::Map,
                    args: vec![v],
                    results: vec![res],
                    regions: vec![Region { params: vec![x], ops }],
                    loc: self.loc,
                });
                (res, n)
            })
            .collect()
    }

    /// The `u32` words of scalar `x` of type `elem` (low word first).
    fn scalar_words(&mut self, x: Value, elem: Scalar) -> Vec<Value> {
        use Scalar::*;
        match elem {
            U32 => vec![x],
            I32 => vec![self.op(OpKind::Cast(U32), vec![x], Some(U32))],
            F32 => vec![self.op(OpKind::Bitcast(U32), vec![x], Some(U32))],
            Bool => {
                let (one, zero) = (self.u32c(1), self.u32c(0));
                vec![self.op(OpKind::Select, vec![x, one, zero], Some(U32))]
            }
            F64 => {
                let bits = self.op(OpKind::Bitcast(I64), vec![x], Some(I64));
                self.scalar_words(bits, I64)
            }
            I64 => {
                // Without shifts: the low word wraps; the rest, an exact multiple of 2^32
                // (the low bits cleared, never below i64::MIN), divided by 2^32.
                let lo = self.op(OpKind::Cast(U32), vec![x], Some(U32));
                let lo64 = self.op(OpKind::Cast(I64), vec![lo], Some(I64));
                let high = self.op(OpKind::Bin(BinOp::Sub), vec![x, lo64], Some(I64));
                let two32 = self.op(OpKind::Const(Const::Int(1 << 32, I64)), vec![], Some(I64));
                let q = self.op(OpKind::Bin(BinOp::Div), vec![high, two32], Some(I64));
                let hi = self.op(OpKind::Cast(U32), vec![q], Some(U32));
                vec![lo, hi]
            }
            F16 | BF16 => unreachable!("storage types are loaded as f32"),
        }
    }
}
