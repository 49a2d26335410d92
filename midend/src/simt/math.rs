//! `f64` transcendental functions for the GPU targets, lowered to `f64` arithmetic in the SIMT
//! form. GLSL.std.450 has `Exp`, `Log`, `Sin`, `Cos` and `Tanh` for 16- and 32-bit floats only,
//! and the NVPTX backend has no `f64` versions without libdevice, so both GPU backends receive
//! these as sequences of `f64` adds, multiplies, FMAs, compares, selects and casts, and give
//! the same answers (within a few ulp of the CPU's libm) on every device. `f32` keeps the
//! device's own functions.
//!
//! Algorithms (as in fdlibm / Cody & Waite, *Software Manual for the Elementary Functions*,
//! 1980): argument reduction by a constant split in two or three parts so that the products
//! with the integer quotient are exact, then a truncated Taylor series on the reduced
//! argument, evaluated by Horner's rule with FMAs:
//!
//! - `exp(x) = 2^k exp(r)`, `k = round(x / ln 2)`, `|r| <= ln 2 / 2`, Taylor to `r^13`
//!   (truncation below 1e-17 relative); `2^k` is applied as two factors made from their
//!   exponent fields (`Bitcast`).
//! - `log(x) = e ln 2 + log(m)`, `x = m 2^e` with `m` in `[sqrt(1/2), sqrt(2))` taken from the
//!   bits of `x`; `log(m) = 2 atanh(s)`, `s = (m - 1) / (m + 1)`, series to `s^23`.
//! - `sin`, `cos`: `x = q pi/2 + r`, `|r| <= pi/4`, five-part Cody-Waite reduction with exact
//!   products (valid for `|x| < 2^31 pi/2`, about 3.4e9; larger or non-finite arguments give
//!   NaN), Taylor to `r^17` / `r^18`, and the quadrant `q mod 4` picks `±sin r` or `±cos r`.
//!
//! The reductions use separate multiplies and subtractions with exact products, never FMAs:
//! GLSL.std.450 `Fma` may be unfused (lavapipe's `f64` one is). The series use FMAs, where
//! fusing or not changes the result by an ulp at most.
//! - `exp2(x) = 2^k exp(r)`, `k = round(x)`, `r = (x - k) ln 2` (`x - k` exact); `log2(x) =
//!   log(x) log2(e)`.
//! - `tanh(x)`: for `|x| < 1`, `sinh/cosh` from their Taylor series (no cancellation); else
//!   `1 - 2 / (exp(2|x|) + 1)`; odd symmetry.
//!
//! Special values follow C's libm: `exp(±inf) = inf / 0`, `log(0) = -inf`, `log(x < 0) = NaN`,
//! `log(inf) = inf`, `tanh(±inf) = ±1`, NaN in gives NaN out.

use super::lower::Lower;
use crate::ir::*;
use crate::types::{Scalar, Type};

const F64: Scalar = Scalar::F64;

/// `ln 2` split so that `k * LN2_HI` is exact for `|k| < 2^20` (fdlibm's `ln2_hi`, 0x1.62e42feep-1,
/// and `ln2_lo`).
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
/// `pi / 2` as four parts of 21 significant bits and a remainder (their sum is `pi / 2` to
/// 2e-43), so that `q * PIO2[i]` is exact for every `|q| < 2^31` (`PIO2[0..4]`) without
/// relying on a fused multiply-add: Vulkan's `Fma` may be a multiply and an add (lavapipe's
/// is, for `f64`).
const PIO2: [f64; 5] = [
    f64::from_bits(0x3ff9_21fb_0000_0000), // 0x1.921fbp+0
    f64::from_bits(0x3e95_110b_0000_0000), // 0x1.5110bp-22
    f64::from_bits(0x3d31_8469_0000_0000), // 0x1.18469p-44
    f64::from_bits(0x3be1_3198_0000_0000), // 0x1.13198p-65
    f64::from_bits(0x3a94_5c06_e0e6_8948), // 0x1.45c06e0e68948p-86
];

