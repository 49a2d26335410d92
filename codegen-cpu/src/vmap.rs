//! `map` on 128-bit vectors with Cranelift: the region (after `fuse-maps`, the body of a chain
//! of `where`s, comparisons, casts and arithmetic) is lowered once per vector of 4 (`f32`,
//! `i32`, `u32`) or 2 (`f64`, `i64`) elements, and the elements that do not fill a vector
//! take the scalar loop of `lower.rs`.
//!
//! Inside the region a `bool` is a lane mask of the region's width (all ones or zero).
//! Arithmetic, comparisons, selects, `fma`, logic on masks, the `f32`/`i32` casts, 32-bit
//! integer `/` and `%` by a constant power of two (shifts) and the `f32` `exp`, `tanh`, `sin`
//! and `cos` (`expf.rs`, `tanhf.rs`, `sinf.rs`) are vector instructions with the scalar code's
//! semantics (the same results, per lane); every other op (the C library's functions, other
//! integer division, the other casts) is computed lane by lane by the scalar lowering itself,
//! so no result changes.
//! A `bool` operand tile (one byte per element, 0 or 1) is widened into mask lanes as it is
//! loaded, and a `bool` result is stored back one byte per lane. An `if` in the region
//! (`guard-select`'s, around a costly function such as `sin`) computes both branches on the
//! vector and selects by the condition's mask. A region whose values are not all of one width
//! keeps the scalar loop.

use crate::lower::{Held, Lower};
use crate::memory::flags;
use crate::CodegenError;
use cranelift_codegen::ir::{self, condcodes::IntCC, types, Endianness, InstBuilder, MemFlagsData};
use cranelift_module::Module as ClModule;
use std::collections::HashSet;
use tilec_midend::{BinOp, CmpOp, Const, Op, OpKind, Region, Scalar, Type, UnOp, Value};

/// The byte width of a region's lanes, if every value of `map` op `op`'s region (and the
/// tiles it reads and writes) has one: 4 or 8. `None` keeps the scalar loop.
pub(crate) fn lane_bytes(f: &tilec_midend::Function, op: &Op) -> Option<u32> {
    let r = &op.regions[0];
    let mut width = None;
    let mut same = |s: Scalar| -> bool {
        if s == Scalar::Bool {
            return true;
        }
        let b = s.bytes();
        (b == 4 || b == 8) && !s.is_half() && *width.get_or_insert(b) == b
    };
    for s in op.args.iter().chain(&op.results).map(|v| f.ty(*v).elem()) {
        if !same(s) {
            return None;
        }
    }
    if !ops_of_one_width(f, r, &mut same) {
        return None;
    }
    // A region of library calls alone (softmax's `exp`) gains nothing from vectors.
    let bytes = width?;
    // Nor does an `if` whose branches call the library lane by lane: both branches would run
    // on every lane (causal softmax's f64 `exp` for the masked elements too).
    if !branches_vectorize(f, r, bytes) {
        return None;
    }
    r.ops.iter().any(|o| o.kind != OpKind::Yield && vector_form(f, o, bytes)).then_some(bytes)
}

/// Whether every op of region `r` is a scalar op whose values `same` admits (one width), or
/// an `if` of such values whose two branches are such regions (`guard-select`'s: they are
/// computed both, and their results selected lane by lane).
fn ops_of_one_width(f: &tilec_midend::Function, r: &Region, same: &mut dyn FnMut(Scalar) -> bool) -> bool {
    r.ops.iter().all(|o| match o.kind {
        OpKind::Yield => true,
        OpKind::If => {
            o.regions.len() == 2
                && !o.results.is_empty()
                && o.args.iter().chain(&o.results).all(|v| matches!(f.ty(*v), Type::Scalar(s) if same(*s)))
                && o.regions.iter().all(|b| ops_of_one_width(f, b, same))
        }
        _ => f.is_scalar_op(o) && o.args.iter().chain(&o.results).all(|v| same(f.ty(*v).elem())),
    })
}

/// Whether every op in the branches of region `r`'s `if`s has a vector instruction.
fn branches_vectorize(f: &tilec_midend::Function, r: &Region, bytes: u32) -> bool {
    r.ops.iter().filter(|o| o.kind == OpKind::If).all(|o| {
        o.regions.iter().all(|b| {
            b.ops.iter().all(|x| match x.kind {
                OpKind::Yield => true,
                OpKind::If => branches_vectorize(f, b, bytes),
                _ => vector_form(f, x, bytes),
            })
        })
    })
}

