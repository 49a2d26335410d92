//! `sort`, `argsort` and `topk` on tiles: a bitonic sorting network (K. E. Batcher, "Sorting
//! networks and their applications", AFIPS 1968) along one axis, built from ops every target
//! already has, so that every target runs the same network and gives the same result: per
//! stage, a `reshape` that puts the two elements of each compare-exchange in the two halves of
//! a row, the two halves as blocks, one `map` that decides the exchanges, `select`s, and the
//! blocks put back. Each element travels with its index, and the comparison orders equal keys
//! by index, so the network's result is the stable sort (NumPy's `kind="stable"`). NaN sorts
//! after every number (NumPy); with `descending = true` it comes first (PyTorch). A line whose
//! length is not a power of two is padded to one with elements that sort after everything and
//! are cut off at the end. Cost: `log2(P) (log2(P) + 1) / 2` stages for `P` the padded length.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{Expr, ExprKind, Ident};
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, CmpOp, Const, Fill, OpKind, Scalar, Type, Value};

impl FnBuilder<'_, '_> {
    /// `sort(t[, axis][, descending = b])`, `argsort(..)` (the same arguments) and
    /// `topk(t, k[, axis])`: `t` a numeric tile, `axis` a constant (default: the last one),
    /// `k` a constant from 1 to the axis' length. `sort` gives the sorted tile, `argsort` the
    /// `i32` indices along `axis` that sort it (NumPy's `argsort(kind="stable")`), `topk` the
    /// `k` largest along `axis`, largest first, and their indices (`let (v, i) = topk(t, k);`,
    /// Triton's `tl.topk`, which gives the values only).
    pub(crate) fn sort_call(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let topk = f.name == "topk";
        let mut descending = topk;
        let mut positional = Vec::new();
        for a in args {
            match &a.kind {
                ExprKind::Named(n, v) if n.name == "descending" && !topk => match self.const_eval(v) {
                    Ok(Const::Bool(b)) => descending = b,
                    _ => {
                        self.error(errors::named_arg_value(v.span, "descending", "the constant true or false"));
                        return Ev::Err;
                    }
                },
                ExprKind::Named(n, _) => {
                    self.error(errors::named_arg(a.span, &n.name, if topk { &[] } else { &["descending"] }));
                    return Ev::Err;
                }
                _ => positional.push(a),
            }
        }
        let most = if topk { 3 } else { 2 };
        if positional.is_empty() || positional.len() > most || (topk && positional.len() < 2) {
            self.error(errors::arg_count(e.span, &f.name, most, positional.len()));
            return Ev::Err;
        }
        let Some(t) = self.value(positional[0], None) else {
            return Ev::Err;
        };
        let tt = self.ty(t);
        let Type::Tile { elem, shape } = tt.clone() else {
            self.error(errors::needs_tile(positional[0].span, &f.name, &tt));
            return Ev::Err;
        };
        if !elem.is_any_float() && !elem.is_int() {
            self.error(errors::math_operand(positional[0].span, &f.name, &tt));
            return Ev::Err;
        }
        let axis_arg = positional.get(if topk { 2 } else { 1 });
        let axis = match axis_arg {
            None => shape.len() as u8 - 1,
            Some(a) => match self.const_eval(a) {
                Ok(Const::Int(x, _)) if (0..shape.len() as i64).contains(&x) => x as u8,
                _ => {
                    self.error(errors::scan_axis(a.span, &f.name, shape.len()));
                    return Ev::Err;
                }
            },
        };
        let n = shape[axis as usize];
        if n > crate::limits::SORT_MAX {
            self.error(errors::sort_too_long(positional[0].span, &f.name, n, crate::limits::SORT_MAX));
            return Ev::Err;
        }
        let k = if topk {
            match self.const_eval(positional[1]) {
                Ok(Const::Int(k, _)) if (1..=n as i64).contains(&k) => Some(k as u32),
                _ => {
                    self.error(errors::topk_count(positional[1].span, n));
                    return Ev::Err;
                }
            }
        } else {
            None
        };
        let span = e.span;
        // Lines along the last axis: a vector is one line, axis 0 of a matrix a transpose.
        let (rows, lines) = match (shape.len(), axis) {
            (1, _) => (1, t),
            (_, 1) => (shape[0], t),
            _ => {
                let ty = Type::Tile { elem, shape: vec![shape[1], shape[0]] };
                (shape[1], self.emit1(OpKind::Transpose, vec![t], ty, span))
            }
        };
        let (vals, idx) = self.sort_rows(lines, elem, rows, n, descending, span);
        let keep = k.unwrap_or(n);
        // Back to `t`'s layout, the first `keep` along `axis`.
        let back = |g: &mut Self, x: Value, s: Scalar| -> Value {
            let cut = if shape.len() == 1 { vec![keep] } else { vec![rows, keep] };
            let x = if keep < n {
                let at = vec![0; cut.len()];
                g.emit1(OpKind::ExtractBlock(at), vec![x], Type::Tile { elem: s, shape: cut }, span)
            } else {
                x
            };
            match (shape.len(), axis) {
                (1, _) | (_, 1) => x,
                _ => g.emit1(OpKind::Transpose, vec![x], Type::Tile { elem: s, shape: vec![keep, rows] }, span),
            }
        };
        match f.name.as_str() {
            "sort" => Ev::Val(back(self, vals, elem)),
            "argsort" => Ev::Val(back(self, idx, Scalar::I32)),
            _ => {
                let v = back(self, vals, elem);
                Ev::Vals(vec![v, back(self, idx, Scalar::I32)])
            }
        }
    }

