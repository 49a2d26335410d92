//! Element-wise comparisons and logic on tiles, `where(c, a, b)` (masks as bool tiles) and
//! `fma(a, b, c)`. On tiles they lower to one `Map` over the operand tiles (scalars broadcast
//! with `Fill::Full`) whose region applies the scalar operation, so every backend runs them
//! with its `map` support.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::{is_literal, Ev};
use tilec_grammar::ast::{Expr, Ident};
use tilec_grammar::span::Span;
use tilec_midend::{Fill, OpKind, Region, Scalar, Type, Value};

impl FnBuilder<'_, '_> {
    /// Applies a scalar operation element by element to `vals` (at least one a tile; all tiles
    /// of one shape, checked by the caller): scalars are broadcast, and `f` emits the operation
    /// on one element of each (in the region of a `Map`). The result is `tile<out, shape>`.
    pub(crate) fn map_elementwise(
        &mut self,
        vals: &[Value],
        out: Scalar,
        span: Span,
        f: impl FnOnce(&mut Self, &[Value]) -> Value,
    ) -> Value {
        let shape = vals
            .iter()
            .find_map(|v| match self.ty(*v) {
                Type::Tile { shape, .. } => Some(shape),
                _ => None,
            })
            .expect("map_elementwise needs a tile operand");
        let mut tiles = Vec::new();
        for v in vals {
            let t = self.ty(*v);
            tiles.push(if t.is_tile() {
                *v
            } else {
                let ty = Type::Tile { elem: t.elem(), shape: shape.clone() };
                self.emit1(OpKind::Fill(Fill::Full), vec![*v], ty, span)
            });
        }
        let params: Vec<Value> = tiles
            .iter()
            .map(|t| {
                let s = self.ty(*t).elem();
                self.f.new_value(Type::Scalar(s))
            })
            .collect();
        self.push_ops();
        let y = f(self, &params);
        self.emit(OpKind::Yield, vec![y], vec![], span);
        let ops = self.pop_ops();
        let region = Region { params, ops };
        self.emit_with_regions(OpKind::Map, tiles, vec![Type::Tile { elem: out, shape }], vec![region], span)[0]
    }

    /// `where(c, a, b)`: `a` where `c` is true, else `b`, element by element. `c` is a bool
    /// scalar or tile; `a` and `b` have one element type (a literal takes the other's); the
    /// result is a tile if any operand is (scalars broadcast), else a scalar.
    pub(crate) fn where_(&mut self, f: &Ident, args: &[Expr], e: &Expr, expect: Option<Scalar>) -> Ev {
        if args.len() != 3 {
            self.error(errors::arg_count(e.span, &f.name, 3, args.len()));
            return Ev::Err;
        }
        let c = self.value(&args[0], None);
        let (a, b) = self.operand_pair(&args[1], &args[2], expect);
        let (Some(c), Some(a), Some(b)) = (c, a, b) else {
            return Ev::Err;
        };
        let (tc, ta, tb) = (self.ty(c), self.ty(a), self.ty(b));
        if (matches!(ta, Type::Mat { .. }) || matches!(tb, Type::Mat { .. })) && tc.elem() == Scalar::Bool {
            return self.mat_where(c, a, b, e.span);
        }
        if tc.elem() != Scalar::Bool || matches!(tc, Type::Array { .. }) {
            self.error(errors::expected_bool(args[0].span, &tc));
            return Ev::Err;
        }
        if ta.elem() != tb.elem() {
            let d = errors::mismatch(e.span, tilec_grammar::ast::BinOp::Eq, &ta, args[1].span, &tb, args[2].span);
            self.error(d);
            return Ev::Err;
        }
        let Some(vs) = self.broadcast_operands("where", e, &[(&args[0], c), (&args[1], a), (&args[2], b)]) else {
            return Ev::Err;
        };
        let (c, a, b) = (vs[0], vs[1], vs[2]);
        let s = ta.elem();
        if !tc.is_tile() && !ta.is_tile() && !tb.is_tile() {
            return Ev::Val(self.emit1(OpKind::Select, vec![c, a, b], Type::Scalar(s), e.span));
        }
        Ev::Val(self.select_elementwise(c, a, b, s, e.span))
    }

    /// `where(m, a, b)` on values, element by element (at least one of them a tile, the
    /// scalars standing for every element): a `map` of `Select`, a tile of `elem`.
    pub(crate) fn select_elementwise(&mut self, m: Value, a: Value, b: Value, elem: Scalar, span: Span) -> Value {
        self.map_elementwise(&[m, a, b], elem, span, |g, x| {
            g.emit1(OpKind::Select, x.to_vec(), Type::Scalar(elem), span)
        })
    }

    /// `fma(a, b, c)`: `a * b + c` with one rounding (§6.4), on float scalars of one type or,
    /// element by element, on tiles of one element type whose shapes broadcast (scalars stand
    /// for every element). Bare literals take the other operands' element type, else
    /// `expect`'s, else `f32`. E0214 for a non-float or mixed operand, E0202 for shapes that
    /// do not broadcast.
    pub(crate) fn fma(&mut self, f: &Ident, args: &[Expr], e: &Expr, expect: Option<Scalar>) -> Ev {
        if args.len() != 3 {
            self.error(errors::arg_count(e.span, &f.name, 3, args.len()));
            return Ev::Err;
        }
        let expect = expect.or(Some(self.default_float()));
        let mut vals: Vec<Option<Value>> = vec![None; 3];
        let mut hint = None;
        for (i, a) in args.iter().enumerate().filter(|(_, a)| !is_literal(a)) {
            vals[i] = self.value(a, hint.or(expect));
            hint = hint.or(vals[i].map(|v| self.ty(v).elem()));
        }
        for (i, a) in args.iter().enumerate().filter(|(_, a)| is_literal(a)) {
            vals[i] = self.value(a, hint.or(expect));
        }
        let Some(vals) = vals.into_iter().collect::<Option<Vec<Value>>>() else {
            return Ev::Err;
        };
        let s = self.ty(vals[0]).elem();
        for (v, a) in vals.iter().zip(args) {
            let t = self.ty(*v);
            if t.elem() != s || !s.is_any_float() || !matches!(t, Type::Scalar(_) | Type::Tile { .. }) {
                self.error(errors::math_operand(a.span, "fma", &t));
                return Ev::Err;
            }
        }
        let ops: Vec<(&Expr, Value)> = args.iter().zip(vals.iter().copied()).collect();
        let Some(vals) = self.broadcast_operands("fma", e, &ops) else {
            return Ev::Err;
        };
        if vals.iter().all(|v| !self.ty(*v).is_tile()) {
            return Ev::Val(self.emit1(OpKind::Fma, vals, Type::Scalar(s), e.span));
        }
        let span = e.span;
        Ev::Val(self.map_elementwise(&vals, s, span, |g, x| g.emit1(OpKind::Fma, x.to_vec(), Type::Scalar(s), span)))
    }
}
