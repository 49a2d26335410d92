//! Atomic read-modify-writes of one element (`AtomicRmw`) in the LLVM CPU backend:
//! `atomicrmw` for integer updates and float additions and exchanges, `cmpxchg` for
//! compare-and-swap (on the bits of floats), and float minima and maxima in IEEE 754
//! `totalOrder` as integer ones on the bits, chosen by the operand's sign (`Rmw::Min`);
//! `f16`/`bf16` elements as a `cmpxchg` loop on their 16 bits. Monotonic ordering throughout.

use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::values::{AsValueRef, BasicValueEnum, PointerValue};
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

    /// [`tilec_codegen_llvm::Ir::rmw_half`]: an atomic read-modify-write of an `f16`/`bf16`
    /// element, a `cmpxchg` loop on its 16 bits. Returns the old value (`f32`).
    fn rmw_half(
        &self,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().rmw_half(self.func, k, p, x, cmp, s)?)
    }
}
