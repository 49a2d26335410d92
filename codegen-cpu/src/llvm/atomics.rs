//! Atomic read-modify-writes of one element (`AtomicRmw`) in the LLVM CPU backend:
//! `atomicrmw` for integer updates and float additions and exchanges, `cmpxchg` for
//! compare-and-swap (on the bits of floats), and float minima and maxima in IEEE 754
//! `totalOrder` as integer ones on the bits, chosen by the operand's sign (`Rmw::Min`);
//! `f16`/`bf16` elements as a `cmpxchg` loop on their 16 bits. Monotonic ordering throughout.

use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::values::{AsValueRef, BasicValue, BasicValueEnum, PointerValue};
use inkwell::{AtomicOrdering, IntPredicate};
use llvm_sys::LLVMAtomicRMWBinOp as Op;
use tilec_midend::{Rmw, Scalar};

impl<'ctx> Gen<'ctx, '_> {
    /// `atomicrmw op p, x monotonic` for any operand type LLVM 16 takes (inkwell's builder
    /// takes integers only).
    pub(super) fn atomicrmw(&self, op: Op, p: PointerValue<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        // SAFETY: the builder is positioned in this function; `p` points to an element of
        // `x`'s type.
        let r = unsafe {
            llvm_sys::core::LLVMBuildAtomicRMW(
                self.b.as_mut_ptr(),
                op,
                p.as_value_ref(),
                x.as_value_ref(),
                llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            )
        };
        if r.is_null() {
            return Err(err("LLVM could not build an atomicrmw"));
        }
        // SAFETY: `r` is the instruction just built, a value of `x`'s type.
        Ok(unsafe { BasicValueEnum::new(r) })
    }

    /// The atomic update `k` of the element of `s` at `p` with `x` (and the comparand `cmp`
    /// of `Cas`); returns the old value.
    pub(super) fn rmw_at(
        &self,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, CodegenError> {
        if s.is_half() {
            return self.rmw_half(k, p, x, cmp, s);
        }
        let it = if s.bytes() == 8 { self.cx.i64_type() } else { self.cx.i32_type() };
        let unsigned = s == Scalar::U32;
        let op = match (k, s.is_float()) {
            (Rmw::Add, false) => Some(Op::LLVMAtomicRMWBinOpAdd),
            (Rmw::Add, true) => Some(Op::LLVMAtomicRMWBinOpFAdd),
            (Rmw::Xchg, _) => Some(Op::LLVMAtomicRMWBinOpXchg),
            (Rmw::Min, false) if unsigned => Some(Op::LLVMAtomicRMWBinOpUMin),
            (Rmw::Min, false) => Some(Op::LLVMAtomicRMWBinOpMin),
            (Rmw::Max, false) if unsigned => Some(Op::LLVMAtomicRMWBinOpUMax),
            (Rmw::Max, false) => Some(Op::LLVMAtomicRMWBinOpMax),
            _ => None,
        };
        if let Some(op) = op {
            return self.atomicrmw(op, p, x);
        }
        let bits = |g: &Self, v: V<'ctx>| -> Result<_, CodegenError> {
            Ok(g.b.build_bit_cast(v, it, "").map_err(be)?.into_int_value())
        };
        let mono = AtomicOrdering::Monotonic;
        if k == Rmw::Cas {
            let c = cmp.ok_or_else(|| err("compare-and-swap without a comparand"))?;
            let (cb, xb) = (bits(self, c)?, bits(self, x)?);
            let pair = self.b.build_cmpxchg(p, cb, xb, mono, mono).map_err(be)?;
            let old = self.b.build_extract_value(pair, 0, "").map_err(be)?;
            return self.b.build_bit_cast(old, self.ty(s), "").map_err(be);
        }
        // A float minimum or maximum in totalOrder: a signed min (max) of the bits for an `x`
        // with the sign bit clear, an unsigned max (min) for one with it set.
        let xb = bits(self, x)?;
        let set = self.b.build_int_compare(IntPredicate::SLT, xb, it.const_zero(), "").map_err(be)?;
        let (pos, neg, join) = (self.block(), self.block(), self.block());
        self.b.build_conditional_branch(set, neg, pos).map_err(be)?;
        let mut from = Vec::new();
        for (block, signed) in [(pos, true), (neg, false)] {
            self.b.position_at_end(block);
            let op = match (k == Rmw::Min, signed) {
                (true, true) => Op::LLVMAtomicRMWBinOpMin,
                (true, false) => Op::LLVMAtomicRMWBinOpUMax,
                (false, true) => Op::LLVMAtomicRMWBinOpMax,
                (false, false) => Op::LLVMAtomicRMWBinOpUMin,
            };
            from.push((self.atomicrmw(op, p, xb.into())?, block));
            self.b.build_unconditional_branch(join).map_err(be)?;
        }
        self.b.position_at_end(join);
        let old = self.b.build_phi(it, "").map_err(be)?;
        old.add_incoming(&[(&from[0].0, from[0].1), (&from[1].0, from[1].1)]);
        self.b.build_bit_cast(old.as_basic_value(), self.ty(s), "").map_err(be)
    }

    /// [`Self::rmw_at`] on an `f16`/`bf16` element (IR [`Rmw`]): a `cmpxchg` loop on its 16
    /// bits, whose new bits are the operands rounded to the half type and, for `Add`, the `f32`
    /// sum of the old value and the rounded operand, rounded; minima and maxima compare
    /// `totalOrder` keys of the bits. Returns the old value (`f32`).
    fn rmw_half(
        &self,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, CodegenError> {
        let i16t = self.cx.i16_type();
        let bits = |g: &Self, v: V<'ctx>| -> Result<_, CodegenError> {
            let h = g.narrow_half(s, v)?;
            Ok(g.b.build_bit_cast(h, i16t, "").map_err(be)?.into_int_value())
        };
        let value = |g: &Self, b: inkwell::values::IntValue<'ctx>| -> Result<V<'ctx>, CodegenError> {
            let h = g.b.build_bit_cast(b, g.mem_ty(s), "").map_err(be)?;
            g.widen_half(s, h)
        };
        let xb = bits(self, x)?;
        let cb = cmp.map(|c| bits(self, c)).transpose()?;
        let mono = AtomicOrdering::Monotonic;
        let first = self.b.build_load(i16t, p, "").map_err(be)?;
        let load = first.as_instruction_value().ok_or_else(|| err("a load"))?;
        load.set_alignment(2).map_err(be)?;
        load.set_atomic_ordering(mono).map_err(be)?;
        let entry = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        let (retry, done) = (self.block(), self.block());
        self.b.build_unconditional_branch(retry).map_err(be)?;
        self.b.position_at_end(retry);
        let cur = self.b.build_phi(i16t, "").map_err(be)?;
        let c = cur.as_basic_value().into_int_value();
        // totalOrder of half bits: a signed comparison of `b ^ 0x7fff` for negative `b`.
        let key = |g: &Self, b: inkwell::values::IntValue<'ctx>| -> Result<_, CodegenError> {
            let neg = g.b.build_int_compare(IntPredicate::SLT, b, i16t.const_zero(), "").map_err(be)?;
            let flipped = g.b.build_xor(b, i16t.const_int(0x7fff, false), "").map_err(be)?;
            Ok(g.b.build_select(neg, flipped, b, "").map_err(be)?.into_int_value())
        };
        let new = match k {
            Rmw::Xchg => xb,
            Rmw::Cas => {
                let cb = cb.ok_or_else(|| err("compare-and-swap without a comparand"))?;
                let same = self.b.build_int_compare(IntPredicate::EQ, c, cb, "").map_err(be)?;
                self.b.build_select(same, xb, c, "").map_err(be)?.into_int_value()
            }
            Rmw::Min | Rmw::Max => {
                let (kx, kc) = (key(self, xb)?, key(self, c)?);
                let pred = if k == Rmw::Min { IntPredicate::SLT } else { IntPredicate::SGT };
                let pick = self.b.build_int_compare(pred, kx, kc, "").map_err(be)?;
                self.b.build_select(pick, xb, c, "").map_err(be)?.into_int_value()
            }
            Rmw::Add => {
                let (cf, xf) = (value(self, c)?, value(self, xb)?);
                let sum = self.b.build_float_add(cf.into_float_value(), xf.into_float_value(), "").map_err(be)?;
                bits(self, sum.into())?
            }
        };
        let pair = self.b.build_cmpxchg(p, c, new, mono, mono).map_err(be)?;
        let seen = self.b.build_extract_value(pair, 0, "").map_err(be)?;
        let ok = self.b.build_extract_value(pair, 1, "").map_err(be)?.into_int_value();
        let last = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        cur.add_incoming(&[(&first, entry), (&seen, last)]);
        self.b.build_conditional_branch(ok, done, retry).map_err(be)?;
        self.b.position_at_end(done);
        value(self, c)
    }
}
