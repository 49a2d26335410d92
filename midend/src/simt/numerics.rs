//! Float `min`/`max`, float `%` and float-to-integer casts in the SIMT form, written out in
//! operations that every device defines, so that both GPU backends compute exactly what
//! [`crate::scalar`] defines and the CPU target computes:
//!
//! - SPIR-V's GLSL.std.450 `FMin`/`FMax` leave a NaN operand and the order of `-0` and `+0`
//!   undefined, and PTX's `min`/`max` (below `sm_80`) return the number: `min`/`max` become
//!   compares and selects, NaN if either operand is NaN, `-0 < +0` (IEEE 754-2019
//!   `minimum`/`maximum`).
//! - SPIR-V's `OpConvertFToS`/`OpConvertFToU` of NaN or an out-of-range value is undefined:
//!   the conversion's result is replaced by 0 (NaN) or the type's limit (saturation) by
//!   selects.
//! - `OpFRem` and LLVM's `frem` are not `a - trunc(a / b) * b` step by step: `%` becomes
//!   exactly that sequence (`Trunc` is a `Un` op of the SIMT form for `f32`; `f64` is
//!   truncated through an `i64` conversion, which lavapipe gets right where its `f64`
//!   `Trunc` does not).
//!
//! The sequences cost a few instructions each; every other float operation maps to one.

use super::lower::Lower;
use crate::ir::*;
use crate::types::{Scalar, Type};

impl Lower<'_> {
    /// Float `a op b` for `op` in `Min`, `Max`, `Rem` (see the module docs).
    pub(super) fn float_bin(&mut self, k: BinOp, a: Value, b: Value, s: Scalar) -> Value {
        let t = Type::Scalar(s);
        if k == BinOp::Rem {
            let q = self.emit1(OpKind::Bin(BinOp::Div), vec![a, b], t.clone());
            let tq = self.trunc(q, s);
            let p = self.emit1(OpKind::Bin(BinOp::Mul), vec![tq, b], t.clone());
            return self.emit1(OpKind::Bin(BinOp::Sub), vec![a, p], t);
        }
        let max = k == BinOp::Max;
        let (wins, loses) = if max { (CmpOp::Gt, CmpOp::Lt) } else { (CmpOp::Lt, CmpOp::Gt) };
        let a_wins = self.cmp(wins, a, b);
        let b_wins = self.cmp(loses, a, b);
        // Equal operands: the same bits, or zeros of either sign; `max` takes the common bits
        // (`+0` if either is), `min` their union (`-0` if either is).
        let it = if s == Scalar::F64 { Scalar::I64 } else { Scalar::I32 };
        let ai = self.emit1(OpKind::Bitcast(it), vec![a], Type::Scalar(it));
        let bi = self.emit1(OpKind::Bitcast(it), vec![b], Type::Scalar(it));
        let bits = self.emit1(OpKind::Bin(if max { BinOp::And } else { BinOp::Or }), vec![ai, bi], Type::Scalar(it));
        let eq = self.emit1(OpKind::Bitcast(s), vec![bits], t.clone());
        let r = self.select(b_wins, b, eq, s);
        let r = self.select(a_wins, a, r, s);
        let a_nan = self.cmp(CmpOp::Ne, a, a);
        let b_nan = self.cmp(CmpOp::Ne, b, b);
        let nan = self.emit1(OpKind::Bin(BinOp::Or), vec![a_nan, b_nan], Type::Scalar(Scalar::Bool));
        let sum = self.emit1(OpKind::Bin(BinOp::Add), vec![a, b], t);
        self.select(nan, sum, r, s)
    }

    /// `trunc(x)`: the device's for `f32`; for `f64`, through an `i64` conversion where that
    /// is exact (`|x| < 2^52`; larger values, infinities and NaN are their own truncation)
    /// with the sign of `x` put back (so `trunc(-0.5)` is `-0`). Lavapipe's `f64` `Trunc`
    /// returns its operand unchanged for some operands beyond 2^31 (`5e9 / 1.5`).
    fn trunc(&mut self, x: Value, s: Scalar) -> Value {
        let t = Type::Scalar(s);
        if s != Scalar::F64 {
            return self.emit1(OpKind::Un(UnOp::Trunc), vec![x], t);
        }
        let i64t = Type::Scalar(Scalar::I64);
        let ax = self.emit1(OpKind::Un(UnOp::Abs), vec![x], t.clone());
        let limit = self.elemc(2f64.powi(52), s);
        let small = self.cmp(CmpOp::Lt, ax, limit);
        // NaN compares false: `x` itself below, and the conversion's result is not used. The
        // select between the conversions keeps drivers from seeing `i2f(f2i(x))` and turning
        // it back into their `f64` `trunc` (Mesa's NIR does).
        let xi = self.emit1(OpKind::Cast(Scalar::I64), vec![x], i64t.clone());
        let zero = self.cst(Const::Int(0, Scalar::I64));
        let xi = self.select(small, xi, zero, Scalar::I64);
        let back = self.emit1(OpKind::Cast(s), vec![xi], t.clone());
        let bits = self.emit1(OpKind::Bitcast(Scalar::I64), vec![back], i64t.clone());
        let xbits = self.emit1(OpKind::Bitcast(Scalar::I64), vec![x], i64t.clone());
        let sign_mask = self.cst(Const::Int(i64::MIN, Scalar::I64));
        let sign = self.emit1(OpKind::Bin(BinOp::And), vec![xbits, sign_mask], i64t.clone());
        let signed = self.emit1(OpKind::Bin(BinOp::Or), vec![bits, sign], i64t);
        let r = self.emit1(OpKind::Bitcast(s), vec![signed], t);
        self.select(small, r, x, s)
    }

    /// `x as to`, saturating and NaN to 0 for a float `x` and an integer `to` (module docs).
    pub(super) fn cast(&mut self, x: Value, from: Scalar, to: Scalar) -> Value {
        let v = self.emit1(OpKind::Cast(to), vec![x], Type::Scalar(to));
        if !from.is_float() || !to.is_int() {
            return v;
        }
        // Bounds: the first value too large, and the smallest allowed (both exact in f32).
        let (hi, lo, max, min) = match to {
            Scalar::I32 => (2f64.powi(31), -(2f64.powi(31)), i32::MAX as i64, i32::MIN as i64),
            Scalar::U32 => (2f64.powi(32), 0.0, u32::MAX as i64, 0),
            _ => (2f64.powi(63), -(2f64.powi(63)), i64::MAX, i64::MIN),
        };
        let (hi, lo) = (self.elemc(hi, from), self.elemc(lo, from));
        let too_big = self.cmp(CmpOp::Ge, x, hi);
        let too_small = self.cmp(CmpOp::Lt, x, lo);
        let nan = self.cmp(CmpOp::Ne, x, x);
        let (max, min, zero) =
            (self.cst(Const::Int(max, to)), self.cst(Const::Int(min, to)), self.cst(Const::Int(0, to)));
        let v = self.select(nan, zero, v, to);
        let v = self.select(too_small, min, v, to);
        self.select(too_big, max, v, to)
    }
}
