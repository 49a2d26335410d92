//! The scalar semantics of the Tile IR, defined once: what `+ - * / %`, `min`/`max`, the
//! comparisons, casts, bitcasts, `fma` and the unary functions compute for each scalar type.
//!
//! Every evaluator in tilec calls these functions: the constant folder (`fold.rs`), the
//! launch-function evaluator (`eval.rs`), the SIMT reference interpreter (`simt/interp`) and
//! the frontend's compile-time evaluation (through [`checked_int`] and [`cdiv`] for its
//! never-wrapping integer constants). The code generators are tested against them, edge values
//! included (`tests/tests/semantics.rs`: Cranelift, LLVM, Vulkan, PTX where a driver exists).
//! `docs/language.md` §6 states the same rules for users:
//!
//! - Integers (`i32`, `u32`, `i64`): `+ - *` and negation wrap (two's complement); `/`
//!   truncates toward zero and `%` has the sign of the dividend; a zero divisor gives 0 and
//!   `MIN / -1` gives `MIN` (`MIN % -1 == 0`); `u32` divides, compares and takes `min`/`max`
//!   unsigned.
//! - Floats: IEEE-754 in the operands' type (an `f32` result is rounded once from the exact
//!   `f64` result, which for `+ - * / sqrt` equals `f32` arithmetic). `a % b` is
//!   `a - trunc(a / b) * b` with each step rounded to the type. `min`/`max` are IEEE 754-2019
//!   `minimum`/`maximum`: NaN if either operand is NaN, and `-0 < +0`. Comparisons are
//!   IEEE (every comparison with NaN is false but `!=`).
//! - Casts: integer to integer truncates or extends (zero-extends from `u32`); integer or
//!   float to float rounds to nearest once; float to integer truncates toward zero and
//!   saturates at the type's limits, NaN giving 0 (Rust's `as`); anything to `bool` is
//!   `!= 0`; `bool` to a number is 0 or 1.
//! - `fma(a, b, c)` on floats rounds once (the reference; hosts without FMA may round twice,
//!   which the tests allow for); on integers it wraps.
//!
//! Constants are [`Const`]s: an `f32` value is held as the `f64` of the same value, an integer
//! as the `i64` of its value in its type (a `u32` is non-negative).

use crate::ir::{BinOp, CmpOp, Const, UnOp};
use crate::types::Scalar;
use std::fmt;

/// Why a scalar operation has no value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScalarError {
    /// An integer `/` or `%` by zero in checked (compile-time) arithmetic. Run-time division
    /// by zero is not an error: it gives 0 ([`bin`]).
    DivByZero,
    /// Checked (compile-time) integer arithmetic left the 64-bit range.
    Overflow,
    /// The operation is not defined on the operands' type (`sqrt` of an integer, `%` of
    /// bools, a bitcast between widths).
    Unsupported(String),
}

impl fmt::Display for ScalarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarError::DivByZero => f.write_str("integer division by zero"),
            ScalarError::Overflow => f.write_str("integer overflow"),
            ScalarError::Unsupported(m) => f.write_str(m),
        }
    }
}

fn unsupported<T>(msg: String) -> Result<T, ScalarError> {
    Err(ScalarError::Unsupported(msg))
}

fn truthy(c: Const) -> bool {
    match c {
        Const::Bool(b) => b,
        Const::Int(v, _) => v != 0,
        Const::Float(v, _) => v != 0.0,
    }
}

/// IEEE 754-2019 `minimum`: NaN if either operand is NaN; of `-0` and `+0`, `-0`.
pub fn fmin(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        // Equal: the same value, or zeros of either sign; `-0` wins (the union of the sign bits).
        f64::from_bits(x.to_bits() | y.to_bits())
    } else if x < y {
        x
    } else {
        y
    }
}

/// IEEE 754-2019 `maximum`: NaN if either operand is NaN; of `-0` and `+0`, `+0`.
pub fn fmax(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if x == y {
        f64::from_bits(x.to_bits() & y.to_bits())
    } else if x > y {
        x
    } else {
        y
    }
}

/// `x % y` on floats of type `ty`: `x - trunc(x / y) * y`, each step rounded to `ty` (so
/// `x % 0`, `inf % y` and `x % inf` are NaN, unlike C's `fmod` for the last).
pub fn frem(x: f64, y: f64, ty: Scalar) -> f64 {
    let t = ty.round(x / y).trunc();
    ty.round(x - ty.round(t * y))
}

