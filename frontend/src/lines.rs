//! Rows and columns of matrix tiles: `t[k, :]` and `t[:, k]` as values and assignment targets,
//! with `k` any `i32` (a run-time value too), lowered to the IR's `ExtractLine` and
//! `InsertLine`: the line's elements exactly, zeros when `k` is out of range (a write then
//! changes nothing). Each backend moves one line: a copy of one row or a strided copy of one
//! column on the CPU, register choices and one shuffle per element in the SIMT form.

use crate::builder::FnBuilder;
use crate::errors;
use tilec_grammar::ast::IndexItem;
use tilec_grammar::span::Span;
use tilec_midend::{OpKind, Type, Value};

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

    /// `t[:, k]` (a `tile<T, R>`) or `t[k, :]` (a `tile<T, C>`) as a value.
    pub(crate) fn read_line(&mut self, t: Value, l: &Line, span: Span) -> Option<Value> {
        let Type::Tile { elem, shape } = self.ty(t) else { return None };
        if !elem.is_float() && !elem.is_int() {
            self.error(errors::math_operand(span, "a row or column of", &self.ty(t)));
            return None;
        }
        let line = Type::Tile { elem, shape: vec![shape[l.dim]] };
        Some(self.emit1(OpKind::ExtractLine(1 - l.dim as u8), vec![t, l.k], line, span))
    }

    /// `t` with line `l` replaced by `v` (a tile of the line's type).
    pub(crate) fn write_line(&mut self, t: Value, l: &Line, v: Value, span: Span) -> Value {
        let ty = self.ty(t);
        self.emit1(OpKind::InsertLine(1 - l.dim as u8), vec![t, l.k, v], ty, span)
    }
}
