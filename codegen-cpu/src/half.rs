//! The storage types `f16` and `bf16` on Cranelift: their 16 bits widened to `f32` exactly and
//! `f32` narrowed to them, rounded to nearest with ties to even, all in integer operations
//! (Cranelift 0.135 has no `f16` arithmetic on x64). The results equal
//! `tilec_midend::half::{widen, narrow}` bit for bit, NaNs included (quiet, with the top
//! mantissa bits kept).
//!
//! `f16` narrowing follows F. Giesen's `float_to_half_fast3_rtne` ("Half to float done
//! quic", 2016): a magic-number addition rounds subnormal results, and a bias of `0xfff` plus
//! the result's lowest mantissa bit rounds normal ones.

use crate::lower::Lower;
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder, MemFlagsData};
use cranelift_module::Module as ClModule;
use tilec_midend::Scalar;

impl<M: ClModule> Lower<'_, '_, M> {
    /// The `f32` value of the `i16` bits `h` of an `f16` or `bf16` (`elem`).
    pub(crate) fn widen_half(&mut self, elem: Scalar, h: ir::Value) -> ir::Value {
        let h = self.b.ins().uextend(types::I32, h);
        let bits = if elem == Scalar::BF16 {
            self.b.ins().ishl_imm_s(h, 16)
        } else {
            // Exponent and mantissa moved to f32's positions and scaled by 2^(127 - 15): exact
            // for normal and subnormal f16 values; infinities and NaNs get all exponent bits.
            let em = self.b.ins().band_imm_s(h, 0x7fff);
            let shifted = self.b.ins().ishl_imm_s(em, 13);
            let f = self.b.ins().bitcast(types::F32, MemFlagsData::new(), shifted);
            let scale = self.b.ins().f32const(f32::from_bits((127 + 112) << 23));
            let scaled = self.b.ins().fmul(f, scale);
            let finite = self.b.ins().bitcast(types::I32, MemFlagsData::new(), scaled);
            let special = self.b.ins().bor_imm_s(shifted, 0x7f80_0000);
            let is_special = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, em, 0x7c00);
            let v = self.b.ins().select(is_special, special, finite);
            let sign = self.b.ins().band_imm_s(h, 0x8000);
            let sign = self.b.ins().ishl_imm_s(sign, 16);
            self.b.ins().bor(v, sign)
        };
        self.b.ins().bitcast(types::F32, MemFlagsData::new(), bits)
    }

    /// The `i16` bits of the `f16` or `bf16` (`elem`) nearest to the `f32` value `x`.
    pub(crate) fn narrow_half(&mut self, elem: Scalar, x: ir::Value) -> ir::Value {
        let u = self.b.ins().bitcast(types::I32, MemFlagsData::new(), x);
        let o = if elem == Scalar::BF16 {
            // NaN: quieted, top mantissa bits kept; else rounded to nearest even.
            let hi = self.b.ins().ushr_imm_u(u, 16);
            let nan = self.b.ins().bor_imm_s(hi, 0x40);
            let odd = self.b.ins().band_imm_s(hi, 1);
            let biased = self.b.ins().iadd_imm_s(u, 0x7fff);
            let biased = self.b.ins().iadd(biased, odd);
            let rounded = self.b.ins().ushr_imm_u(biased, 16);
            let is_nan = self.b.ins().fcmp(ir::condcodes::FloatCC::Unordered, x, x);
            self.b.ins().select(is_nan, nan, rounded)
        } else {
            let sign = self.b.ins().band_imm_s(u, 0x8000_0000u32 as i64);
            let a = self.b.ins().bxor(u, sign);
            // Overflow to infinity, infinities, NaNs (quieted, top mantissa bits kept).
            let mant = self.b.ins().ushr_imm_u(a, 13);
            let mant = self.b.ins().band_imm_s(mant, 0x3ff);
            let nan = self.b.ins().bor_imm_s(mant, 0x7e00);
            let inf = self.b.ins().iconst(types::I32, 0x7c00);
            let is_nan = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThan, a, 255 << 23);
            let special = self.b.ins().select(is_nan, nan, inf);
            // Subnormal results and zero: the addition rounds to f16's last place.
            let magic_bits = ((127 - 15) + (23 - 10) + 1) << 23;
            let af = self.b.ins().bitcast(types::F32, MemFlagsData::new(), a);
            let magic = self.b.ins().f32const(f32::from_bits(magic_bits));
            let sum = self.b.ins().fadd(af, magic);
            let sum = self.b.ins().bitcast(types::I32, MemFlagsData::new(), sum);
            let sub = self.b.ins().iadd_imm_s(sum, -(magic_bits as i64));
            // Normal results: rebias the exponent and round to nearest even.
            let odd = self.b.ins().ushr_imm_u(a, 13);
            let odd = self.b.ins().band_imm_s(odd, 1);
            let n = self.b.ins().iadd_imm_s(a, (((15 - 127) << 23) + 0xfff) as i64);
            let n = self.b.ins().iadd(n, odd);
            let normal = self.b.ins().ushr_imm_u(n, 13);
            let is_sub = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, a, 113 << 23);
            let finite = self.b.ins().select(is_sub, sub, normal);
            let is_special = self.b.ins().icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, (127 + 16) << 23);
            let o = self.b.ins().select(is_special, special, finite);
            let s = self.b.ins().ushr_imm_u(sign, 16);
            self.b.ins().bor(o, s)
        };
        self.b.ins().ireduce(types::I16, o)
    }

    /// `x` (an `f32` or an `f32x4`) rounded to the nearest `f16` or `bf16` value (`elem`) as
    /// an `f32`: what [`Self::narrow_half`] then [`Self::widen_half`] give (`UnOp::RoundF16`,
    /// `UnOp::RoundBf16`), on the `f32` bits so that it vectorizes. Normal results drop the
    /// low mantissa bits with a bias of half a unit less one plus the kept last bit (ties to
    /// even; a carry moves into the exponent); `f16` results below its smallest normal round
    /// by adding and subtracting 0.5 (whose last place is f16's smallest subnormal), past
    /// 65504 go to infinity; NaNs are quieted.
    pub(crate) fn round_half(&mut self, elem: Scalar, x: ir::Value) -> ir::Value {
        let vector = self.b.func.dfg.value_type(x).is_vector();
        let it = if vector { types::I32X4 } else { types::I32 };
        let flags = if vector { crate::vmap::little() } else { MemFlagsData::new() };
        let k = |l: &mut Self, v: u32| {
            let c = l.b.ins().iconst(types::I32, v as i64);
            if vector {
                l.b.ins().splat(it, c)
            } else {
                c
            }
        };
        let sel = |l: &mut Self, c: ir::Value, a: ir::Value, b: ir::Value| {
            if vector {
                l.b.ins().bitselect(c, a, b)
            } else {
                l.b.ins().select(c, a, b)
            }
        };
        let u = self.b.ins().bitcast(it, flags, x);
        let sign = k(self, 0x8000_0000);
        let sign = self.b.ins().band(u, sign);
        let a = self.b.ins().bxor(u, sign);
        let drop = if elem == Scalar::BF16 { 16 } else { 13 };
        let odd = self.b.ins().ushr_imm_u(a, drop);
        let one = k(self, 1);
        let odd = self.b.ins().band(odd, one);
        let bias = k(self, (1 << (drop - 1)) - 1);
        let n = self.b.ins().iadd(a, bias);
        let n = self.b.ins().iadd(n, odd);
        let keep = k(self, !((1u32 << drop) - 1));
        let mut r = self.b.ins().band(n, keep);
        if elem == Scalar::F16 {
            let af = self.b.ins().bitcast(if vector { types::F32X4 } else { types::F32 }, flags, a);
            let half = self.b.ins().f32const(0.5);
            let half = if vector { self.b.ins().splat(types::F32X4, half) } else { half };
            let s = self.b.ins().fadd(af, half);
            let s = self.b.ins().fsub(s, half);
            let s = self.b.ins().bitcast(it, flags, s);
            let min_normal = k(self, 113 << 23);
            let is_sub = self.b.ins().icmp(IntCC::UnsignedLessThan, a, min_normal);
            r = sel(self, is_sub, s, r);
            let overflow = k(self, 143 << 23);
            let big = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, r, overflow);
            let inf = k(self, 0x7f80_0000);
            r = sel(self, big, inf, r);
        }
        let inf = k(self, 0x7f80_0000);
        let is_nan = self.b.ins().icmp(IntCC::UnsignedGreaterThan, a, inf);
        // Quieted, with the mantissa bits the half type keeps (as narrowing and widening).
        let kept = k(self, !((1u32 << drop) - 1));
        let q = self.b.ins().band(a, kept);
        let quiet = k(self, 0x0040_0000);
        let q = self.b.ins().bor(q, quiet);
        r = sel(self, is_nan, q, r);
        let r = self.b.ins().bor(r, sign);
        self.b.ins().bitcast(if vector { types::F32X4 } else { types::F32 }, flags, r)
    }
}
