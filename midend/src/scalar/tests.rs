//! The rules of the module docs, value by value; expected values are written out by hand.

use super::*;
use crate::ir::{BinOp::*, CmpOp};
use crate::types::Scalar::{self, *};

fn i(v: i64, s: Scalar) -> Const {
    Const::Int(v, s)
}

fn f(v: f64, s: Scalar) -> Const {
    Const::Float(v, s)
}

fn fv(c: Const) -> f64 {
    match c {
        Const::Float(v, _) => v,
        other => panic!("not a float: {other:?}"),
    }
}

fn iv(c: Const) -> i64 {
    match c {
        Const::Int(v, _) => v,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn integer_arithmetic_wraps_and_division_by_zero_is_zero() {
    let b = |op, x, y, s| iv(bin(op, i(x, s), i(y, s), s).unwrap());
    assert_eq!(b(Add, i32::MAX as i64, 1, I32), i32::MIN as i64);
    assert_eq!(b(Mul, 65536, 65536, I32), 0);
    assert_eq!(b(Sub, 0, 1, U32), u32::MAX as i64);
    assert_eq!(b(Add, i64::MAX, 1, I64), i64::MIN);
    assert_eq!(b(Div, i32::MIN as i64, -1, I32), i32::MIN as i64);
    assert_eq!(b(Rem, i32::MIN as i64, -1, I32), 0);
    assert_eq!(b(Div, i64::MIN, -1, I64), i64::MIN);
    assert_eq!(b(Div, 7, 0, I32), 0);
    assert_eq!(b(Rem, 7, 0, U32), 0);
    assert_eq!(b(Div, -7, 2, I32), -3);
    assert_eq!(b(Rem, -7, 3, I32), -1);
    assert_eq!(b(Rem, 7, -3, I32), 1);
    // u32 is unsigned: 0xffff_ffff / 2, and min/max.
    assert_eq!(b(Div, u32::MAX as i64, 2, U32), 0x7fff_ffff);
    assert_eq!(b(Min, u32::MAX as i64, 1, U32), 1);
    assert_eq!(b(Max, -1, 1, I32), 1);
    assert!(divides_by_zero(Div, i(0, I32), I32));
    assert!(divides_by_zero(Rem, i(1 << 32, I32), I32), "2^32 is 0 as an i32");
    assert!(!divides_by_zero(Div, f(0.0, F32), F32));
}

#[test]
fn float_min_max_propagate_nan_and_order_zeros() {
    let (n, z) = (f64::NAN, 0.0f64);
    assert!(fmin(n, 1.0).is_nan() && fmin(1.0, n).is_nan() && fmax(n, 1.0).is_nan() && fmax(1.0, n).is_nan());
    assert_eq!(fmin(-z, z).to_bits(), (-0.0f64).to_bits());
    assert_eq!(fmin(z, -z).to_bits(), (-0.0f64).to_bits());
    assert_eq!(fmax(-z, z).to_bits(), 0.0f64.to_bits());
    assert_eq!(fmax(z, -z).to_bits(), 0.0f64.to_bits());
    assert_eq!(fmin(f64::NEG_INFINITY, 3.0), f64::NEG_INFINITY);
    assert_eq!(fmax(2.0, 3.0), 3.0);
    let b = |op, x, y| fv(bin(op, f(x, F32), f(y, F32), F32).unwrap());
    assert!(b(Min, n, 1.0).is_nan());
    assert!(b(Max, 1.0, n).is_nan());
}

#[test]
fn float_remainder_is_a_minus_trunc_quotient_times_b() {
    let b = |x: f64, y: f64, s| fv(bin(Rem, f(x, s), f(y, s), s).unwrap());
    assert_eq!(b(7.5, 2.0, F64), 1.5);
    assert_eq!(b(-7.5, 2.0, F64), -1.5);
    assert_eq!(b(7.5, -2.0, F32), 1.5);
    assert!(b(1.0, 0.0, F32).is_nan());
    assert!(b(f64::INFINITY, 2.0, F64).is_nan());
    assert!(b(1.0, f64::INFINITY, F64).is_nan(), "0 * inf in the formula, not fmod's 1.0");
    // f32: the quotient is rounded to f32 first. 16777217 / 2 = 8388608.5 (exact in f32 only
    // after rounding 16777217 itself to 16777216): operands are f32 values, so x = 2^24.
    assert_eq!(b(16777216.0, 3.0, F32), 1.0);
    // 1e10 % 3: in f64 the quotient 3333333333.33.. truncates exactly; 1e10 - 3333333333 * 3 = 1.
    assert_eq!(b(1e10, 3.0, F64), 1.0);
}

#[test]
fn float_arithmetic_rounds_to_the_type() {
    let third = fv(bin(Div, f(1.0, F32), f(3.0, F32), F32).unwrap());
    assert_eq!(third, (1.0f32 / 3.0f32) as f64);
    let s = fv(bin(Add, f(16777216.0, F32), f(1.0, F32), F32).unwrap());
    assert_eq!(s, 16777216.0, "2^24 + 1 rounds to even in f32");
    let s = fv(bin(Add, f(16777216.0, F64), f(1.0, F64), F64).unwrap());
    assert_eq!(s, 16777217.0);
    assert_eq!(fv(un(UnOp::Sqrt, f(2.0, F32), F32).unwrap()), 2.0f32.sqrt() as f64);
    assert!(fv(un(UnOp::Sqrt, f(-1.0, F64), F64).unwrap()).is_nan());
    assert_eq!(fv(un(UnOp::Trunc, f(-2.7, F64), F64).unwrap()), -2.0);
    assert_eq!(fv(un(UnOp::Trunc, f(-0.5, F64), F64).unwrap()).to_bits(), (-0.0f64).to_bits());
    assert_eq!(iv(un(UnOp::Neg, i(i32::MIN as i64, I32), I32).unwrap()), i32::MIN as i64);
    assert_eq!(iv(un(UnOp::Abs, i(i32::MIN as i64, I32), I32).unwrap()), i32::MIN as i64);
    assert!(un(UnOp::Sqrt, i(4, I32), I32).is_err());
}

#[test]
fn comparisons_are_typed() {
    // i64 values that f64 cannot tell apart.
    let (p, q) = (i((1 << 53) + 1, I64), i(1 << 53, I64));
    assert!(!cmp(CmpOp::Eq, p, q));
    assert!(cmp(CmpOp::Gt, p, q));
    // u32 is unsigned.
    assert!(cmp(CmpOp::Gt, i(u32::MAX as i64, U32), i(1, U32)));
    // NaN: everything false but !=.
    let (n, one) = (f(f64::NAN, F32), f(1.0, F32));
    for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge] {
        assert!(!cmp(op, n, one) && !cmp(op, n, n), "{op:?}");
    }
    assert!(cmp(CmpOp::Ne, n, n));
    assert!(cmp(CmpOp::Eq, f(0.0, F64), f(-0.0, F64)));
    assert!(cmp(CmpOp::Ne, Const::Bool(true), Const::Bool(false)));
}

#[test]
fn float_to_integer_casts_saturate_and_nan_is_zero() {
    let c = |x: f64, to| iv(cast(f(x, F64), to));
    assert_eq!(c(3e9, I32), i32::MAX as i64);
    assert_eq!(c(-3e9, I32), i32::MIN as i64);
    assert_eq!(c(f64::NAN, I32), 0);
    assert_eq!(c(f64::INFINITY, I64), i64::MAX);
    assert_eq!(c(f64::NEG_INFINITY, I64), i64::MIN);
    assert_eq!(c(-1.5, U32), 0);
    assert_eq!(c(5e9, U32), u32::MAX as i64);
    assert_eq!(c(-2.9, I32), -2);
    assert_eq!(c(2147483520.0, I32), 2147483520);
    assert_eq!(iv(cast(f(3000000000.0, F32), I32)), i32::MAX as i64);
}

#[test]
fn integer_and_float_casts_round_once() {
    // 2^56 + 2^32 + 1 is just above the midpoint of two f32s (2^56 and 2^56 + 2^33): once
    // rounded it goes up; through f64 (to 2^56 + 2^32, the exact midpoint) it would go to even, 2^56.
    let v: i64 = (1 << 56) + (1 << 32) + 1;
    assert_eq!(fv(cast(i(v, I64), F32)), (1u64 << 56) as f64 + (1u64 << 33) as f64);
    assert_eq!(fv(cast(i(u32::MAX as i64, U32), F32)), 4294967296.0);
    assert_eq!(iv(cast(i(-1, I32), U32)), u32::MAX as i64);
    assert_eq!(iv(cast(i(u32::MAX as i64, U32), I64)), u32::MAX as i64, "zero-extends");
    assert_eq!(iv(cast(i(-1, I32), I64)), -1, "sign-extends");
    assert_eq!(iv(cast(i((1 << 32) + 5, I64), I32)), 5);
    assert_eq!(cast(f(0.5, F32), Scalar::Bool), Const::Bool(true));
    assert_eq!(cast(f(f64::NAN, F32), Scalar::Bool), Const::Bool(true), "NaN != 0");
    assert_eq!(fv(cast(Const::Bool(true), F64)), 1.0);
    assert_eq!(fv(cast(f(0.1, F64), F32)), 0.1f32 as f64);
}

#[test]
fn checked_constant_arithmetic_never_wraps() {
    assert_eq!(checked_int(Add, i64::MAX, 1), Err(ScalarError::Overflow));
    assert_eq!(checked_int(Div, i64::MIN, -1), Err(ScalarError::Overflow));
    assert_eq!(checked_int(Rem, 1, 0), Err(ScalarError::DivByZero));
    assert_eq!(checked_int(Div, -7, 2), Ok(-3));
    assert_eq!(cdiv(10, 4), Ok(3));
    assert_eq!(cdiv(8, 4), Ok(2));
    // Truncating, as the run-time `(a + b - 1) / b`: cdiv(-6, 4) = (-3) / 4 = 0.
    assert_eq!(cdiv(-6, 4), Ok(0));
    assert_eq!(cdiv(1, 0), Err(ScalarError::DivByZero));
    assert_eq!(cdiv(i64::MAX, 2), Err(ScalarError::Overflow));
}

#[test]
fn bitcasts_and_fma() {
    assert_eq!(iv(bitcast(f(1.0, F32), I32).unwrap()), 0x3f80_0000);
    assert_eq!(iv(bitcast(f(-0.0, F32), U32).unwrap()), 0x8000_0000);
    assert_eq!(fv(bitcast(i(0x4000_0000_0000_0000, I64), F64).unwrap()), 2.0);
    assert!(bitcast(f(1.0, F32), I64).is_err());
    // One rounding: (1 + 2^-12)^2 - 1 in f32 keeps the 2^-24 term only when fused.
    let a = 1.0 + 2f64.powi(-12);
    let r = fv(fma(f(a, F32), f(a, F32), f(-1.0, F32), F32));
    assert_eq!(r, 2f64.powi(-11) + 2f64.powi(-24));
    assert_eq!(iv(fma(i(65536, I32), i(65536, I32), i(5, I32), I32)), 5);
}
