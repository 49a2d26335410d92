//! The storage types `f16` and `bf16` on the CPU: the shared LLVM layer's conversions
//! (`tilec_codegen_llvm`, `half.rs`), on scalars and vectors; the results equal
//! `tilec_midend::half::{widen, narrow}`.

use super::{Gen, V};
use crate::CodegenError;
use inkwell::types::BasicTypeEnum;
use tilec_midend::Scalar;

impl<'ctx> Gen<'ctx, '_> {
    /// `x`'s type with the element type `elem` (scalar or vector of the same length).
    pub(crate) fn like(&self, x: V<'ctx>, elem: BasicTypeEnum<'ctx>) -> BasicTypeEnum<'ctx> {
        self.ir().like(x, elem)
    }

    /// An integer constant of `x`'s shape (splatted for vectors).
    pub(crate) fn int_like(&self, x: V<'ctx>, v: u64) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().int_like(x, v)?)
    }

    /// The `f32` value(s) of loaded storage elements `x` (`half` or `i16`, scalar or vector).
    pub(crate) fn widen_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().widen_half(s, x)?)
    }

    /// The storage element(s) nearest to the `f32` value(s) `x`, ties to even.
    pub(crate) fn narrow_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().narrow_half(s, x)?)
    }
}
