//! The storage types `f16` and `bf16` in the shader: array elements of 16 bits (the
//! `StorageBuffer16BitAccess` capability, core in SPIR-V 1.3; Vulkan's
//! `storageBuffer16BitAccess` feature) widened to `f32` when loaded and narrowed when stored,
//! rounded to nearest with ties to even: `f16` with `OpFConvert` decorated `RTE`, `bf16` (no
//! SPIR-V type) as a 16-bit integer with the rounding in integer operations. The values equal
//! `tilec_midend::half::{widen, narrow}`.

use crate::body::be;
use crate::module::Gen;
use crate::SpirvError;
use rspirv::dr::Operand;
use rspirv::spirv::{Capability, Decoration, FPRoundingMode, Word};
use tilec_midend::Scalar;

impl Gen<'_> {
    /// The SPIR-V type of a storage type's element: `f16`, or a 16-bit unsigned integer for
    /// `bf16`.
    pub(crate) fn half_ty(&mut self, s: Scalar) -> Word {
        self.b.capability(Capability::StorageBuffer16BitAccess);
        if s == Scalar::F16 {
            self.b.type_float(16, None)
        } else {
            self.b.type_int(16, 0)
        }
    }

    /// A loaded element `x` of an array of `elem`, as a value of `elem`'s compute type.
    pub(crate) fn widen_loaded(&mut self, elem: Scalar, x: Word) -> Result<Word, SpirvError> {
        let f32t = self.ty(Scalar::F32);
        match elem {
            Scalar::F16 => self.b.f_convert(f32t, None, x).map_err(be),
            Scalar::BF16 => {
                let u = self.b.u_convert(self.t_u32, None, x).map_err(be)?;
                let sh = self.u32c(16);
                let bits = self.b.shift_left_logical(self.t_u32, None, u, sh).map_err(be)?;
                self.b.bitcast(f32t, None, bits).map_err(be)
            }
            _ => Ok(x),
        }
    }

    /// The value `x` (of `elem`'s compute type) as an element of an array of `elem`.
    pub(crate) fn narrow_stored(&mut self, elem: Scalar, x: Word) -> Result<Word, SpirvError> {
        if !elem.is_half() {
            return Ok(x);
        }
        let t = self.ty(elem);
        if elem == Scalar::F16 {
            let h = self.b.f_convert(t, None, x).map_err(be)?;
            self.b.decorate(h, Decoration::FPRoundingMode, [Operand::FPRoundingMode(FPRoundingMode::RTE)]);
            return Ok(h);
        }
        // bf16: NaN quieted with its top mantissa bits kept, else rounded to nearest even.
        let u32t = self.t_u32;
        let u = self.b.bitcast(u32t, None, x).map_err(be)?;
        let sh = self.u32c(16);
        let hi = self.b.shift_right_logical(u32t, None, u, sh).map_err(be)?;
        let q = self.u32c(0x40);
        let nan = self.b.bitwise_or(u32t, None, hi, q).map_err(be)?;
        let one = self.u32c(1);
        let odd = self.b.bitwise_and(u32t, None, hi, one).map_err(be)?;
        let bias = self.u32c(0x7fff);
        let biased = self.b.i_add(u32t, None, u, bias).map_err(be)?;
        let biased = self.b.i_add(u32t, None, biased, odd).map_err(be)?;
        let rounded = self.b.shift_right_logical(u32t, None, biased, sh).map_err(be)?;
        let is_nan = self.b.is_nan(self.t_bool, None, x).map_err(be)?;
        let o = self.b.select(u32t, None, is_nan, nan, rounded).map_err(be)?;
        self.b.u_convert(t, None, o).map_err(be)
    }
}
