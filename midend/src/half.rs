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
}
