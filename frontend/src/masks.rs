//! Element-wise comparisons and logic on tiles, and `where(c, a, b)`: masks as bool tiles.
//! They lower to one `Map` over the operand tiles (scalars broadcast with `Fill::Full`) whose
//! region applies the scalar operation, so every backend runs them with its `map` support.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
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
}
