//! `sin` and `cos` of `f32` on the CPU, tilec's own instead of the C library's `sinf` and
//! `cosf` (a call per element that no vector code can make), written once over [`F32Ops`] as
//! `expf.rs` and emitted by Cranelift and LLVM on scalars and vectors alike: both backends,
//! scalars and tiles give the same bits.
//!
//! Algorithm: Cody & Waite's argument reduction, carried out in `f64`, with the polynomials of
//! Cephes' `sinf` and `cosf` (S. Moshier). `n = round(x 2/pi)` (ties to even, by adding and
//! subtracting `1.5 * 2^52`) and `r = (x - n P1) - n P1T` in `f64`, with fdlibm's `pi/2 = P1 +
//! P1T` (`P1` of 33 bits, so that `n P1` and the first subtraction are exact for `|n| < 2^20`):
//! `r`, rounded to `f32`, is within half an ulp of `x - n pi/2` even next to the multiples of
//! `pi/2`, where an `f32` reduction loses every bit. Then on `|r| <= pi/4`, `sin r = r + r z
//! S(z)` and `cos r = 1 - z/2 + z^2 C(z)`, `z = r^2` (Horner, degrees 2 in `z`), and the
//! quadrant `n mod 4` chooses `±sin r` or `±cos r` (`cos x` is `sin` of the next quadrant).
//! Below `|x| = 2^-12`, `sin x` is `x` itself (which keeps the sign of zero). Beyond `|x| =
//! 2^20` (and for infinities) the C library's function, element by element: a branch that
//! vectors take only when one of their elements is that large. NaN in gives NaN out. Only
//! `f32` and `f64` multiplies and adds (no fused multiply-add, whose availability differs
//! between hosts): the same bits on every x86-64 and AArch64 host. Accuracy, measured against
//! the `f64` functions on 2^20 points spanning `[-2^20, 2^20]`, 2^20 spanning `[-64, 64]`, at
//! the `f32`s next to the first 1000 multiples of `pi/2`, and at the edges: 1.48 ulp (`sin`) and
//! 1.495 ulp (`cos`) at most, the test allowing 1.5
//! (`tests/tests/tile_ops/elementwise.rs`); the C library's `sinf` and `cosf` are correctly
//! rounded on glibc.

use crate::expf::{horner, F32Ops, MAGIC};
use tilec_midend::UnOp;

/// `2 / pi`.
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// `1.5 * 2^52`: `t + M52 - M52` is `round(t)` for `|t| < 2^51`.
const M52: f64 = 6_755_399_441_055_744.0;
/// fdlibm's `pio2_1` (the first 33 bits of `pi/2`) and `pio2_1t` (`pi/2 - pio2_1`).
const P1: f64 = 1.570_796_326_734_125_6;
const P1T: f64 = 6.077_100_506_506_192e-11;
/// Beyond this `|x|`, the C library's functions (`n` would reach `2^20`, where `n P1` is no
/// longer exact).
pub(crate) const LIMIT: f32 = 1_048_576.0;
/// Cephes' `sinf` polynomial `S(z)`, highest power first: `sin r = r + r z S(z)`.
const S: [f32; 3] = [-1.951_529_6e-4, 8.332_161e-3, -1.666_665_5e-1];
/// Cephes' `cosf` polynomial `C(z)`, highest power first: `cos r = 1 - z/2 + z^2 C(z)`.
const C: [f32; 3] = [2.443_315_7e-5, -1.388_731_6e-3, 4.166_664_6e-2];
/// Below this `|x|` (`2^-12`), `sin x` rounds to `x` (`x^2 / 6 < 2^-25`).
const TINY: f32 = 1.0 / 4096.0;

/// Whether tilec's own `f32` `op` branches to the C library for some arguments (`sin` and
/// `cos` beyond [`LIMIT`]): such a branch keeps LLVM from vectorizing a loop that computes it.
#[cfg(feature = "llvm")]
pub(crate) fn branches_to_libm(op: UnOp) -> bool {
    matches!(op, UnOp::Sin | UnOp::Cos)
}

/// `sin x` (`op` = `Sin`) or `cos x` (`Cos`) for the `f32` scalar or vector `x` (the module
/// docs).
pub(crate) fn sincosf<B: F32Ops>(b: &mut B, op: UnOp, x: B::V) -> Result<B::V, B::E> {
    // The reduction, in f64.
    let xw = b.widen(x)?;
    let k = b.dconst(TWO_OVER_PI, &xw)?;
    let t = b.dmul(&xw, &k)?;
    let m = b.dconst(M52, &xw)?;
    let tm = b.dadd(&t, &m)?;
    let nw = b.dsub(&tm, &m)?;
    let (p1, p1t) = (b.dconst(P1, &xw)?, b.dconst(P1T, &xw)?);
    let p = b.dmul(&nw, &p1)?;
    let rw = b.dsub(&xw, &p)?;
    let p = b.dmul(&nw, &p1t)?;
    let rw = b.dsub(&rw, &p)?;
    let r = b.narrow(&rw)?;
    // n is an integer of at most 20 bits: exact in f32, and its bits below MAGIC's are its
    // two's complement (`expf`'s rounding trick, here on an integer).
    let mut n = b.narrow(&nw)?;
    if op == UnOp::Cos {
        let one = b.f32c(1.0, x)?;
        n = b.fadd(n, one)?;
    }
    let magic = b.f32c(MAGIC, x)?;
    let nm = b.fadd(n, magic)?;
    let (nb, mb) = (b.to_bits(nm)?, b.to_bits(magic)?);
    let quadrant = b.isub(nb, mb)?;
    // sin r and cos r on |r| <= pi/4.
    let z = b.fmul(r, r)?;
    let ps = horner(b, &S, z)?;
    let ps = b.fmul(ps, z)?;
    let ps = b.fmul(ps, r)?;
    let sin = b.fadd(r, ps)?;
    let pc = horner(b, &C, z)?;
    let pc = b.fmul(pc, z)?;
    let pc = b.fmul(pc, z)?;
    let half = b.f32c(0.5, x)?;
    let hz = b.fmul(half, z)?;
    let pc = b.fsub(pc, hz)?;
    let one = b.f32c(1.0, x)?;
    let cos = b.fadd(pc, one)?;
    // Quadrants 1 and 3 take cos r, 2 and 3 the negation.
    let y = b.select_bit(quadrant, 1, cos, sin)?;
    let minus = b.f32c(-1.0, x)?;
    let neg = b.fmul(y, minus)?;
    let mut y = b.select_bit(quadrant, 2, neg, y)?;
    if op == UnOp::Sin {
        let a = b.fabs(x)?;
        let tiny = b.f32c(TINY, x)?;
        y = b.select_lt(a, tiny, x, y)?;
    }
    b.libm_beyond(op, x, y, LIMIT)
}