/// Whether op `o` of a region of `bytes`-wide lanes has a vector instruction
/// ([`Lower::vector_op`]); the others are computed lane by lane.
fn vector_form(f: &tilec_midend::Function, o: &Op, bytes: u32) -> bool {
    let Some(res) = o.results.first() else { return false };
    let rt = f.ty(*res).elem();
    let arg = |k: usize| f.ty(o.args[k]).elem();
    match &o.kind {
        OpKind::Const(_) | OpKind::Select | OpKind::Un(UnOp::Not) => true,
        OpKind::Bin(k) if rt == Scalar::Bool => matches!(k, BinOp::And | BinOp::Or),
        OpKind::Bin(BinOp::Div | BinOp::Rem) if bytes == 4 && !rt.is_float() => pow2_divisor(f, o.args[1]).is_some(),
        OpKind::Bin(k) => vector_bin(*k, rt),
        OpKind::Un(k) => vector_un(*k, rt),
        OpKind::Fma => rt.is_float(),
        OpKind::Cmp(_) => arg(0).is_float() || bytes == 4,
        OpKind::Cast(to) => vector_cast(arg(0), *to),
        _ => false,
    }
}

/// `m` where `v` is the integer constant `2^m`, `1 <= m <= 30`: a divisor that 32-bit integer
/// division and remainder take as shifts on vectors.
fn pow2_divisor(f: &tilec_midend::Function, v: Value) -> Option<u32> {
    let c = f.body.int_const(v)?;
    ((2..=1 << 30).contains(&c) && c.count_ones() == 1).then(|| c.trailing_zeros())
}

/// The values region `r`'s ops (those of its branches too) read that are defined outside it
/// (scalars of the kernel).
fn captured(r: &Region) -> Vec<Value> {
    fn walk(r: &Region, inside: &mut HashSet<Value>, out: &mut Vec<Value>) {
        inside.extend(r.params.iter().copied());
        for o in &r.ops {
            for a in &o.args {
                if !inside.contains(a) && !out.contains(a) {
                    out.push(*a);
                }
            }
            for b in &o.regions {
                walk(b, inside, out);
            }
            inside.extend(o.results.iter().copied());
        }
    }
    let (mut inside, mut out) = (HashSet::new(), Vec::new());
    walk(r, &mut inside, &mut out);
    out
}

