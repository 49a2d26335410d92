//! The storage types `f16` and `bf16` in PTX: the shared LLVM layer's conversions
//! (`tilec_codegen_llvm`): `f16` elements are `half` values converted with `fpext`/`fptrunc`
//! (`cvt.f32.f16`, `cvt.rn.f16.f32`), `bf16` elements 16-bit integers converted with integer
//! operations (`cvt` to and from `bf16` needs sm_80 or newer). The results equal
//! `tilec_midend::half::{widen, narrow}`.

use super::Gen;
use crate::PtxError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::BasicValueEnum;
use tilec_midend::Scalar;

impl<'ctx> Gen<'ctx, '_> {
    /// The type of an array element in memory: `half` for `f16`, `i16` for `bf16`, else the
    /// value type.
    pub(crate) fn mem_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        self.ir().mem_ty(s, self.ty(Scalar::Bool))
    }

    /// The value of a loaded element `x` of an array of `s`: storage types widened to `f32`.
    pub(crate) fn widen_mem(&self, s: Scalar, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>, PtxError> {
        Ok(self.ir().widen_half(s, x)?)
    }

    /// `x` as an element of an array of `s`: storage types rounded to nearest, ties to even
    /// (a `bf16` NaN is quieted with its top mantissa bits kept).
    pub(crate) fn narrow_mem(&self, s: Scalar, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>, PtxError> {
        Ok(self.ir().narrow_half(s, x)?)
    }
}
