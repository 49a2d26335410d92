//! Broadcasting between tiles of different shapes, by NumPy's trailing-axis rule: the shapes
//! are aligned at their last dimension and each pair of extents must be equal or one of them
//! 1 (which is repeated). So a `tile<T, N>` (or `tile<T, 1, N>`) combines with a
//! `tile<T, M, N>` row by row, and a `tile<T, M, 1>` column by column; `column(v)` turns a
//! `tile<T, M>` into that `tile<T, M, 1>`. The operand that lacks the common shape becomes
//! an IR `Broadcast` to it.

use crate::builder::FnBuilder;
use crate::errors;
use tilec_grammar::ast::Expr;
use tilec_grammar::span::Span;
use tilec_midend::{Const, Fill, OpKind, Type, Value};

/// The common shape of two tile shapes by the trailing-axis rule, `None` if they do not
/// broadcast.
pub(crate) fn broadcast_shape(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let n = a.len().max(b.len());
    let at = |s: &[u32], i: usize| if i + s.len() >= n { s[i + s.len() - n] } else { 1 };
    (0..n)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

impl FnBuilder<'_, '_> {
    /// `v` broadcast to `shape` (`v` itself when it has that shape already).
    pub(crate) fn broadcast_to(&mut self, v: Value, shape: &[u32], span: Span) -> Value {
        let Type::Tile { elem, shape: s } = self.ty(v) else { return v };
        if s == shape {
            return v;
        }
        self.emit1(OpKind::Broadcast, vec![v], Type::Tile { elem, shape: shape.to_vec() }, span)
    }

    /// The operands of the element-wise operation `e` (`what`: its symbol) brought to their
    /// common shape; E0202 (and `None`) when two tiles do not broadcast. Scalars are left as
    /// they are (every element-wise operation takes them).
    pub(crate) fn broadcast_operands(&mut self, what: &str, e: &Expr, ops: &[(&Expr, Value)]) -> Option<Vec<Value>> {
        let mut shape: Option<(Vec<u32>, &Expr, Type)> = None;
        for (x, v) in ops {
            let t = self.ty(*v);
            let Type::Tile { shape: s, .. } = &t else { continue };
            shape = match shape {
                None => Some((s.clone(), *x, t.clone())),
                Some((common, cx, ct)) => match broadcast_shape(&common, s) {
                    Some(c) => Some((c, cx, ct)),
                    None => {
                        self.error(errors::shape_mismatch(e.span, what, &ct, cx.span, &t, x.span));
                        return None;
                    }
                },
            };
        }
        let Some((shape, ..)) = shape else {
            return Some(ops.iter().map(|(_, v)| *v).collect());
        };
        Some(
            ops.iter()
                .map(|(_, v)| if self.ty(*v).is_tile() { self.broadcast_to(*v, &shape, e.span) } else { *v })
                .collect(),
        )
    }

    /// `row(v)`: the `tile<T, N>` `v` as a `tile<T, 1, N>` (a `Broadcast`, exact).
    pub(crate) fn row(&mut self, v: Value, span: Span) -> Option<Value> {
        let Type::Tile { elem, shape } = self.ty(v) else { return None };
        if shape.len() != 1 {
            return None;
        }
        Some(self.emit1(OpKind::Broadcast, vec![v], Type::Tile { elem, shape: vec![1, shape[0]] }, span))
    }

    /// `column(v)`: the `tile<T, M>` `v` as a `tile<T, M, 1>` (`outer` with a one, exact).
    pub(crate) fn column(&mut self, v: Value, span: Span) -> Option<Value> {
        let Type::Tile { elem, shape } = self.ty(v) else { return None };
        if shape.len() != 1 || !(elem.is_any_float() || elem.is_int()) {
            return None;
        }
        let one = if elem.is_any_float() { Const::Float(1.0, elem) } else { Const::Int(1, elem) };
        let one = self.constant(one, span);
        let ones = self.emit1(OpKind::Fill(Fill::Full), vec![one], Type::Tile { elem, shape: vec![1] }, span);
        Some(self.emit1(OpKind::Outer, vec![v, ones], Type::Tile { elem, shape: vec![shape[0], 1] }, span))
    }
}