pub(crate) fn little() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// The vector type of `s` in a region of `bytes`-wide lanes (`bool`: the mask).
    fn lane_ty(s: Scalar, bytes: u32) -> ir::Type {
        match (s, bytes) {
            (Scalar::Bool, 4) => types::I32X4,
            (Scalar::Bool, _) => types::I64X2,
            _ => crate::tile::vec_ty(s).expect("a 32- or 64-bit type"),
        }
    }

    /// The elements `0 .. n - n % lanes` of `map` op `op` (region lanes `bytes` wide), one
    /// vector at a time; returns how many elements it did.
    pub(crate) fn map_vectors(
        &mut self,
        op: &Op,
        bytes: u32,
        srcs: &[(ir::Value, Scalar)],
    ) -> Result<u32, CodegenError> {
        let n = self.f.ty(op.args[0]).tile_len();
        let lanes = 16 / bytes;
        let chunks = n / lanes;
        if chunks == 0 {
            return Ok(0);
        }
        let r = &op.regions[0];
        // Captured scalars as splats (saved, restored after the loop).
        let caps = captured(r);
        let saved: Vec<(Value, Held)> = caps.iter().map(|v| (*v, self.held_of(*v))).collect();
        for v in &caps {
            let s = self.f.ty(*v).elem();
            let x = self.val(*v);
            let x = if s == Scalar::Bool { self.mask_of(x, bytes) } else { x };
            let vt = Self::lane_ty(s, bytes);
            let sp = self.b.ins().splat(vt, x);
            self.bind(*v, sp);
        }
        let rt = self.f.ty(op.results[0]).elem();
        let dst = self.tile_addr(op.results[0]);
        let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, chunks as i64));
        let mut res = Ok(());
        self.dyn_loop(lo, hi, |l, c| {
            let off = l.b.ins().imul_imm_s(c, 16);
            let bool_off = l.b.ins().imul_imm_s(c, i64::from(lanes));
            for ((src, s), p) in srcs.iter().zip(&r.params) {
                let x = if *s == Scalar::Bool {
                    let a = l.b.ins().iadd(*src, bool_off);
                    l.load_masks(a, bytes)
                } else {
                    let a = l.b.ins().iadd(*src, off);
                    l.b.ins().load(Self::lane_ty(*s, bytes), flags(), a, 0)
                };
                l.bind(*p, x);
            }
            for o in &r.ops {
                if o.kind == OpKind::Yield {
                    let y = l.val(o.args[0]);
                    if rt == Scalar::Bool {
                        let d = l.b.ins().iadd(dst, bool_off);
                        l.store_masks(y, d, bytes);
                    } else {
                        let d = l.b.ins().iadd(dst, off);
                        l.b.ins().store(flags(), y, d, 0);
                    }
                    continue;
                }
                if let Err(e) = l.vector_op(o, bytes) {
                    res = Err(e);
                    return;
                }
            }
        });
        for (v, h) in saved {
            self.rebind(v, h);
        }
        res.map(|()| chunks * lanes)
    }

    /// `16 / bytes` `bool` elements (bytes of 0 or 1) at `a` as one mask vector of
    /// `bytes`-wide lanes: the bytes are loaded as one integer, zero-extended lane by lane and
    /// negated (1 becomes all ones).
    fn load_masks(&mut self, a: ir::Value, bytes: u32) -> ir::Value {
        let (it, vt) = if bytes == 4 { (types::I32, types::I32X4) } else { (types::I16, types::I16X8) };
        let x = self.b.ins().load(it, flags(), a, 0);
        let x = self.b.ins().scalar_to_vector(vt, x);
        let mut x = self.b.ins().bitcast(types::I8X16, little(), x);
        let mask = Self::lane_ty(Scalar::Bool, bytes);
        while self.b.func.dfg.value_type(x) != mask {
            x = self.b.ins().uwiden_low(x);
        }
        self.b.ins().ineg(x)
    }

    /// Mask vector `m` (`bytes`-wide lanes) stored as `16 / bytes` `bool` bytes at `d`.
    fn store_masks(&mut self, m: ir::Value, d: ir::Value, bytes: u32) {
        for j in 0..16 / bytes {
            let x = self.b.ins().extractlane(m, j as u8);
            let x = self.b.ins().band_imm_u(x, 1);
            self.b.ins().istore8(flags(), x, d, j as i32);
        }
    }

    /// A `bool` scalar as a mask lane of `bytes` width (all ones or zero).
    fn mask_of(&mut self, b: ir::Value, bytes: u32) -> ir::Value {
        let t = if bytes == 4 { types::I32 } else { types::I64 };
        let (yes, no) = (self.b.ins().iconst(t, -1), self.b.ins().iconst(t, 0));
        self.b.ins().select(b, yes, no)
    }

    /// One op of a vectorized `map` region: a vector instruction, or the scalar lowering lane
    /// by lane.
    fn vector_op(&mut self, o: &Op, bytes: u32) -> Result<(), CodegenError> {
        if o.kind == OpKind::If {
            return self.vector_if(o, bytes);
        }
        if !vector_form(self.f, o, bytes) {
            return self.lanewise(o, bytes);
        }
        let rt = self.f.ty(o.results[0]).elem();
        let arg = |l: &mut Self, k: usize| l.val(o.args[k]);
        let v = match &o.kind {
            OpKind::Const(c) => {
                let x = match (rt, c) {
                    (Scalar::Bool, Const::Bool(b)) => self.b.ins().iconst(cl_type_w(bytes), -i64::from(*b)),
                    _ => self.const_val(*c, rt),
                };
                self.b.ins().splat(Self::lane_ty(rt, bytes), x)
            }
            OpKind::Bin(k) if rt == Scalar::Bool && matches!(k, BinOp::And | BinOp::Or) => {
                let (a, b) = (arg(self, 0), arg(self, 1));
                if *k == BinOp::And {
                    self.b.ins().band(a, b)
                } else {
                    self.b.ins().bor(a, b)
                }
            }
            OpKind::Bin(k @ (BinOp::Div | BinOp::Rem)) if !rt.is_float() => {
                let m = pow2_divisor(self.f, o.args[1]).expect("vector_form admits powers of two");
                let a = arg(self, 0);
                self.div_pow2(*k, rt, a, m)
            }
            OpKind::Bin(k) => {
                let (a, b) = (arg(self, 0), arg(self, 1));
                self.bin(*k, rt, a, b)
            }
            OpKind::Un(UnOp::Not) => {
                let a = arg(self, 0);
                self.b.ins().bnot(a)
            }
            OpKind::Un(k) => {
                let a = arg(self, 0);
                self.unary(*k, rt, a)?
            }
            OpKind::Fma => {
                let (a, b, c) = (arg(self, 0), arg(self, 1), arg(self, 2));
                self.fma(a, b, c)
            }
            OpKind::Cmp(k) => {
                let s = self.f.ty(o.args[0]).elem();
                let (a, b) = (arg(self, 0), arg(self, 1));
                self.compare(*k, s, a, b)
            }
            OpKind::Select => {
                let (c, a, b) = (arg(self, 0), arg(self, 1), arg(self, 2));
                self.select_lanes(rt, bytes, c, a, b)
            }
            OpKind::Cast(to) => {
                let from = self.f.ty(o.args[0]).elem();
                let a = arg(self, 0);
                self.vector_cast(from, *to, a, bytes)
            }
            _ => return Err(crate::err(format!("no vector form of {:?}", o.kind))),
        };
        self.bind(o.results[0], v);
        Ok(())
    }

    /// An `if` of a region (its branches pure scalar code, [`ops_of_one_width`]): both branches
    /// computed on the whole vector, each result chosen lane by lane by the condition's mask.
    /// The lanes get the branch the scalar code takes, so the same bits.
    fn vector_if(&mut self, o: &Op, bytes: u32) -> Result<(), CodegenError> {
        let cond = self.val(o.args[0]);
        let then = self.vector_branch(&o.regions[0], bytes)?;
        let other = self.vector_branch(&o.regions[1], bytes)?;
        for ((res, a), b) in o.results.iter().zip(then).zip(other) {
            let rt = self.f.ty(*res).elem();
            let v = self.select_lanes(rt, bytes, cond, a, b);
            self.bind(*res, v);
        }
        Ok(())
    }

    /// Lane by lane `a` where mask `c` is set, else `b` (vectors of `rt` in `bytes`-wide lanes).
    fn select_lanes(&mut self, rt: Scalar, bytes: u32, c: ir::Value, a: ir::Value, b: ir::Value) -> ir::Value {
        let vt = Self::lane_ty(rt, bytes);
        let c = if rt.is_float() { self.b.ins().bitcast(vt, little(), c) } else { c };
        self.b.ins().bitselect(c, a, b)
    }

    /// The ops of branch `r` on vectors; the values it yields.
    fn vector_branch(&mut self, r: &Region, bytes: u32) -> Result<Vec<ir::Value>, CodegenError> {
        for o in &r.ops {
            if o.kind == OpKind::Yield {
                return Ok(o.args.iter().map(|a| self.val(*a)).collect());
            }
            self.vector_op(o, bytes)?;
        }
        Err(crate::err("a branch without `yield`"))
    }

    /// `a / 2^m` or `a % 2^m` on a vector of 32-bit integers, as the scalar code's division
    /// (truncating toward zero; the remainder has the dividend's sign): unsigned, a shift and
    /// a mask; signed, the quotient of `a + (2^m - 1)` for negative `a`, shifted (Hacker's
    /// Delight, 2nd ed., §10-1), and `a - (q << m)`.
    fn div_pow2(&mut self, k: BinOp, s: Scalar, a: ir::Value, m: u32) -> ir::Value {
        let m = i64::from(m);
        if s == Scalar::U32 {
            return if k == BinOp::Div {
                self.b.ins().ushr_imm_u(a, m)
            } else {
                let mask = self.b.ins().iconst(types::I32, (1 << m) - 1);
                let mask = self.b.ins().splat(types::I32X4, mask);
                self.b.ins().band(a, mask)
            };
        }
        let sign = self.b.ins().sshr_imm_u(a, 31);
        let bias = self.b.ins().ushr_imm_u(sign, 32 - m);
        let biased = self.b.ins().iadd(a, bias);
        let q = self.b.ins().sshr_imm_u(biased, m);
        if k == BinOp::Div {
            return q;
        }
        let back = self.b.ins().ishl_imm_u(q, m);
        self.b.ins().isub(a, back)
    }

    /// The casts [`vector_cast`] admits, on vectors.
    fn vector_cast(&mut self, from: Scalar, to: Scalar, a: ir::Value, bytes: u32) -> ir::Value {
        let tt = Self::lane_ty(to, bytes);
        match (from, to) {
            (Scalar::Bool, _) => {
                let (one, zero) = (self.const_val(Const::Int(1, to), to), self.const_val(Const::Int(0, to), to));
                let (one, zero) = (self.b.ins().splat(tt, one), self.b.ins().splat(tt, zero));
                let m = if to.is_float() { self.b.ins().bitcast(tt, little(), a) } else { a };
                self.b.ins().bitselect(m, one, zero)
            }
            (_, Scalar::Bool) => {
                let ft = Self::lane_ty(from, bytes);
                let z = self.const_val(Const::Int(0, from), from);
                let z = self.b.ins().splat(ft, z);
                self.compare(CmpOp::Ne, from, a, z)
            }
            _ if from == to => a,
            (Scalar::F32, Scalar::I32) => self.b.ins().fcvt_to_sint_sat(tt, a),
            _ => self.b.ins().fcvt_from_sint(tt, a),
        }
    }

    /// `o` computed lane by lane by the scalar lowering (`scalar_op`), its operands' lanes
    /// extracted (a mask lane as a `bool`) and the results put back into a vector.
    fn lanewise(&mut self, o: &Op, bytes: u32) -> Result<(), CodegenError> {
        let lanes = 16 / bytes;
        let saved: Vec<(Value, Held)> = o.args.iter().map(|a| (*a, self.held_of(*a))).collect();
        let vecs: Vec<(Value, ir::Value, bool)> =
            o.args.iter().map(|a| (*a, self.val(*a), self.f.ty(*a).elem() == Scalar::Bool)).collect();
        let rt = self.f.ty(o.results[0]).elem();
        let vt = Self::lane_ty(rt, bytes);
        let zero = self.b.ins().iconst(cl_type_w(bytes), 0);
        let mt = Self::lane_ty(Scalar::Bool, bytes);
        let mut out = self.b.ins().splat(mt, zero);
        if vt != mt {
            out = self.b.ins().bitcast(vt, little(), out);
        }
        for j in 0..lanes {
            for (a, v, mask) in &vecs {
                let x = self.b.ins().extractlane(*v, j as u8);
                let x = if *mask { self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0) } else { x };
                self.bind(*a, x);
            }
            self.scalar_op(o)?;
            let y = self.val(o.results[0]);
            let y = if rt == Scalar::Bool { self.mask_of(y, bytes) } else { y };
            out = self.b.ins().insertlane(out, y, j as u8);
        }
        for (v, h) in saved {
            self.rebind(v, h);
        }
        self.bind(o.results[0], out);
        Ok(())
    }
}

