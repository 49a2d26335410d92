//! `copysign(x, y)` and `signbit(x)`: the sign bit of floats, read and set on their bits
//! (`Bitcast` to the integer of the same width, `&`, `|`, a signed comparison), so `-0.0`
//! and NaNs keep their sign on every target, as C's `copysign` and `signbit`.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{Expr, Ident};
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, CmpOp, Const, OpKind, Scalar, Type, Value};

/// The signed integer type as wide as the float `s`.
fn bits_type(s: Scalar) -> Scalar {
    if s == Scalar::F64 {
        Scalar::I64
    } else {
        Scalar::I32
    }
}

impl FnBuilder<'_, '_> {
    /// `f` applied to the scalars `vals` or, when one of them is a tile, element by element
    /// (a `map`); the result's element type is `out`.
    fn scalar_or_map(
        &mut self,
        vals: &[Value],
        out: Scalar,
        span: Span,
        f: impl FnOnce(&mut Self, &[Value]) -> Value,
    ) -> Value {
        if vals.iter().any(|v| self.ty(*v).is_tile()) {
            return self.map_elementwise(vals, out, span, f);
        }
        f(self, vals)
    }

    /// `signbit(x)`: whether the sign bit of the float `x` is set (true for `-0.0` and
    /// negative NaNs), a `bool` scalar or tile.
    pub(crate) fn signbit(&mut self, f: &Ident, args: &[Expr], e: &Expr, expect: Option<Scalar>) -> Ev {
        if args.len() != 1 {
            self.error(errors::arg_count(e.span, &f.name, 1, args.len()));
            return Ev::Err;
        }
        let hint = expect.filter(|s| s.is_any_float()).unwrap_or(self.default_float());
        let Some(x) = self.value(&args[0], Some(hint)) else {
            return Ev::Err;
        };
        let t = self.ty(x);
        if !t.elem().is_any_float() || matches!(t, Type::Array { .. }) {
            self.error(errors::math_operand(args[0].span, &f.name, &t));
            return Ev::Err;
        }
        let (s, span) = (t.elem(), e.span);
        Ev::Val(self.scalar_or_map(&[x], Scalar::Bool, span, |g, x| {
            let it = bits_type(s);
            let bits = g.emit1(OpKind::Bitcast(it), vec![x[0]], Type::Scalar(it), span);
            let zero = g.constant(Const::Int(0, it), span);
            g.emit1(OpKind::Cmp(CmpOp::Lt), vec![bits, zero], Type::Scalar(Scalar::Bool), span)
        }))
    }

    /// `copysign(x, y)`: the magnitude of `x` with the sign bit of `y` (floats of one type,
    /// scalars or tiles that broadcast).
    pub(crate) fn copysign(&mut self, f: &Ident, args: &[Expr], e: &Expr, expect: Option<Scalar>) -> Ev {
        if args.len() != 2 {
            self.error(errors::arg_count(e.span, &f.name, 2, args.len()));
            return Ev::Err;
        }
        let (a, b) = self.operand_pair(&args[0], &args[1], expect);
        let (Some(a), Some(b)) = (a, b) else {
            return Ev::Err;
        };
        for (v, x) in [(a, &args[0]), (b, &args[1])] {
            let t = self.ty(v);
            if !t.elem().is_any_float() || matches!(t, Type::Array { .. }) {
                self.error(errors::math_operand(x.span, &f.name, &t));
                return Ev::Err;
            }
        }
        let (ta, tb) = (self.ty(a), self.ty(b));
        if ta.elem() != tb.elem() {
            self.error(errors::shape_mismatch(e.span, "copysign", &ta, args[0].span, &tb, args[1].span));
            return Ev::Err;
        }
        let Some(vs) = self.broadcast_operands("copysign", e, &[(&args[0], a), (&args[1], b)]) else {
            return Ev::Err;
        };
        let (s, span) = (ta.elem(), e.span);
        Ev::Val(self.scalar_or_map(&vs, s, span, |g, x| {
            let it = bits_type(s);
            let ity = Type::Scalar(it);
            let (magnitude, sign) =
                if it == Scalar::I64 { (i64::MAX, i64::MIN) } else { (i32::MAX as i64, i32::MIN as i64) };
            let xb = g.emit1(OpKind::Bitcast(it), vec![x[0]], ity.clone(), span);
            let yb = g.emit1(OpKind::Bitcast(it), vec![x[1]], ity.clone(), span);
            let (m, sg) = (g.constant(Const::Int(magnitude, it), span), g.constant(Const::Int(sign, it), span));
            let xm = g.emit1(OpKind::Bin(BinOp::And), vec![xb, m], ity.clone(), span);
            let ys = g.emit1(OpKind::Bin(BinOp::And), vec![yb, sg], ity.clone(), span);
            let r = g.emit1(OpKind::Bin(BinOp::Or), vec![xm, ys], ity, span);
            g.emit1(OpKind::Bitcast(s), vec![r], Type::Scalar(s), span)
        }))
    }
}
