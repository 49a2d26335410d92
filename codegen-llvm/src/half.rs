//! The storage types `f16` and `bf16`: `f16` elements are `half` values widened with `fpext`
//! and narrowed with `fptrunc` (round to nearest even: x86's F16C, PTX's `cvt`), `bf16`
//! elements are 16-bit integers converted with integer operations (LLVM 16 has no `bfloat`
//! conversion on x86, and PTX has one only from sm_80). Scalars and vectors alike; the
//! results equal `tilec_midend::half::{widen, narrow}`.

use crate::ir::{Ir, LlvmError, V};
use inkwell::values::InstructionOpcode as I;
use inkwell::FloatPredicate;
use tilec_midend::Scalar;

impl<'ctx> Ir<'_, 'ctx> {
    /// The `f32` value(s) of loaded storage elements `x` of type `s` (`half` or `i16`, scalar
    /// or vector); any other `s` leaves `x` as it is.
    pub fn widen_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        let f32s = self.like(x, self.cx.f32_type().into());
        match s {
            Scalar::F16 => Ok(self.b.build_cast(I::FPExt, x, f32s, "")?),
            Scalar::BF16 => {
                let i32s = self.like(x, self.cx.i32_type().into());
                let w = self.b.build_cast(I::ZExt, x, i32s, "")?;
                let bits = self.op2(I::Shl, w, self.int_like(x, 16)?)?;
                Ok(self.b.build_bit_cast(bits, f32s, "")?)
            }
            _ => Ok(x),
        }
    }

    /// The storage element(s) of type `s` nearest to the `f32` value(s) `x`, ties to even (a
    /// `bf16` NaN is quieted with its top mantissa bits kept); any other `s` leaves `x` as it
    /// is.
    pub fn narrow_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, LlvmError> {
        match s {
            Scalar::F16 => {
                let t = self.like(x, self.cx.f16_type().into());
                Ok(self.b.build_cast(I::FPTrunc, x, t, "")?)
            }
            Scalar::BF16 => {
                let i32s = self.like(x, self.cx.i32_type().into());
                let u = self.b.build_bit_cast(x, i32s, "")?;
                let hi = self.op2(I::LShr, u, self.int_like(x, 16)?)?;
                let nan = self.op2(I::Or, hi, self.int_like(x, 0x40)?)?;
                let odd = self.op2(I::And, hi, self.int_like(x, 1)?)?;
                let biased = self.op2(I::Add, u, self.int_like(x, 0x7fff)?)?;
                let biased = self.op2(I::Add, biased, odd)?;
                let rounded = self.op2(I::LShr, biased, self.int_like(x, 16)?)?;
                let is_nan = self.fcmp(FloatPredicate::UNO, x, x)?;
                let o = self.select(is_nan, nan, rounded)?;
                let t = self.like(x, self.cx.i16_type().into());
                Ok(self.b.build_cast(I::Trunc, o, t, "")?)
            }
            _ => Ok(x),
        }
    }
}
