//! The storage types `f16` and `bf16` in PTX: `f16` elements are `half` values converted with
//! `fpext`/`fptrunc` (`cvt.f32.f16`, `cvt.rn.f16.f32`), `bf16` elements 16-bit integers
//! converted with integer operations (`cvt` to and from `bf16` needs sm_80 or newer). The
//! results equal `tilec_midend::half::{widen, narrow}`.

use super::{be, Gen};
use crate::PtxError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicValueEnum, InstructionOpcode as I};
use inkwell::FloatPredicate;
use tilec_midend::Scalar;

impl<'ctx> Gen<'ctx, '_> {
    /// The type of an array element in memory: `half` for `f16`, `i16` for `bf16`, else the
    /// value type.
    pub(crate) fn mem_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        match s {
            Scalar::F16 => self.cx.f16_type().into(),
            Scalar::BF16 => self.cx.i16_type().into(),
            _ => self.ty(s),
        }
    }

    /// The value of a loaded element `x` of an array of `s`: storage types widened to `f32`.
    pub(crate) fn widen_mem(&self, s: Scalar, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>, PtxError> {
        let f32t = self.cx.f32_type();
        match s {
            Scalar::F16 => self.b.build_float_ext(x.into_float_value(), f32t, "").map(Into::into).map_err(be),
            Scalar::BF16 => {
                let i32t = self.cx.i32_type();
                let w = self.b.build_int_z_extend(x.into_int_value(), i32t, "").map_err(be)?;
                let bits = self.b.build_left_shift(w, i32t.const_int(16, false), "").map_err(be)?;
                self.b.build_bit_cast(bits, f32t, "").map_err(be)
            }
            _ => Ok(x),
        }
    }

    /// `x` as an element of an array of `s`: storage types rounded to nearest, ties to even
    /// (a `bf16` NaN is quieted with its top mantissa bits kept).
    pub(crate) fn narrow_mem(&self, s: Scalar, x: BasicValueEnum<'ctx>) -> Result<BasicValueEnum<'ctx>, PtxError> {
        let i32t = self.cx.i32_type();
        let c = |v: u64| i32t.const_int(v, false);
        match s {
            Scalar::F16 => {
                self.b.build_float_trunc(x.into_float_value(), self.cx.f16_type(), "").map(Into::into).map_err(be)
            }
            Scalar::BF16 => {
                let b = &self.b;
                let u = b.build_bit_cast(x, i32t, "").map_err(be)?.into_int_value();
                let hi = b.build_right_shift(u, c(16), false, "").map_err(be)?;
                let nan = b.build_or(hi, c(0x40), "").map_err(be)?;
                let odd = b.build_and(hi, c(1), "").map_err(be)?;
                let biased = b.build_int_add(u, c(0x7fff), "").map_err(be)?;
                let biased = b.build_int_add(biased, odd, "").map_err(be)?;
                let rounded = b.build_right_shift(biased, c(16), false, "").map_err(be)?;
                let xf = x.into_float_value();
                let is_nan = b.build_float_compare(FloatPredicate::UNO, xf, xf, "").map_err(be)?;
                let o = b.build_select(is_nan, nan, rounded, "").map_err(be)?.into_int_value();
                b.build_cast(I::Trunc, o, self.cx.i16_type(), "").map_err(be)
            }
            _ => Ok(x),
        }
    }
}
