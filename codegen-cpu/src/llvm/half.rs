//! The storage types `f16` and `bf16` on LLVM: `f16` elements are `half` values widened with
//! `fpext` and narrowed with `fptrunc` (round to nearest even; x86's F16C instructions), `bf16`
//! elements are 16-bit integers converted with integer operations (LLVM 16 has no `bfloat`
//! conversion on x86). Scalars and vectors alike; the results equal
//! `tilec_midend::half::{widen, narrow}`.

use super::{be, Gen, V};
use crate::CodegenError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::InstructionOpcode as I;
use inkwell::FloatPredicate;
use tilec_midend::Scalar;

impl<'ctx> Gen<'ctx, '_> {
    /// `x`'s type with the element type `elem` (scalar or vector of the same length).
    pub(crate) fn like(&self, x: V<'ctx>, elem: BasicTypeEnum<'ctx>) -> BasicTypeEnum<'ctx> {
        match x {
            V::VectorValue(v) => {
                let n = v.get_type().get_size();
                match elem {
                    BasicTypeEnum::FloatType(t) => t.vec_type(n).into(),
                    t => t.into_int_type().vec_type(n).into(),
                }
            }
            _ => elem,
        }
    }

    /// An integer constant of `x`'s shape (splatted for vectors).
    pub(crate) fn int_like(&self, x: V<'ctx>, v: u64) -> Result<V<'ctx>, CodegenError> {
        let c: V<'ctx> = self.cx.i32_type().const_int(v, false).into();
        match x {
            V::VectorValue(t) => self.splat(c, t.get_type().get_size()),
            _ => Ok(c),
        }
    }

    /// The `f32` value(s) of loaded storage elements `x` (`half` or `i16`, scalar or vector).
    pub(crate) fn widen_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let f32s = self.like(x, self.cx.f32_type().into());
        if s == Scalar::F16 {
            return self.b.build_cast(I::FPExt, x, f32s, "").map_err(be);
        }
        let i32s = self.like(x, self.cx.i32_type().into());
        let w = self.b.build_cast(I::ZExt, x, i32s, "").map_err(be)?;
        let bits = self.op2(I::Shl, w, self.int_like(x, 16)?)?;
        self.b.build_bit_cast(bits, f32s, "").map_err(be)
    }

    /// The storage element(s) nearest to the `f32` value(s) `x`, ties to even.
    pub(crate) fn narrow_half(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        if s == Scalar::F16 {
            let t = self.like(x, self.cx.f16_type().into());
            return self.b.build_cast(I::FPTrunc, x, t, "").map_err(be);
        }
        // NaN: quieted, top mantissa bits kept; else rounded to nearest even.
        let i32s = self.like(x, self.cx.i32_type().into());
        let u = self.b.build_bit_cast(x, i32s, "").map_err(be)?;
        let hi = self.op2(I::LShr, u, self.int_like(x, 16)?)?;
        let nan = self.op2(I::Or, hi, self.int_like(x, 0x40)?)?;
        let odd = self.op2(I::And, hi, self.int_like(x, 1)?)?;
        let biased = self.op2(I::Add, u, self.int_like(x, 0x7fff)?)?;
        let biased = self.op2(I::Add, biased, odd)?;
        let rounded = self.op2(I::LShr, biased, self.int_like(x, 16)?)?;
        let is_nan = self.fcmp(FloatPredicate::UNO, x, x)?;
        let o = self.select(is_nan, nan, rounded)?;
        let t = self.like(x, self.cx.i16_type().into());
        self.b.build_cast(I::Trunc, o, t, "").map_err(be)
    }
}
