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
use inkwell::values::{BasicValueEnum, PointerValue};
use llvm_sys::LLVMAtomicRMWBinOp as RmwOp;
use tilec_midend::{Op, Rmw, Scalar};

type V<'ctx> = BasicValueEnum<'ctx>;

impl<'ctx> Gen<'ctx, '_> {
    /// `atomicrmw op p, x monotonic` for any operand type LLVM 16 takes.
    pub(super) fn atomicrmw(&self, op: RmwOp, p: PointerValue<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, PtxError> {
        Ok(self.ir().atomicrmw(op, p, x)?)
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
        let old = self.ir().rmw_at(self.f, k, p, x, cmp, s)?;
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