/// `1 / n!` for `n` in `0..=20`.
fn inv_fact(n: u32) -> f64 {
    (1..=n).fold(1.0, |acc, i| acc / i as f64)
}

impl Lower<'_> {
    /// A unary operation on a scalar register: `f64` transcendental functions are expanded
    /// (see the module docs); everything else is one `Un` op.
    pub(super) fn un(&mut self, k: UnOp, x: Value, s: Scalar) -> Value {
        if s != F64 {
            return self.emit1(OpKind::Un(k), vec![x], Type::Scalar(s));
        }
        match k {
            UnOp::Exp => self.exp_f64(x),
            UnOp::Log => self.log_f64(x),
            UnOp::Sin => self.sin_cos_f64(x, false),
            UnOp::Cos => self.sin_cos_f64(x, true),
            UnOp::Tanh => self.tanh_f64(x),
            UnOp::Exp2 => self.exp2_f64(x),
            UnOp::Log2 => {
                let l = self.log_f64(x);
                let c = self.c(std::f64::consts::LOG2_E);
                self.mul(l, c)
            }
            _ => self.emit1(OpKind::Un(k), vec![x], Type::Scalar(s)),
        }
    }

    fn c(&mut self, v: f64) -> Value {
        self.elemc(v, F64)
    }

    fn add(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Add, a, b, F64)
    }

    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Sub, a, b, F64)
    }

    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.bin(BinOp::Mul, a, b, F64)
    }

    fn neg(&mut self, a: Value) -> Value {
        self.emit1(OpKind::Un(UnOp::Neg), vec![a], Type::Scalar(F64))
    }

    /// `x < y` (or another comparison) with `y` a constant.
    fn cmpc(&mut self, k: CmpOp, x: Value, y: f64) -> Value {
        let y = self.c(y);
        self.cmp(k, x, y)
    }

    /// `sel(c, a, b)` with constants `a` and `b`.
    fn selc(&mut self, c: Value, a: f64, b: f64) -> Value {
        let (a, b) = (self.c(a), self.c(b));
        self.select(c, a, b, F64)
    }

    /// `sum_i coef[i] * z^i` by Horner's rule.
    fn horner(&mut self, z: Value, coef: &[f64]) -> Value {
        let mut p = self.c(*coef.last().expect("coefficients"));
        for &ci in coef.iter().rev().skip(1) {
            let c = self.c(ci);
            p = self.fma(p, z, c, F64);
        }
        p
    }

    /// `x` rounded to the nearest integer, as an `i32`, for `|x| < bound` (a power of two
    /// below 2^30): `trunc(x + bound + 0.5) - bound`, so the conversion only sees positive
    /// values and no compare is needed. Within an ulp of `bound` of a half, the result may be
    /// the other neighbour; the reductions tolerate that (`|r|` a hair above its bound).
    fn round_i32(&mut self, x: Value, bound: i32) -> Value {
        let off = self.c(bound as f64 + 0.5);
        let y = self.add(x, off);
        let i = self.emit1(OpKind::Cast(Scalar::I32), vec![y], Type::Scalar(Scalar::I32));
        let b = self.i32c(bound as i64);
        self.bin(BinOp::Sub, i, b, Scalar::I32)
    }

    fn int_to_f64(&mut self, i: Value) -> Value {
        self.emit1(OpKind::Cast(F64), vec![i], Type::Scalar(F64))
    }

    /// `2^k` for an `i64` `k` in `[-1022, 1023]`: the `f64` with exponent field `k + 1023`.
    fn pow2(&mut self, k: Value) -> Value {
        let bias = self.elemc(1023.0, Scalar::I64);
        let e = self.bin(BinOp::Add, k, bias, Scalar::I64);
        let shift = self.elemc(2f64.powi(52), Scalar::I64);
        let bits = self.bin(BinOp::Mul, e, shift, Scalar::I64);
        self.emit1(OpKind::Bitcast(F64), vec![bits], Type::Scalar(F64))
    }

    /// `p * 2^k` for `i32`s `k` in `[-1076, 1025]` and `k1` within 1 of `k / 2`, as
    /// `(p * 2^k1) * 2^(k - k1)`: both factors are normal numbers, and a subnormal result is
    /// rounded once, at the end.
    fn scale_pow2(&mut self, p: Value, k: Value, k1: Value) -> Value {
        let k = self.emit1(OpKind::Cast(Scalar::I64), vec![k], Type::Scalar(Scalar::I64));
        let k1 = self.emit1(OpKind::Cast(Scalar::I64), vec![k1], Type::Scalar(Scalar::I64));
        let k2 = self.bin(BinOp::Sub, k, k1, Scalar::I64);
        let (s1, s2) = (self.pow2(k1), self.pow2(k2));
        let p = self.mul(p, s1);
        self.mul(p, s2)
    }

    /// `exp(x)` in `f64`.
    fn exp_f64(&mut self, x: Value) -> Value {
        // Clamp to where the result is finite and non-zero, and a little beyond (NaN passes).
        let hi = self.cmpc(CmpOp::Gt, x, 709.8);
        let lo = self.cmpc(CmpOp::Lt, x, -745.2);
        let (chi, clo) = (self.c(709.8), self.c(-745.2));
        let x = self.select(lo, clo, x, F64);
        let x = self.select(hi, chi, x, F64);
        let log2e = self.c(std::f64::consts::LOG2_E);
        let t = self.mul(x, log2e);
        let k = self.round_i32(t, 2048);
        let kf = self.int_to_f64(k);
        // r = (x - k ln2_hi) - k ln2_lo; both products exact (|k| < 2^11).
        let (h, l) = (self.c(LN2_HI), self.c(LN2_LO));
        let kh = self.mul(kf, h);
        let r = self.sub(x, kh);
        let kl = self.mul(kf, l);
        let r = self.sub(r, kl);
        self.exp_finish(t, k, r)
    }

    /// `exp(r) 2^k` for the reduced argument `r` (`|r| <= ln 2 / 2`), with `t` about `k`.
    fn exp_finish(&mut self, t: Value, k: Value, r: Value) -> Value {
        let coef: Vec<f64> = (0..=13).map(inv_fact).collect();
        let p = self.horner(r, &coef);
        let half = self.c(0.5);
        let th = self.mul(t, half);
        let k1 = self.round_i32(th, 1024);
        self.scale_pow2(p, k, k1)
    }

    /// `2^x` in `f64`: `k = round(x)`, `r = (x - k) ln 2` (`x - k` exact, `|r| <= ln 2 / 2`),
    /// then as `exp`.
    fn exp2_f64(&mut self, x: Value) -> Value {
        let hi = self.cmpc(CmpOp::Gt, x, 1024.1);
        let lo = self.cmpc(CmpOp::Lt, x, -1075.1);
        let (chi, clo) = (self.c(1024.1), self.c(-1075.1));
        let x = self.select(lo, clo, x, F64);
        let x = self.select(hi, chi, x, F64);
        let k = self.round_i32(x, 2048);
        let kf = self.int_to_f64(k);
        let f = self.sub(x, kf);
        let ln2 = self.c(std::f64::consts::LN_2);
        let r = self.mul(f, ln2);
        self.exp_finish(x, k, r)
    }

    /// `log(x)` in `f64`.
    fn log_f64(&mut self, x: Value) -> Value {
        // Subnormals: scale into the normal range first.
        let sub = self.cmpc(CmpOp::Lt, x, f64::MIN_POSITIVE);
        let big = self.c(2f64.powi(54));
        let xs = self.mul(x, big);
        let mut m = self.select(sub, xs, x, F64);
        let mut e = self.selc(sub, -54.0, 0.0);
        // x = m 2^e with m in [1, 2), from the bits: e is the exponent field minus 1023, and m
        // has x's mantissa with the exponent field of 1.0. (Negative x, infinities and NaN
        // give some m and e here; the special cases below replace their results.)
        let bits = self.emit1(OpKind::Bitcast(Scalar::I64), vec![m], Type::Scalar(Scalar::I64));
        let shift = self.elemc(2f64.powi(52), Scalar::I64);
        let field = self.bin(BinOp::Div, bits, shift, Scalar::I64);
        let top = self.bin(BinOp::Mul, field, shift, Scalar::I64);
        let mant = self.bin(BinOp::Sub, bits, top, Scalar::I64);
        let one_bits = self.elemc(1023.0 * 2f64.powi(52), Scalar::I64);
        let mbits = self.bin(BinOp::Add, mant, one_bits, Scalar::I64);
        m = self.emit1(OpKind::Bitcast(F64), vec![mbits], Type::Scalar(F64));
        let bias = self.elemc(1023.0, Scalar::I64);
        let eu = self.bin(BinOp::Sub, field, bias, Scalar::I64);
        let ef = self.int_to_f64(eu);
        e = self.add(e, ef);
        // [1, 2) -> [sqrt(1/2), sqrt(2)).
        let high = self.cmpc(CmpOp::Ge, m, std::f64::consts::SQRT_2);
        let f = self.selc(high, 0.5, 1.0);
        m = self.mul(m, f);
        let de = self.selc(high, 1.0, 0.0);
        e = self.add(e, de);
        // log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...).
        let one = self.c(1.0);
        let num = self.sub(m, one);
        let den = self.add(m, one);
        let s = self.bin(BinOp::Div, num, den, F64);
        let z = self.mul(s, s);
        let coef: Vec<f64> = (0..12).map(|i| 1.0 / (2 * i + 1) as f64).collect();
        let p = self.horner(z, &coef);
        let two_s = self.add(s, s);
        let lm = self.mul(two_s, p);
        let (h, l) = (self.c(LN2_HI), self.c(LN2_LO));
        let el = self.mul(e, l);
        let lo = self.add(el, lm);
        let eh = self.mul(e, h);
        let r = self.add(eh, lo);
        // Special values: log(inf) = inf, log(0) = -inf, log(x < 0) = NaN (NaN passes through
        // the arithmetic above).
        let inf = self.cmpc(CmpOp::Eq, x, f64::INFINITY);
        let cinf = self.c(f64::INFINITY);
        let r = self.select(inf, cinf, r, F64);
        let zero = self.cmpc(CmpOp::Eq, x, 0.0);
        let cninf = self.c(f64::NEG_INFINITY);
        let r = self.select(zero, cninf, r, F64);
        let negative = self.cmpc(CmpOp::Lt, x, 0.0);
        let nan = self.c(f64::NAN);
        let r = self.select(negative, nan, r, F64);
        let is_nan = self.cmp(CmpOp::Ne, x, x);
        self.select(is_nan, nan, r, F64)
    }

    /// `sin(x)` or `cos(x)` in `f64`.
    fn sin_cos_f64(&mut self, x: Value, cos: bool) -> Value {
        let ax = self.emit1(OpKind::Un(UnOp::Abs), vec![x], Type::Scalar(F64));
        // |x| < 2^31 pi/2 keeps the quotient in i32; NaN and infinities fail the test.
        let ok = self.cmpc(CmpOp::Lt, ax, 2f64.powi(31) * std::f64::consts::FRAC_PI_2);
        let zero = self.c(0.0);
        let xs = self.select(ok, x, zero, F64);
        let two_over_pi = self.c(std::f64::consts::FRAC_2_PI);
        let t = self.mul(xs, two_over_pi);
        // q = round(t) as qh 2^16 + ql, converting only values below 2^16 to integers
        // (lavapipe's f64 -> i32 conversion is wrong above about 2^30 with 512-bit vectors).
        let scale = self.c(2f64.powi(-16));
        let th = self.mul(t, scale);
        let qh = self.emit1(OpKind::Cast(Scalar::I32), vec![th], Type::Scalar(Scalar::I32));
        let qh = self.int_to_f64(qh);
        let c16 = self.c(65536.0);
        let qh = self.mul(qh, c16);
        let tl = self.sub(t, qh); // exact
        let ql = self.round_i32(tl, 1 << 17);
        let qlf = self.int_to_f64(ql);
        let qf = self.add(qh, qlf);
        // r = x - q pi/2, one exact product at a time.
        let mut r = xs;
        for part in PIO2 {
            let p = self.c(part);
            let qp = self.mul(qf, p);
            r = self.sub(r, qp);
        }
        let z = self.mul(r, r);
        // sin r = r (1 - z/3! + z^2/5! - ...), cos r = 1 - z/2! + z^2/4! - ...
        let sc: Vec<f64> = (0..9).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * inv_fact(2 * i + 1)).collect();
        let cc: Vec<f64> = (0..10).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 } * inv_fact(2 * i)).collect();
        let ps = self.horner(z, &sc);
        let sin_r = self.mul(r, ps);
        let cos_r = self.horner(z, &cc);
        // The quadrant q mod 4 = ql mod 4 (two's complement: & 3 is it for negative ql too).
        let three = self.i32c(3);
        let n = self.bin(BinOp::And, ql, three, Scalar::I32);
        let (ns, nc) = (self.neg(sin_r), self.neg(cos_r));
        // sin: [s, c, -s, -c][n]; cos: [c, -s, -c, s][n].
        let table = if cos { [cos_r, ns, nc, sin_r] } else { [sin_r, cos_r, ns, nc] };
        let mut v = table[3];
        for i in (0..3).rev() {
            let ic = self.i32c(i as i64);
            let is = self.cmp(CmpOp::Eq, n, ic);
            v = self.select(is, table[i], v, F64);
        }
        let nan = self.c(f64::NAN);
        self.select(ok, v, nan, F64)
    }

    /// `tanh(x)` in `f64`.
    fn tanh_f64(&mut self, x: Value) -> Value {
        let a = self.emit1(OpKind::Un(UnOp::Abs), vec![x], Type::Scalar(F64));
        // |x| < 1: sinh a / cosh a from their series (a^19 and a^20 terms; below 1e-17).
        let z = self.mul(a, a);
        let shc: Vec<f64> = (0..10).map(|i| inv_fact(2 * i + 1)).collect();
        let chc: Vec<f64> = (0..11).map(|i| inv_fact(2 * i)).collect();
        let ps = self.horner(z, &shc);
        let sh = self.mul(a, ps);
        let ch = self.horner(z, &chc);
        let small = self.bin(BinOp::Div, sh, ch, F64);
        // |x| >= 1: 1 - 2 / (e^(2a) + 1); tanh(a) = 1 in f64 for a > 20.
        let over = self.cmpc(CmpOp::Gt, a, 20.0);
        let c20 = self.c(20.0);
        let ac = self.select(over, c20, a, F64);
        let a2 = self.add(ac, ac);
        let e = self.exp_f64(a2);
        let one = self.c(1.0);
        let d = self.add(e, one);
        let two = self.c(2.0);
        let q = self.bin(BinOp::Div, two, d, F64);
        let large = self.sub(one, q);
        let is_small = self.cmpc(CmpOp::Lt, a, 1.0);
        let t = self.select(is_small, small, large, F64);
        let neg = self.cmpc(CmpOp::Lt, x, 0.0);
        let nt = self.neg(t);
        let t = self.select(neg, nt, t, F64);
        // tanh(±0) = ±0.
        let zero = self.cmpc(CmpOp::Eq, x, 0.0);
        self.select(zero, x, t, F64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Significant bits of a finite non-zero `f64` (from the leading one to the last one).
    fn significant_bits(x: f64) -> u32 {
        let m = (x.to_bits() & ((1u64 << 52) - 1)) | (1u64 << 52);
        53 - m.trailing_zeros()
    }

    #[test]
    fn reduction_constants_sum_to_their_values_with_exact_products() {
        let pio2: f64 = PIO2.iter().rev().sum();
        assert_eq!(pio2, std::f64::consts::FRAC_PI_2);
        for c in &PIO2[..4] {
            // |q| < 2^31 times 21 bits fits in the 53 of an f64.
            assert!(significant_bits(*c) <= 22, "{c:e}");
        }
        assert_eq!(LN2_HI + LN2_LO, std::f64::consts::LN_2);
        // |k| <= 1076 < 2^11.
        assert!(significant_bits(LN2_HI) <= 42);
    }
}