    /// Sorts each row of `t: tile<elem, rows, n>`, or the vector `t: tile<elem, n>` (stable;
    /// NaN last, or first when `descending`): the sorted lines and each element's index in
    /// its line of `t` (`i32`), of `t`'s shape.
    fn sort_rows(&mut self, t: Value, elem: Scalar, rows: u32, n: u32, descending: bool, span: Span) -> (Value, Value) {
        let p = n.next_power_of_two();
        let tile = |s: Scalar, r: u32, c: u32| Type::Tile { elem: s, shape: vec![r, c] };
        // The lines as `t` holds them, `len` long: a vector stays one (a 1 x N matrix would be
        // N registers on one lane of a GPU).
        let one_d = matches!(self.ty(t), Type::Tile { shape, .. } if shape.len() == 1);
        let lines =
            |s: Scalar, len: u32| Type::Tile { elem: s, shape: if one_d { vec![len] } else { vec![rows, len] } };
        let origin = if one_d { vec![0] } else { vec![0, 0] };
        let mut vals = if p == n {
            t
        } else {
            let z = self.emit1(OpKind::Fill(Fill::Zeros), vec![], lines(elem, p), span);
            self.emit1(OpKind::InsertBlock(origin.clone()), vec![z, t], lines(elem, p), span)
        };
        let mut idx = self.emit1(OpKind::Fill(Fill::Iota(u8::from(!one_d))), vec![], lines(Scalar::I32, p), span);
        // The current row length of `vals` and `idx` (0: still a vector).
        let mut width = if one_d { 0 } else { p };
        let mut merge = 2;
        while merge <= p {
            let mut d = merge / 2;
            while d >= 1 {
                // Rows of 2d: element j of the first half against element j of the second.
                let r2 = rows * p / (2 * d);
                if width != 2 * d {
                    vals = self.emit1(OpKind::Reshape, vec![vals], tile(elem, r2, 2 * d), span);
                    idx = self.emit1(OpKind::Reshape, vec![idx], tile(Scalar::I32, r2, 2 * d), span);
                    width = 2 * d;
                }
                // Fewer rows than columns: the stage works on the transpose, its halves row
                // blocks, so that GPUs spread the longer side over their lanes (a 2 x 64 tile
                // would be 64 registers on two lanes).
                let tall = r2 >= 2 * d;
                let (v, i) = if tall {
                    (vals, idx)
                } else {
                    let t = |g: &mut Self, x: Value, s: Scalar| {
                        g.emit1(OpKind::Transpose, vec![x], tile(s, 2 * d, r2), span)
                    };
                    (t(self, vals, elem), t(self, idx, Scalar::I32))
                };
                let (hr, hc, second) = if tall { (r2, d, [0, d]) } else { (d, r2, [d, 0]) };
                let half = |g: &mut Self, x: Value, s: Scalar, at: [u32; 2]| {
                    g.emit1(OpKind::ExtractBlock(at.to_vec()), vec![x], tile(s, hr, hc), span)
                };
                let (a, b) = (half(self, v, elem, [0, 0]), half(self, v, elem, second));
                let (ia, ib) = (half(self, i, Scalar::I32, [0, 0]), half(self, i, Scalar::I32, second));
                // The block of `merge` elements a row of 2d lies in is sorted ascending when
                // its number within the line is even (the last merge: all of it).
                let row =
                    self.emit1(OpKind::Fill(Fill::Iota(u8::from(!tall))), vec![], tile(Scalar::I32, hr, hc), span);
                let swap = self.map_elementwise(&[a, b, ia, ib, row], Scalar::Bool, span, |g, x| {
                    let per_line = p / (2 * d);
                    let c = |g: &mut Self, v: i64| g.constant(Const::Int(v, Scalar::I32), span);
                    let i32t = Type::Scalar(Scalar::I32);
                    let pl = c(g, per_line as i64);
                    let inline = g.emit1(OpKind::Bin(BinOp::Rem), vec![x[4], pl], i32t.clone(), span);
                    let per_block = c(g, (merge / (2 * d)) as i64);
                    let block = g.emit1(OpKind::Bin(BinOp::Div), vec![inline, per_block], i32t.clone(), span);
                    let two = c(g, 2);
                    let odd = g.emit1(OpKind::Bin(BinOp::Rem), vec![block, two], i32t, span);
                    let zero = c(g, 0);
                    let up = g.emit1(OpKind::Cmp(CmpOp::Eq), vec![odd, zero], Type::Scalar(Scalar::Bool), span);
                    let fwd = g.after(elem, n, p, descending, [x[0], x[1]], [x[2], x[3]], span);
                    let rev = g.after(elem, n, p, descending, [x[1], x[0]], [x[3], x[2]], span);
                    g.emit1(OpKind::Select, vec![up, fwd, rev], Type::Scalar(Scalar::Bool), span)
                });
                let na = self.select_elementwise(swap, b, a, elem, span);
                let nb = self.select_elementwise(swap, a, b, elem, span);
                let nia = self.select_elementwise(swap, ib, ia, Scalar::I32, span);
                let nib = self.select_elementwise(swap, ia, ib, Scalar::I32, span);
                let whole = if tall { (r2, 2 * d) } else { (2 * d, r2) };
                let put = |g: &mut Self, x: Value, lo: Value, hi: Value, s: Scalar| {
                    let x = g.emit1(OpKind::InsertBlock(vec![0, 0]), vec![x, lo], tile(s, whole.0, whole.1), span);
                    let x = g.emit1(OpKind::InsertBlock(second.to_vec()), vec![x, hi], tile(s, whole.0, whole.1), span);
                    if tall {
                        x
                    } else {
                        g.emit1(OpKind::Transpose, vec![x], tile(s, r2, 2 * d), span)
                    }
                };
                vals = put(self, v, na, nb, elem);
                idx = put(self, i, nia, nib, Scalar::I32);
                d /= 2;
            }
            merge *= 2;
        }
        if width != p || one_d {
            vals = self.emit1(OpKind::Reshape, vec![vals], lines(elem, p), span);
            idx = self.emit1(OpKind::Reshape, vec![idx], lines(Scalar::I32, p), span);
        }
        if p != n {
            vals = self.emit1(OpKind::ExtractBlock(origin.clone()), vec![vals], lines(elem, n), span);
            idx = self.emit1(OpKind::ExtractBlock(origin), vec![idx], lines(Scalar::I32, n), span);
        }
        (vals, idx)
    }

