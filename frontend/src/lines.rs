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
        if !elem.is_any_float() && !elem.is_int() {
            self.error(errors::math_operand(span, "a row or column of", &self.ty(t)));
            return None;
        }
        let line = Type::Tile { elem, shape: vec![shape[l.dim]] };
        Some(self.emit1(OpKind::ExtractLine(1 - l.dim as u8), vec![t, l.k], line, span))
    }

    /// `join(a, b)`: two numeric vectors of one type as the columns of a `tile<T, N, 2>`
    /// (Triton's `tl.join`); `split(t)`: the two columns of a `tile<T, N, 2>` (Triton's
    /// `tl.split`), bound with `let (a, b) = split(t);`.
    pub(crate) fn join_split(
        &mut self,
        f: &tilec_grammar::ast::Ident,
        args: &[tilec_grammar::ast::Expr],
        e: &tilec_grammar::ast::Expr,
    ) -> crate::expr::Ev {
        use crate::expr::Ev;
        let want = if f.name == "join" { 2 } else { 1 };
        if args.len() != want {
            self.error(errors::arg_count(e.span, &f.name, want, args.len()));
            return Ev::Err;
        }
        let mut vals = Vec::new();
        for a in args {
            let Some(v) = self.value(a, None) else { return Ev::Err };
            vals.push(v);
        }
        let span = e.span;
        let col = |g: &mut Self, k: i64| g.constant(tilec_midend::Const::Int(k, tilec_midend::Scalar::I32), span);
        match (f.name.as_str(), &vals[..]) {
            ("join", [a, b]) => {
                let (ta, tb) = (self.ty(*a), self.ty(*b));
                let Type::Tile { elem, shape } = ta.clone() else {
                    self.error(errors::needs_vector(args[0].span, "join", &ta));
                    return Ev::Err;
                };
                if shape.len() != 1 || !(elem.is_any_float() || elem.is_int()) {
                    self.error(errors::needs_vector(args[0].span, "join", &ta));
                    return Ev::Err;
                }
                if ta != tb {
                    self.error(errors::shape_mismatch(span, "join", &ta, args[0].span, &tb, args[1].span));
                    return Ev::Err;
                }
                let ty = Type::Tile { elem, shape: vec![shape[0], 2] };
                let z = self.emit1(OpKind::Fill(tilec_midend::Fill::Zeros), vec![], ty.clone(), span);
                let (c0, c1) = (col(self, 0), col(self, 1));
                let t = self.emit1(OpKind::InsertLine(1), vec![z, c0, *a], ty.clone(), span);
                Ev::Val(self.emit1(OpKind::InsertLine(1), vec![t, c1, *b], ty, span))
            }
            (_, [t]) => {
                let tt = self.ty(*t);
                match tt.clone() {
                    Type::Tile { elem, shape }
                        if shape.len() == 2 && shape[1] == 2 && (elem.is_any_float() || elem.is_int()) =>
                    {
                        let line = Type::Tile { elem, shape: vec![shape[0]] };
                        let (c0, c1) = (col(self, 0), col(self, 1));
                        let a = self.emit1(OpKind::ExtractLine(1), vec![*t, c0], line.clone(), span);
                        let b = self.emit1(OpKind::ExtractLine(1), vec![*t, c1], line, span);
                        Ev::Vals(vec![a, b])
                    }
                    _ => {
                        self.error(errors::split_operand(args[0].span, &tt));
                        Ev::Err
                    }
                }
            }
            _ => Ev::Err,
        }
    }

    /// `t` with line `l` replaced by `v` (a tile of the line's type).
    pub(crate) fn write_line(&mut self, t: Value, l: &Line, v: Value, span: Span) -> Value {
        let ty = self.ty(t);
        self.emit1(OpKind::InsertLine(1 - l.dim as u8), vec![t, l.k, v], ty, span)
    }
}