/// `x` converted to the integer type `to`: truncated toward zero, saturated at `to`'s limits,
/// NaN giving 0.
pub fn float_to_int(x: f64, to: Scalar) -> i64 {
    match to {
        Scalar::I32 => x as i32 as i64,
        Scalar::U32 => x as u32 as i64,
        _ => x as i64,
    }
}

/// Whether `a op b` is an integer division or remainder by zero, for callers that report it
/// (launch grids, E0415); [`bin`] itself gives 0.
pub fn divides_by_zero(op: BinOp, b: Const, ty: Scalar) -> bool {
    matches!(op, BinOp::Div | BinOp::Rem) && ty.is_int() && ty.wrap(b.as_i64()) == 0
}

/// `a op b` with result type `ty` (the operands have that type; `bool` operands of `Min`/`Max`
/// act as `&&`/`||`). Integer division by zero gives 0.
///
/// # Errors
/// [`ScalarError::Unsupported`] for arithmetic on `bool` and `&&`/`||` on floats.
pub fn bin(op: BinOp, a: Const, b: Const, ty: Scalar) -> Result<Const, ScalarError> {
    use BinOp::*;
    match ty {
        Scalar::F16 | Scalar::BF16 => unsupported(format!("{op:?} on the storage type {}", ty.name())),
        Scalar::Bool => {
            let (x, y) = (truthy(a), truthy(b));
            Ok(Const::Bool(match op {
                And | Min => x && y,
                Or | Max => x || y,
                _ => return unsupported(format!("{op:?} on bool")),
            }))
        }
        Scalar::F32 | Scalar::F64 => {
            let (x, y) = (a.as_f64(), b.as_f64());
            let v = match op {
                Add => x + y,
                Sub => x - y,
                Mul => x * y,
                Div => x / y,
                Rem => frem(x, y, ty),
                Min => fmin(x, y),
                Max => fmax(x, y),
                And | Or => return unsupported(format!("{op:?} on floats")),
            };
            Ok(Const::Float(ty.round(v), ty))
        }
        Scalar::I32 | Scalar::U32 | Scalar::I64 => {
            let (x, y) = (ty.wrap(a.as_i64()), ty.wrap(b.as_i64()));
            let v = match op {
                Add => x.wrapping_add(y),
                Sub => x.wrapping_sub(y),
                Mul => x.wrapping_mul(y),
                Div | Rem if y == 0 => 0,
                Div => x.wrapping_div(y),
                Rem => x.wrapping_rem(y),
                Min => x.min(y),
                Max => x.max(y),
                And => x & y,
                Or => x | y,
            };
            Ok(Const::Int(ty.wrap(v), ty))
        }
    }
}

/// The new value of an element of type `ty` updated by an atomic read-modify-write
/// (`AtomicRmw(k)`) from its old value and the operand `v` (`cmp`: the comparand of `Cas`,
/// compared bit for bit, so `-0.0` and `0.0` differ and a NaN matches its own bits). Float
/// minima and maxima follow IEEE 754 `totalOrder` (what integer atomics on the bits give:
/// `-NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN`).
///
/// For `ty` `f16` or `bf16` the values are `f32` constants holding the element's value (`old`,
/// exact) and the operands; the operands are rounded to `ty` first and the result is the new
/// element's value, rounded to `ty` ([`crate::Rmw`]).
pub fn rmw(k: crate::Rmw, old: Const, v: Const, cmp: Option<Const>, ty: Scalar) -> Result<Const, ScalarError> {
    use crate::Rmw;
    if ty.is_half() {
        let bits = |c: Const| crate::half::narrow(ty, c.as_f64() as f32);
        let round = |c: Const| Const::Float(crate::half::widen(ty, bits(c)), Scalar::F32);
        let v = round(v);
        return Ok(match k {
            Rmw::Cas if cmp.map(bits) == Some(bits(old)) => v,
            Rmw::Cas => old,
            // Exact half values: their f32 sum rounded once is the half sum (f32 has more than
            // 2p + 2 bits, Figueroa 1995); totalOrder is that of their f32 values.
            Rmw::Add => round(bin(BinOp::Add, old, v, Scalar::F32)?),
            _ => rmw(k, old, v, None, Scalar::F32)?,
        });
    }
    Ok(match k {
        Rmw::Add => bin(BinOp::Add, old, v, ty)?,
        Rmw::Min | Rmw::Max if ty.is_float() => {
            // IEEE 754 totalOrder: -NaN < -inf < .. < -0.0 < 0.0 < .. < inf < NaN.
            let key = |c: Const| -> i64 {
                let x = c.as_f64();
                let b = if ty == Scalar::F32 { (x as f32).to_bits() as i32 as i64 } else { x.to_bits() as i64 };
                let m = if ty == Scalar::F32 { i32::MAX as i64 } else { i64::MAX };
                if b < 0 {
                    b ^ m
                } else {
                    b
                }
            };
            let pick_v = if k == Rmw::Min { key(v) < key(old) } else { key(v) > key(old) };
            if pick_v {
                v
            } else {
                old
            }
        }
        Rmw::Min => bin(BinOp::Min, old, v, ty)?,
        Rmw::Max => bin(BinOp::Max, old, v, ty)?,
        Rmw::Xchg => v,
        Rmw::Cas => {
            let same = match (old, cmp) {
                (Const::Float(a, _), Some(Const::Float(b, _))) if ty == Scalar::F32 => {
                    (a as f32).to_bits() == (b as f32).to_bits()
                }
                (Const::Float(a, _), Some(Const::Float(b, _))) => a.to_bits() == b.to_bits(),
                (a, Some(b)) => a == b,
                (_, None) => false,
            };
            if same {
                v
            } else {
                old
            }
        }
    })
}