/// The integer type of a lane of `bytes`.
fn cl_type_w(bytes: u32) -> ir::Type {
    if bytes == 4 {
        types::I32
    } else {
        types::I64
    }
}

/// Binary ops with a vector instruction of the scalar semantics (as `tile.rs`'s element-wise
/// code): float arithmetic but `%`, integer `+ - *`, and 32-bit integer `min`/`max`.
fn vector_bin(k: BinOp, s: Scalar) -> bool {
    if s.is_float() {
        return k != BinOp::Rem;
    }
    match k {
        BinOp::Add | BinOp::Sub | BinOp::Mul => true,
        BinOp::Min | BinOp::Max => s.bytes() == 4,
        _ => false,
    }
}

/// Unary ops with a vector form: float `-`, `abs`, `sqrt`, `f32` `exp`, `tanh`, `sin` and `cos`
/// (`expf.rs`, `tanhf.rs`, `sinf.rs`); integer negation.
pub(crate) fn vector_un(k: UnOp, s: Scalar) -> bool {
    if s.is_float() {
        matches!(k, UnOp::Neg | UnOp::Abs | UnOp::Sqrt)
            || ((crate::expf::is_own(k) || matches!(k, UnOp::RoundF16 | UnOp::RoundBf16)) && s == Scalar::F32)
    } else {
        k == UnOp::Neg && s != Scalar::Bool
    }
}

/// Casts with a vector form: between `f32` and `i32` (saturating, NaN to 0, as the scalar
/// `fcvt_to_sint_sat`), from and to `bool`, and to the same type.
fn vector_cast(from: Scalar, to: Scalar) -> bool {
    from == to
        || matches!((from, to), (Scalar::F32, Scalar::I32) | (Scalar::I32, Scalar::F32))
        || (from == Scalar::Bool) != (to == Scalar::Bool)
}
