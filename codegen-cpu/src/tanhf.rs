//! `tanh` of `f32` on the CPU, tilec's own instead of the C library's `tanhf` (a call per
//! element that no vector code can make), written once over [`F32Ops`] as `expf.rs` and
//! emitted by Cranelift and LLVM on scalars and vectors alike: both backends, scalars and tiles
//! give the same bits.
//!
//! Algorithm: Cephes' `tanhf` (S. Moshier). Below `|x| = 2^-12`, `x` itself; below 0.625, the
//! odd minimax polynomial `x + x z P(z)`, `z = x^2` (degree 4 in `z`, Horner); otherwise
//! `1 - 2 / (e^(2|x|) + 1)` with tilec's `expf` and the sign of `x` (for `|x|` beyond about
//! 44.4, `e^(2|x|)` is infinite and the result exactly 1). Every form is computed and one
//! selected, so that a vector needs no branch. `tanh(±0) = ±0`, `tanh(±inf) = ±1`, NaN in
//! gives NaN out. Only `f32` multiplies, adds and one division (no fused multiply-add): the
//! same bits on every x86-64 and AArch64 host. Accuracy, measured against the `f64` tanh on
//! 2^20 points spanning `[-10, 10]` and at the edges: at most 1.26 ulp (the test allows 1.5;
//! `tests/tests/tile_ops/elementwise.rs`).

use crate::expf::{expf, horner, F32Ops};

/// Below this `|x|`, the polynomial; from it on, the exponential form.
const SMALL: f32 = 0.625;
/// Cephes' `tanhf` polynomial `P(z)`, highest power first: `tanh(x) = x + x z P(z)`.
const P: [f32; 5] = [-5.704_988_7e-3, 2.063_909e-2, -5.373_971_6e-2, 1.333_144_2e-1, -3.333_328e-1];
/// Below this `|x|` (`2^-12`), `tanh(x)` rounds to `x` (`x^2 / 3 < 2^-25`): `x` itself, which
/// also keeps the sign of zero (`-0 + (-0) 0 P(0)` would be `+0`).
const TINY: f32 = 1.0 / 4096.0;

/// `tanh(x)` for the `f32` scalar or vector `x` (the module docs).
pub(crate) fn tanhf<B: F32Ops>(b: &mut B, x: B::V) -> Result<B::V, B::E> {
    // |x| < 0.625: x + x z P(z).
    let z = b.fmul(x, x)?;
    let p = horner(b, &P, z)?;
    let p = b.fmul(p, z)?;
    let p = b.fmul(p, x)?;
    let small = b.fadd(x, p)?;
    let tiny = b.f32c(TINY, x)?;
    let a = b.fabs(x)?;
    let small = b.select_lt(a, tiny, x, small)?;
    // |x| >= 0.625: 1 - 2 / (e^(2|x|) + 1), signed.
    let a2 = b.fadd(a, a)?;
    let e = expf(b, a2)?;
    let one = b.f32c(1.0, x)?;
    let d = b.fadd(e, one)?;
    let two = b.f32c(2.0, x)?;
    let q = b.fdiv(two, d)?;
    let big = b.fsub(one, q)?;
    let zero = b.f32c(0.0, x)?;
    let neg = b.fsub(zero, big)?;
    let big = b.select_lt(x, zero, neg, big)?;
    // NaN: `a < SMALL` is false, and `big` is NaN (through `expf`).
    let small_bound = b.f32c(SMALL, x)?;
    b.select_lt(a, small_bound, small, big)
}