/// `a op b` for compile-time integer constants, in 64 bits without wrapping.
///
/// # Errors
/// [`ScalarError::Overflow`] when the exact result is not an `i64` (`i64::MIN / -1`
/// included), [`ScalarError::DivByZero`] for `/` or `%` by zero, `Unsupported` for `&&`/`||`.
pub fn checked_int(op: BinOp, a: i64, b: i64) -> Result<i64, ScalarError> {
    use BinOp::*;
    let r = match op {
        Add => a.checked_add(b),
        Sub => a.checked_sub(b),
        Mul => a.checked_mul(b),
        Div | Rem if b == 0 => return Err(ScalarError::DivByZero),
        Div => a.checked_div(b),
        Rem => a.checked_rem(b),
        Min => Some(a.min(b)),
        Max => Some(a.max(b)),
        And | Or => return unsupported(format!("{op:?} on integers")),
    };
    r.ok_or(ScalarError::Overflow)
}

/// `cdiv(a, b) = (a + b - 1) / b` (division truncating toward zero, as at run time) for
/// compile-time integer constants, without wrapping.
///
/// # Errors
/// As [`checked_int`].
pub fn cdiv(a: i64, b: i64) -> Result<i64, ScalarError> {
    let s = checked_int(BinOp::Add, a, b)?;
    let s = checked_int(BinOp::Sub, s, 1)?;
    checked_int(BinOp::Div, s, b)
}

/// `a op b`, compared in the type of `a` (integers in their type, `u32` unsigned; floats as
/// IEEE, unordered when either is NaN).
pub fn cmp(op: CmpOp, a: Const, b: Const) -> bool {
    let ord = match a.ty() {
        Scalar::F32 | Scalar::F64 => a.as_f64().partial_cmp(&b.as_f64()),
        Scalar::Bool => Some(truthy(a).cmp(&truthy(b))),
        s => Some(s.wrap(a.as_i64()).cmp(&s.wrap(b.as_i64()))),
    };
    use std::cmp::Ordering::*;
    match op {
        CmpOp::Eq => ord == Some(Equal),
        CmpOp::Ne => ord != Some(Equal),
        CmpOp::Lt => ord == Some(Less),
        CmpOp::Le => matches!(ord, Some(Less | Equal)),
        CmpOp::Gt => ord == Some(Greater),
        CmpOp::Ge => matches!(ord, Some(Greater | Equal)),
    }
}

