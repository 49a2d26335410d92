//! `AtomicRmw` in the PTX backend: the update of one element, made only when it is in
//! bounds (a branch: local memory has no atomics to aim a masked-off lane at), with the old
//! value as the result (0 out of bounds). Integer updates, float additions and exchanges are
//! one `atomicrmw` (`atom.global.*` / `atom.shared.*`), compare-and-swap is `cmpxchg` on the
//! bits, and float minima and maxima in IEEE 754 `totalOrder` are integer ones on the bits,
//! chosen by the operand's sign (`Rmw::Min`); `f16`/`bf16` elements are a `cmpxchg` loop on
//! their 16 bits.

use super::{be, err, Gen};
use crate::PtxError;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{AsValueRef, BasicValueEnum, PointerValue};
use inkwell::{AtomicOrdering, IntPredicate};
use llvm_sys::LLVMAtomicRMWBinOp as RmwOp;
use tilec_midend::{Op, Rmw, Scalar};

type V<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Gen<'ctx, '_> {
    /// `atomicrmw op p, x monotonic` for any operand type LLVM 16 takes (inkwell's builder
    /// takes integers only).
    pub(super) fn atomicrmw(&self, op: RmwOp, p: PointerValue<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, PtxError> {
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

    /// `AtomicRmw(k)`: `(array, i.., [cmp,] x) -> old`.
    pub(crate) fn rmw(&mut self, op: &Op, k: Rmw) -> Result<V<'ctx>, PtxError> {
        let n = op.args.len();
        let rank = n - if k == Rmw::Cas { 3 } else { 2 };
        let (p, inb, s) = self.element(op.args[0], &op.args[1..1 + rank])?;
        let x = self.val(op.args[n - 1])?;
        let cmp = if k == Rmw::Cas { Some(self.val(op.args[n - 2])?) } else { None };
        let entry = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        let (yes, done) = (self.cx.append_basic_block(self.f, "rmw"), self.cx.append_basic_block(self.f, "rmwed"));
        self.b.build_conditional_branch(inb, yes, done).map_err(be)?;
        self.b.position_at_end(yes);
        if s.is_half() {
            let old = self.rmw_half(k, p, x, cmp, s)?;
            return self.rmw_join(old, entry, done, s);
        }
        let it = if s.bytes() == 8 { self.cx.i64_type() } else { self.cx.i32_type() };
        let mono = AtomicOrdering::Monotonic;
        let bits = |g: &Self, v: V<'ctx>| -> Result<_, PtxError> {
            Ok(g.b.build_bit_cast(v, it, "").map_err(be)?.into_int_value())
        };
        let unsigned = s == Scalar::U32;
        let native = match (k, s.is_float()) {
            (Rmw::Add, false) => Some(RmwOp::LLVMAtomicRMWBinOpAdd),
            (Rmw::Add, true) => Some(RmwOp::LLVMAtomicRMWBinOpFAdd),
            (Rmw::Xchg, _) => Some(RmwOp::LLVMAtomicRMWBinOpXchg),
            (Rmw::Min, false) if unsigned => Some(RmwOp::LLVMAtomicRMWBinOpUMin),
            (Rmw::Min, false) => Some(RmwOp::LLVMAtomicRMWBinOpMin),
            (Rmw::Max, false) if unsigned => Some(RmwOp::LLVMAtomicRMWBinOpUMax),
            (Rmw::Max, false) => Some(RmwOp::LLVMAtomicRMWBinOpMax),
            _ => None,
        };
        let old = if let Some(o) = native {
            self.atomicrmw(o, p, x)?
        } else if let Some(c) = cmp {
            let (cb, xb) = (bits(self, c)?, bits(self, x)?);
            let pair = self.b.build_cmpxchg(p, cb, xb, mono, mono).map_err(be)?;
            let old = self.b.build_extract_value(pair, 0, "").map_err(be)?;
            self.b.build_bit_cast(old, self.ty(s), "").map_err(be)?
        } else {
            // A float minimum or maximum in totalOrder: a signed min (max) of the bits for an
            // `x` with the sign bit clear, an unsigned max (min) for one with it set.
            let xb = bits(self, x)?;
            let set = self.b.build_int_compare(IntPredicate::SLT, xb, it.const_zero(), "").map_err(be)?;
            let (pos, neg, join) = (
                self.cx.append_basic_block(self.f, "pos"),
                self.cx.append_basic_block(self.f, "neg"),
                self.cx.append_basic_block(self.f, "minmax"),
            );
            self.b.build_conditional_branch(set, neg, pos).map_err(be)?;
            let mut from = Vec::new();
            for (block, signed) in [(pos, true), (neg, false)] {
                self.b.position_at_end(block);
                let o = match (k == Rmw::Min, signed) {
                    (true, true) => RmwOp::LLVMAtomicRMWBinOpMin,
                    (true, false) => RmwOp::LLVMAtomicRMWBinOpUMax,
                    (false, true) => RmwOp::LLVMAtomicRMWBinOpMax,
                    (false, false) => RmwOp::LLVMAtomicRMWBinOpUMin,
                };
                from.push((self.atomicrmw(o, p, xb.into())?, block));
                self.b.build_unconditional_branch(join).map_err(be)?;
            }
            self.b.position_at_end(join);
            let old = self.b.build_phi(it, "").map_err(be)?;
            old.add_incoming(&[(&from[0].0, from[0].1), (&from[1].0, from[1].1)]);
            self.b.build_bit_cast(old.as_basic_value(), self.ty(s), "").map_err(be)?
        };
        self.rmw_join(old, entry, done, s)
    }

    /// Ends the in-bounds branch of [`Self::rmw`] (`old`: its result) at `done`: the old value,
    /// or 0 when coming from `entry` (out of bounds).
    fn rmw_join(
        &mut self,
        old: V<'ctx>,
        entry: BasicBlock<'ctx>,
        done: BasicBlock<'ctx>,
        s: Scalar,
    ) -> Result<V<'ctx>, PtxError> {
        let last = self.b.get_insert_block().ok_or_else(|| err("no insert block"))?;
        self.b.build_unconditional_branch(done).map_err(be)?;
        self.b.position_at_end(done);
        let r = self.b.build_phi(self.ty(s.compute()), "").map_err(be)?;
        let zero = self.constant(s.compute(), 0.0);
        r.add_incoming(&[(&old, last), (&zero, entry)]);
        Ok(r.as_basic_value())
    }

    /// [`tilec_codegen_llvm::Ir::rmw_half`]: an atomic read-modify-write of an `f16`/`bf16`
    /// element, a `cmpxchg` loop on its 16 bits. Returns the old value (`f32`).
    pub(super) fn rmw_half(
        &mut self,
        k: Rmw,
        p: PointerValue<'ctx>,
        x: V<'ctx>,
        cmp: Option<V<'ctx>>,
        s: Scalar,
    ) -> Result<V<'ctx>, PtxError> {
        Ok(self.ir().rmw_half(self.f, k, p, x, cmp, s)?)
    }
}