    /// Whether the element `(x[0], i[0])` comes after `(x[1], i[1])` in the sorted order
    /// (scalars in a `map` region): padding (index `>= n`, only when `p > n`) after
    /// everything, then by key (NaN largest; reversed when `descending`), then by index.
    #[allow(clippy::too_many_arguments)]
    fn after(
        &mut self,
        elem: Scalar,
        n: u32,
        p: u32,
        descending: bool,
        x: [Value; 2],
        i: [Value; 2],
        span: Span,
    ) -> Value {
        let b = Type::Scalar(Scalar::Bool);
        let cmp = |g: &mut Self, op: CmpOp, l: Value, r: Value| g.emit1(OpKind::Cmp(op), vec![l, r], b.clone(), span);
        let and = |g: &mut Self, l: Value, r: Value| g.emit1(OpKind::Bin(BinOp::And), vec![l, r], b.clone(), span);
        let or = |g: &mut Self, l: Value, r: Value| g.emit1(OpKind::Bin(BinOp::Or), vec![l, r], b.clone(), span);
        let not = |g: &mut Self, v: Value| g.emit1(OpKind::Un(tilec_midend::UnOp::Not), vec![v], b.clone(), span);
        // key(l) > key(r), NaN the largest, and key(l) == key(r), NaNs equal.
        let greater = |g: &mut Self, l: Value, r: Value| {
            let gt = cmp(g, CmpOp::Gt, l, r);
            if !elem.is_any_float() {
                return gt;
            }
            let ln = cmp(g, CmpOp::Ne, l, l);
            let rn = cmp(g, CmpOp::Eq, r, r);
            let nan_first = and(g, ln, rn);
            or(g, gt, nan_first)
        };
        let eq = cmp(self, CmpOp::Eq, x[0], x[1]);
        let eq = if elem.is_any_float() {
            let (ln, rn) = (cmp(self, CmpOp::Ne, x[0], x[0]), cmp(self, CmpOp::Ne, x[1], x[1]));
            let both = and(self, ln, rn);
            or(self, eq, both)
        } else {
            eq
        };
        let later = cmp(self, CmpOp::Gt, i[0], i[1]);
        let key = if descending { greater(self, x[1], x[0]) } else { greater(self, x[0], x[1]) };
        let tie = and(self, eq, later);
        let real = or(self, key, tie);
        if p == n {
            return real;
        }
        // Padding: a pad comes after every real element, and after pads of smaller index.
        let nc = self.constant(Const::Int(n as i64, Scalar::I32), span);
        let (pa, pb) = (cmp(self, CmpOp::Ge, i[0], nc), cmp(self, CmpOp::Ge, i[1], nc));
        let real_b = not(self, pb);
        let pad_case = or(self, real_b, later);
        let real_case = and(self, real_b, real);
        self.emit1(OpKind::Select, vec![pa, pad_case, real_case], b, span)
    }
}