/// `op a` with result type `ty`. The transcendental functions are evaluated in `f64` and
/// rounded once (the targets' `f32` functions may differ by a few ulp: `docs/language.md` §6.4).
///
/// # Errors
/// [`ScalarError::Unsupported`] for math on integers or bools and `!` on floats.
pub fn un(op: UnOp, a: Const, ty: Scalar) -> Result<Const, ScalarError> {
    use UnOp::*;
    match ty {
        Scalar::F16 | Scalar::BF16 => unsupported(format!("{op:?} on the storage type {}", ty.name())),
        Scalar::Bool => match op {
            Not => Ok(Const::Bool(!truthy(a))),
            _ => unsupported(format!("{op:?} on bool")),
        },
        Scalar::F32 | Scalar::F64 => {
            let x = a.as_f64();
            let v = match op {
                Neg => -x,
                Abs => x.abs(),
                Sqrt => x.sqrt(),
                Exp => x.exp(),
                Log => x.ln(),
                Sin => x.sin(),
                Cos => x.cos(),
                Tanh => x.tanh(),
                Exp2 => x.exp2(),
                Log2 => x.log2(),
                Trunc => x.trunc(),
                RoundF16 | RoundBf16 if ty != Scalar::F32 => return unsupported(format!("{op:?} on {}", ty.name())),
                RoundF16 => crate::half::round(Scalar::F16, x as f32) as f64,
                RoundBf16 => crate::half::round(Scalar::BF16, x as f32) as f64,
                Not => return unsupported("`!` on a float".into()),
            };
            Ok(Const::Float(ty.round(v), ty))
        }
        Scalar::I32 | Scalar::U32 | Scalar::I64 => {
            let x = ty.wrap(a.as_i64());
            let v = match op {
                Neg => x.wrapping_neg(),
                Abs => x.wrapping_abs(),
                Not => !x,
                Trunc => x,
                _ => return unsupported(format!("{op:?} on an integer")),
            };
            Ok(Const::Int(ty.wrap(v), ty))
        }
    }
}

/// `a` converted to `to` (the table at the top of this module).
pub fn cast(a: Const, to: Scalar) -> Const {
    match to.compute() {
        Scalar::Bool => Const::Bool(truthy(a)),
        Scalar::F32 => Const::Float(
            match a {
                // One rounding from the integer (not through `f64`).
                Const::Int(v, _) => v as f32 as f64,
                _ => a.as_f64() as f32 as f64,
            },
            Scalar::F32,
        ),
        Scalar::F64 => Const::Float(a.as_f64(), to),
        Scalar::I32 | Scalar::U32 | Scalar::I64 => {
            let v = match a {
                Const::Float(x, _) => float_to_int(x, to),
                _ => a.as_i64(),
            };
            Const::Int(to.wrap(v), to)
        }
        Scalar::F16 | Scalar::BF16 => unreachable!("compute types are not storage types"),
    }
}

/// The bits of `a` reinterpreted as `to` (same width: `i64`/`f64`, `i32`/`u32`/`f32`).
///
/// # Errors
/// [`ScalarError::Unsupported`] for bools and different widths.
pub fn bitcast(a: Const, to: Scalar) -> Result<Const, ScalarError> {
    let bits: u64 = match a {
        Const::Float(x, Scalar::F32) => (x as f32).to_bits() as u64,
        Const::Float(x, _) => x.to_bits(),
        Const::Int(v, s) if s.bytes() == 4 => v as u32 as u64,
        Const::Int(v, _) => v as u64,
        Const::Bool(_) => return unsupported("bitcast of a bool".into()),
    };
    if a.ty().bytes() != to.bytes() {
        return unsupported(format!("bitcast from {} to {}", a.ty().name(), to.name()));
    }
    Ok(match to {
        Scalar::F32 => Const::Float(f32::from_bits(bits as u32) as f64, to),
        Scalar::F64 => Const::Float(f64::from_bits(bits), to),
        Scalar::I32 => Const::Int(bits as u32 as i32 as i64, to),
        Scalar::U32 => Const::Int(bits as u32 as i64, to),
        Scalar::I64 => Const::Int(bits as i64, to),
        Scalar::Bool => return unsupported("bitcast to a bool".into()),
        Scalar::F16 | Scalar::BF16 => return unsupported(format!("bitcast to {}", to.name())),
    })
}

/// `a * b + c` with result type `ty`: one rounding for floats, wrapping for integers,
/// `(a && b) || c` for bools.
pub fn fma(a: Const, b: Const, c: Const, ty: Scalar) -> Const {
    match ty {
        Scalar::F32 => Const::Float((a.as_f64() as f32).mul_add(b.as_f64() as f32, c.as_f64() as f32) as f64, ty),
        Scalar::F64 => Const::Float(a.as_f64().mul_add(b.as_f64(), c.as_f64()), ty),
        Scalar::Bool => Const::Bool((truthy(a) && truthy(b)) || truthy(c)),
        _ => {
            let v = ty.wrap(a.as_i64()).wrapping_mul(ty.wrap(b.as_i64())).wrapping_add(ty.wrap(c.as_i64()));
            Const::Int(ty.wrap(v), ty)
        }
    }
}

#[cfg(test)]
mod tests;
