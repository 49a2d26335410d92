//! Rows and columns of matrix tiles: `t[k, :]` and `t[:, k]` as values and assignment targets,
//! with `k` any `i32` (a run-time value too). They are lowered to operations every target
//! has, so that no backend needs a new operation:
//!
//! - read: the elements of line `k` selected by an `iota` mask (others replaced by `-0.0`, or
//!   0 for integers, which leave a sum unchanged) and summed across the other axis: exactly
//!   the line's elements, NaN and `-0.0` included; zeros when `k` is out of range;
//! - write: the new line broadcast across the tile (`outer` with ones, exact) and selected
//!   into line `k` by the mask; nothing changes when `k` is out of range.

use crate::builder::FnBuilder;
use crate::errors;
use tilec_grammar::ast::IndexItem;
use tilec_grammar::span::Span;
use tilec_midend::{CmpOp, Const, Fill, OpKind, Reduce, Scalar, Type, Value};

/// A line of a matrix tile: `dim` is the dimension written `:` (0: a column `t[:, k]`, 1: a
/// row `t[k, :]`), `k` the other index.
pub(crate) struct Line {
    pub(crate) dim: usize,
    pub(crate) k: Value,
}

impl FnBuilder<'_, '_> {
    /// The line `items` names in the tile `t`, if they are one `:` and one index of a matrix
    /// (`None` otherwise, with nothing reported).
    pub(crate) fn tile_line(&mut self, t: Value, items: &[IndexItem]) -> Option<Line> {
        let Type::Tile { shape, .. } = self.ty(t) else { return None };
        let (dim, e) = match items {
            [IndexItem::Full(_), IndexItem::At(e)] if shape.len() == 2 => (0, e),
            [IndexItem::At(e), IndexItem::Full(_)] if shape.len() == 2 => (1, e),
            _ => return None,
        };
        if let Ok(c) = self.const_eval(e) {
            let n = shape[1 - dim];
            if c.as_i64() < 0 || c.as_i64() >= n as i64 {
                self.error(errors::tile_index_range(e.span, c.as_i64(), n));
                return None;
            }
        }
        let k = self.index(e)?;
        Some(Line { dim, k })
    }

    /// The mask of line `l` in a tile of `shape`, and whether its index is in range.
    fn line_mask(&mut self, l: &Line, shape: &[u32], span: Span) -> (Value, Value) {
        let other = 1 - l.dim;
        let ity = Type::Tile { elem: Scalar::I32, shape: shape.to_vec() };
        let idx = self.emit1(OpKind::Fill(Fill::Iota(other as u8)), vec![], ity, span);
        let k = l.k;
        let mask = self.map_elementwise(&[idx, k], Scalar::Bool, span, |b, xs| {
            b.emit1(OpKind::Cmp(CmpOp::Eq), vec![xs[0], xs[1]], Type::Scalar(Scalar::Bool), span)
        });
        let zero = self.constant(Const::Int(0, Scalar::I32), span);
        let n = self.constant(Const::Int(shape[other] as i64, Scalar::I32), span);
        let bool_t = Type::Scalar(Scalar::Bool);
        let ge = self.emit1(OpKind::Cmp(CmpOp::Ge), vec![k, zero], bool_t.clone(), span);
        let lt = self.emit1(OpKind::Cmp(CmpOp::Lt), vec![k, n], bool_t.clone(), span);
        let ok = self.emit1(OpKind::Bin(tilec_midend::BinOp::And), vec![ge, lt], bool_t, span);
        (mask, ok)
    }

    /// `t[:, k]` (a `tile<T, R>`) or `t[k, :]` (a `tile<T, C>`) as a value.
    pub(crate) fn read_line(&mut self, t: Value, l: &Line, span: Span) -> Option<Value> {
        let Type::Tile { elem, shape } = self.ty(t) else { return None };
        if !elem.is_float() && !elem.is_int() {
            self.error(errors::math_operand(span, "a row or column of", &self.ty(t)));
            return None;
        }
        let (mask, ok) = self.line_mask(l, &shape, span);
        let neutral = if elem.is_float() { Const::Float(-0.0, elem) } else { Const::Int(0, elem) };
        let neutral = self.constant(neutral, span);
        let picked = self.select_elementwise(mask, t, neutral, elem, span);
        let other = 1 - l.dim;
        let line = Type::Tile { elem, shape: vec![shape[l.dim]] };
        let sum = self.emit1(OpKind::Reduce(Reduce::Sum, Some(other as u8)), vec![picked], line, span);
        let zero = if elem.is_float() { Const::Float(0.0, elem) } else { Const::Int(0, elem) };
        let zero = self.constant(zero, span);
        Some(self.select_elementwise(ok, sum, zero, elem, span))
    }

    /// `t` with line `l` replaced by `v` (a tile of the line's type).
    pub(crate) fn write_line(&mut self, t: Value, l: &Line, v: Value, span: Span) -> Value {
        let Type::Tile { elem, shape } = self.ty(t) else { return t };
        let (mask, _) = self.line_mask(l, &shape, span);
        let other = 1 - l.dim;
        let one = if elem.is_float() { Const::Float(1.0, elem) } else { Const::Int(1, elem) };
        let one = self.constant(one, span);
        let ones =
            self.emit1(OpKind::Fill(Fill::Full), vec![one], Type::Tile { elem, shape: vec![shape[other]] }, span);
        let (u, w) = if l.dim == 0 { (v, ones) } else { (ones, v) };
        let spread = self.emit1(OpKind::Outer, vec![u, w], Type::Tile { elem, shape: shape.clone() }, span);
        self.select_elementwise(mask, spread, t, elem, span)
    }
}
