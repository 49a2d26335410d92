//! Atomic read-modify-writes of one element (`AtomicRmw`) in the LLVM CPU backend: the shared
//! LLVM layer's (`tilec_codegen_llvm`, `atomics.rs`): `atomicrmw` for integer updates and
//! float additions and exchanges, `cmpxchg` for compare-and-swap (on the bits of floats), and
//! float minima and maxima in IEEE 754 `totalOrder` as integer ones on the bits, chosen by the
//! operand's sign (`Rmw::Min`); `f16`/`bf16` elements as a `cmpxchg` loop on their 16 bits.
//! Monotonic ordering throughout.

use super::{Gen, V};
use crate::CodegenError;
use inkwell::values::PointerValue;
use llvm_sys::LLVMAtomicRMWBinOp as Op;
use tilec_midend::{Rmw, Scalar};

impl<'ctx> Gen<'ctx, '_> {
    /// `atomicrmw op p, x monotonic` for any operand type LLVM 16 takes.
    pub(super) fn atomicrmw(&self, op: Op, p: PointerValue<'ctx>, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().atomicrmw(op, p, x)?)
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
        Ok(self.ir().rmw_at(self.func, k, p, x, cmp, s)?)
    }
}
