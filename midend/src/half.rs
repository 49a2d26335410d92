//! The storage types `f16` and `bf16`: conversion of their bits to and from `f32`, the one
//! definition that the interpreters, the runtime and the tests use (the code generators emit
//! the same conversions: widening is exact, narrowing rounds to nearest, ties to even).

use crate::Scalar;

/// The value of the `f16` or `bf16` (by `elem`) with bits `bits`, exactly.
///
/// # Panics
/// If `elem` is not `F16` or `BF16`.
pub fn widen(elem: Scalar, bits: u16) -> f64 {
    match elem {
        Scalar::F16 => half::f16::from_bits(bits).to_f64(),
        Scalar::BF16 => half::bf16::from_bits(bits).to_f64(),
        _ => panic!("widen: {} is not a storage type", elem.name()),
    }
}

/// The bits of the `f16` or `bf16` (by `elem`) nearest to `x`, ties to even; values beyond the
/// largest finite one become infinities and NaN stays a (quiet) NaN.
///
/// # Panics
/// If `elem` is not `F16` or `BF16`.
pub fn narrow(elem: Scalar, x: f32) -> u16 {
    match elem {
        Scalar::F16 => half::f16::from_f32(x).to_bits(),
        Scalar::BF16 => half::bf16::from_f32(x).to_bits(),
        _ => panic!("narrow: {} is not a storage type", elem.name()),
    }
}

/// `x` rounded to the nearest `f16` or `bf16` (by `elem`) as [`narrow`] does, as an `f32`:
/// the meaning of `UnOp::RoundF16` and `UnOp::RoundBf16`.
///
/// # Panics
/// If `elem` is not `F16` or `BF16`.
pub fn round(elem: Scalar, x: f32) -> f32 {
    widen(elem, narrow(elem, x)) as f32
}

/// The `f64` `x` rounded to the nearest `f16` or `bf16` (by `elem`) in one step, ties to even:
/// rounded to `f32` with round-to-odd first, which keeps the second rounding exact (Boldo and
/// Melquiond 2008; `halfarith.rs` emits the same steps for `as f16`). (The `half` crate's
/// `from_f64` ignores the low 29 bits of the `f64` and can round a value just above a tie down.)
///
/// # Panics
/// If `elem` is not `F16` or `BF16`.
pub fn round_f64(elem: Scalar, x: f64) -> f64 {
    let t = x as f32;
    let odd = if t as f64 == x || x.is_nan() {
        t
    } else if x.abs() > (t as f64).abs() {
        f32::from_bits(t.to_bits() | 1)
    } else {
        f32::from_bits((t.to_bits() - 1) | 1)
    };
    widen(elem, narrow(elem, odd))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f16_round_trip_and_ties() {
        assert_eq!(widen(Scalar::F16, 0x3c00), 1.0);
        assert_eq!(widen(Scalar::F16, 0x0001), 2f64.powi(-24));
        assert_eq!(narrow(Scalar::F16, 1.0 + 2f32.powi(-11)), 0x3c00); // tie to even
        assert_eq!(narrow(Scalar::F16, 1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(narrow(Scalar::F16, 70000.0), 0x7c00);
        assert!(widen(Scalar::F16, narrow(Scalar::F16, f32::NAN)).is_nan());
    }

    #[test]
    fn bf16_round_trip_and_ties() {
        assert_eq!(widen(Scalar::BF16, 0x3f80), 1.0);
        assert_eq!(narrow(Scalar::BF16, f32::from_bits(0x3f80_8000)), 0x3f80); // tie to even
        assert_eq!(narrow(Scalar::BF16, f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(narrow(Scalar::BF16, f32::from_bits(0x3f80_8001)), 0x3f81);
        assert!(widen(Scalar::BF16, narrow(Scalar::BF16, f32::NAN)).is_nan());
    }

    /// The nearest `elem` value to `x` among the neighbours of a first guess, ties to the even
    /// bit pattern: a reference for positive finite `x` in range.
    fn nearest(elem: Scalar, x: f64) -> f64 {
        let guess = narrow(elem, x as f32) as i32;
        let mut best: Option<(f64, i32)> = None;
        for b in (guess - 2).max(0)..=guess + 2 {
            let c = widen(elem, b as u16);
            let better = match best {
                None => true,
                Some((w, wb)) => {
                    (c - x).abs() < (w - x).abs() || ((c - x).abs() == (w - x).abs() && b % 2 == 0 && wb % 2 != 0)
                }
            };
            if better && c.is_finite() {
                best = Some((c, b));
            }
        }
        best.expect("a neighbour").0
    }

    #[test]
    fn f64_rounds_once_to_half_types() {
        let mut seed = 7u64;
        for elem in [Scalar::F16, Scalar::BF16] {
            let ulp = if elem == Scalar::F16 { 2f64.powi(-10) } else { 2f64.powi(-7) };
            for k in 0..2000 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let m = 1.0 + (seed >> 11) as f64 / (1u64 << 53) as f64;
                // Every fourth value just above or below a tie, by less than f32 resolves.
                let x = match k % 4 {
                    0 => (m / ulp).floor() * ulp + ulp / 2.0 + 2f64.powi(-40),
                    1 => (m / ulp).floor() * ulp + ulp / 2.0 - 2f64.powi(-40),
                    _ => m,
                } * 2f64.powi((k % 13) - 6);
                assert_eq!(round_f64(elem, x), nearest(elem, x), "{elem:?} {x:e}");
                assert_eq!(round_f64(elem, -x), -nearest(elem, x), "{elem:?} {:e}", -x);
            }
        }
        assert_eq!(round_f64(Scalar::F16, 1e300), f64::INFINITY);
        assert!(round_f64(Scalar::BF16, f64::NAN).is_nan());
        assert_eq!(round_f64(Scalar::F16, -0.0).to_bits(), (-0.0f64).to_bits());
    }
}
