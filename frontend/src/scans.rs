//! Scans (`cumsum`, `cummax`, `cummin`: one `Scan` op, between two `Flip`s when reversed),
//! `flip`, and the index reductions `argmax` and `argmin` on float and integer tiles, lowered
//! to operations every backend has: the reduction (`max`/`min`, whole or along an axis), a
//! mask of the elements equal to it (or NaN), `iota` index tiles (`masks.rs`), and a `min`
//! reduction of the masked indices.

use crate::builder::{Binding, FnBuilder};
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{Expr, ExprKind, Ident};
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, CmpOp, Const, Fill, OpKind, Reduce, Region, Scalar, Type, Value};

/// The names under which `scan` binds the running value and the next line for the user `fn`;
/// they cannot be written in source.
const SCAN_ACC: &str = "scan#acc";
const SCAN_ELEM: &str = "scan#x";

impl FnBuilder<'_, '_> {
    /// The tile argument `a` of `f` with its type, element type and shape (E0214 for anything
    /// else, `None` after an error).
    fn tile_arg(&mut self, f: &Ident, a: &Expr) -> Option<(Value, Type, Scalar, Vec<u32>)> {
        let v = self.value(a, None)?;
        let t = self.ty(v);
        let Type::Tile { elem, shape } = t.clone() else {
            self.error(errors::needs_tile(a.span, &f.name, &t));
            return None;
        };
        Some((v, t, elem, shape))
    }

    /// The numeric tile argument of `f` and its optional constant axis (`None`: the whole tile).
    fn tile_and_axis(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Option<(Value, Scalar, Vec<u32>, Option<u8>)> {
        if args.is_empty() || args.len() > 2 {
            self.error(errors::arg_count(e.span, &f.name, 2, args.len()));
            return None;
        }
        let (v, t, elem, shape) = self.tile_arg(f, &args[0])?;
        if !elem.is_any_float() && !elem.is_int() {
            self.error(errors::math_operand(args[0].span, &f.name, &t));
            return None;
        }
        let axis = match args.get(1) {
            None => None,
            Some(a) => match self.const_eval(a) {
                Ok(Const::Int(x, _)) if (0..2).contains(&x) && shape.len() == 2 => Some(x as u8),
                _ => {
                    self.error(errors::reduce_axis(a.span, shape.len()));
                    return None;
                }
            },
        };
        Some((v, elem, shape, axis))
    }

    /// `cumsum(t, axis)`, `cummax(t, axis)`, `cummin(t, axis)` (`axis` 0 or 1, a constant;
    /// optional for a 1-D tile), and `scan(t, axis, f)` with a user `fn` ([`Self::scan_with`]):
    /// the inclusive scan of a numeric tile, the same type. With
    /// `reverse = true` the scan runs from the last element back: the flipped scan of the
    /// flipped tile, combined in that order on every target.
    pub(crate) fn scan(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let mut reverse = false;
        let mut positional = Vec::new();
        for a in args {
            match &a.kind {
                ExprKind::Named(n, v) if n.name == "reverse" => match self.const_eval(v) {
                    Ok(Const::Bool(b)) => reverse = b,
                    _ => {
                        self.error(errors::named_arg_value(v.span, "reverse", "the constant true or false"));
                        return Ev::Err;
                    }
                },
                ExprKind::Named(n, _) => {
                    self.error(errors::named_arg(a.span, &n.name, &["reverse"]));
                    return Ev::Err;
                }
                _ => positional.push(a.clone()),
            }
        }
        // `scan(t, [axis,] f)`: the user `fn` comes last.
        let custom = f.name == "scan";
        let func = if custom { positional.pop() } else { None };
        let args = &positional[..];
        if args.is_empty() || args.len() > 2 || (custom && func.is_none()) {
            let n = args.len() + usize::from(func.is_some());
            self.error(errors::arg_count(e.span, &f.name, if custom { 3 } else { 2 }, n));
            return Ev::Err;
        }
        let Some((v, t, elem, shape)) = self.tile_arg(f, &args[0]) else {
            return Ev::Err;
        };
        if !elem.is_any_float() && !elem.is_int() {
            self.error(errors::math_operand(args[0].span, &f.name, &t));
            return Ev::Err;
        }
        let axis = match args.get(1) {
            None if shape.len() == 1 => 0,
            None => {
                self.error(errors::scan_axis(e.span, &f.name, shape.len()));
                return Ev::Err;
            }
            Some(a) => match self.const_eval(a) {
                Ok(Const::Int(x, _)) if (0..shape.len() as i64).contains(&x) => x as u8,
                _ => {
                    self.error(errors::scan_axis(a.span, &f.name, shape.len()));
                    return Ev::Err;
                }
            },
        };
        if let Some(func) = func {
            let v = if reverse { self.emit1(OpKind::Flip(axis), vec![v], t.clone(), e.span) } else { v };
            let Some(v) = self.scan_with(f, v, axis, &func, e) else {
                return Ev::Err;
            };
            return Ev::Val(if reverse { self.emit1(OpKind::Flip(axis), vec![v], t, e.span) } else { v });
        }
        let k = match f.name.as_str() {
            "cumsum" => Reduce::Sum,
            "cumprod" => Reduce::Prod,
            "cummax" => Reduce::Max,
            _ => Reduce::Min,
        };
        if !reverse {
            return Ev::Val(self.emit1(OpKind::Scan(k, axis), vec![v], t, e.span));
        }
        let v = self.emit1(OpKind::Flip(axis), vec![v], t.clone(), e.span);
        let v = self.emit1(OpKind::Scan(k, axis), vec![v], t.clone(), e.span);
        Ev::Val(self.emit1(OpKind::Flip(axis), vec![v], t, e.span))
    }

    /// `flip(t, axis)`: the tile `t` reversed along `axis` (a constant, 0 or 1); `flip(t)`
    /// reverses every axis (NumPy's `flip`).
    pub(crate) fn flip(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.is_empty() || args.len() > 2 {
            self.error(errors::arg_count(e.span, &f.name, 2, args.len()));
            return Ev::Err;
        }
        let Some((v, t, _, shape)) = self.tile_arg(f, &args[0]) else {
            return Ev::Err;
        };
        let axes: Vec<u8> = match args.get(1) {
            None => (0..shape.len() as u8).collect(),
            Some(a) => match self.const_eval(a) {
                Ok(Const::Int(x, _)) if (0..shape.len() as i64).contains(&x) => vec![x as u8],
                _ => {
                    self.error(errors::scan_axis(a.span, &f.name, shape.len()));
                    return Ev::Err;
                }
            },
        };
        Ev::Val(axes.into_iter().fold(v, |v, ax| self.emit1(OpKind::Flip(ax), vec![v], t.clone(), e.span)))
    }

    /// `scan(t, axis, f)` (`axis` optional for a 1-D tile): the inclusive scan of `t` with the
    /// user `fn` `f(acc, x)`, in index order on every target: `[0] = t[0]`,
    /// `[i] = f([i - 1], t[i])` along `axis` (rows down the columns for axis 0, columns along
    /// the rows for axis 1, elements of a vector), so `f` need not be associative. Lowered to
    /// line (or element) reads and writes around a `map` of `f`: unrolled up to 64 lines, else
    /// a loop. `t`: the operand, `func`: the expression naming `f`.
    pub(crate) fn scan_with(&mut self, f: &Ident, t: Value, axis: u8, func: &Expr, e: &Expr) -> Option<Value> {
        let ExprKind::Name(fname) = &func.kind else {
            self.error(errors::map_fn(func.span));
            return None;
        };
        let tt = self.ty(t);
        let Type::Tile { elem, shape } = tt.clone() else { return None };
        let span = e.span;
        let i32t = Type::Scalar(Scalar::I32);
        // (number of lines, the line's type, `None` for the elements of a vector or the
        // dimension of `ExtractLine`).
        let (lines, line, d) = match (shape.len(), axis) {
            (1, _) => (shape[0], Type::Scalar(elem), None),
            (_, 0) => (shape[0], Type::Tile { elem, shape: vec![shape[1]] }, Some(0u8)),
            _ => (shape[1], Type::Tile { elem, shape: vec![shape[0]] }, Some(1u8)),
        };
        let name =
            |n: &str| Expr { kind: ExprKind::Name(Ident { name: n.to_string(), span: func.span }), span: func.span };
        // acc with line k combined with line k - 1: `None` after an error.
        let step = |g: &mut Self, acc: Value, k: Value| -> Option<Value> {
            let one = g.constant(Const::Int(1, Scalar::I32), span);
            let prev = g.emit1(OpKind::Bin(BinOp::Sub), vec![k, one], i32t.clone(), span);
            let read = |g: &mut Self, x: Value, i: Value| match d {
                None => g.emit1(OpKind::Extract, vec![x, i], line.clone(), span),
                Some(d) => g.emit1(OpKind::ExtractLine(d), vec![x, i], line.clone(), span),
            };
            let (a, b) = (read(g, acc, prev), read(g, t, k));
            g.push_scope();
            g.declare(SCAN_ACC, Binding::Var(a));
            g.declare(SCAN_ELEM, Binding::Var(b));
            let y = match d {
                None => g.user_call(fname, &[name(SCAN_ACC), name(SCAN_ELEM)], e),
                Some(_) => g.map(f, &[func.clone(), name(SCAN_ACC), name(SCAN_ELEM)], e),
            };
            g.pop_scope();
            let y = match y {
                Ev::Val(y) if g.ty(y) == line => y,
                Ev::Err => return None,
                Ev::Val(y) => {
                    let got = g.ty(y);
                    g.error(errors::scan_fn_result(func.span, &line, &got));
                    return None;
                }
                _ => {
                    g.error(errors::map_result(func.span));
                    return None;
                }
            };
            Some(match d {
                None => g.emit1(OpKind::Insert, vec![acc, k, y], tt.clone(), span),
                Some(d) => g.emit1(OpKind::InsertLine(d), vec![acc, k, y], tt.clone(), span),
            })
        };
        if lines <= 64 {
            let mut acc = t;
            for k in 1..lines {
                let kc = self.constant(Const::Int(k as i64, Scalar::I32), span);
                acc = step(self, acc, kc)?;
            }
            return Some(acc);
        }
        let (lo, hi, st) = (
            self.constant(Const::Int(1, Scalar::I32), span),
            self.constant(Const::Int(lines as i64, Scalar::I32), span),
            self.constant(Const::Int(1, Scalar::I32), span),
        );
        let (k, acc) = (self.f.new_value(i32t.clone()), self.f.new_value(tt.clone()));
        self.push_ops();
        let next = step(self, acc, k);
        if let Some(n) = next {
            self.emit(OpKind::Yield, vec![n], vec![], span);
        }
        let ops = self.pop_ops();
        next?;
        let region = Region { params: vec![k, acc], ops };
        Some(self.emit_with_regions(OpKind::For, vec![lo, hi, st, t], vec![tt], vec![region], span)[0])
    }

    /// `reshape(t, N)`, `reshape(t, R, C)`: the elements of the numeric tile `t` in row-major
    /// order as a tile of constant extents with the same number of elements (NumPy's
    /// `reshape`, Triton's `tl.reshape`, Warp's `tile_view`).
    pub(crate) fn reshape(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.len() < 2 || args.len() > 3 {
            self.error(errors::arg_count(e.span, &f.name, 3, args.len()));
            return Ev::Err;
        }
        let Some((v, t, elem, shape)) = self.tile_arg(f, &args[0]) else {
            return Ev::Err;
        };
        if elem == Scalar::Bool {
            self.error(errors::math_operand(args[0].span, &f.name, &t));
            return Ev::Err;
        }
        let mut to = Vec::new();
        for a in &args[1..] {
            let Some(x) = self.extent(a, "a reshape extent") else {
                return Ev::Err;
            };
            to.push(x);
        }
        let (from, into) = (shape.iter().product::<u32>(), to.iter().product::<u32>());
        if from != into {
            self.error(errors::reshape_count(e.span, &t, &to));
            return Ev::Err;
        }
        if to == shape {
            return Ev::Val(v);
        }
        Ev::Val(self.emit1(OpKind::Reshape, vec![v], Type::Tile { elem, shape: to }, e.span))
    }

    fn fill_tile(&mut self, fill: Fill, x: Option<Value>, elem: Scalar, shape: &[u32], span: Span) -> Value {
        let ty = Type::Tile { elem, shape: shape.to_vec() };
        self.emit1(OpKind::Fill(fill), x.into_iter().collect(), ty, span)
    }

    /// `argmax(t)`, `argmin(t)` (a float or integer tile): the row-major index (`i32`) of the
    /// first largest / smallest element, or of the first NaN (as NumPy); `argmax(t, axis)`, `argmin(t, axis)`: the
    /// index along `axis` of each column (`axis` 0) or row (`axis` 1), a `tile<i32, ..>`.
    pub(crate) fn arg_reduce(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let Some((t, elem, shape, axis)) = self.tile_and_axis(f, args, e) else {
            return Ev::Err;
        };
        let span = e.span;
        let k = if f.name == "argmax" { Reduce::Max } else { Reduce::Min };
        // The extreme of the tile, or of each row or column, beside every element.
        let (m, idx, sentinel) = match axis {
            None => {
                let m = self.emit1(OpKind::Reduce(k, None), vec![t], Type::Scalar(elem), span);
                let idx = if shape.len() == 1 {
                    self.fill_tile(Fill::Iota(0), None, Scalar::I32, &shape, span)
                } else {
                    let r = self.fill_tile(Fill::Iota(0), None, Scalar::I32, &shape, span);
                    let c = self.fill_tile(Fill::Iota(1), None, Scalar::I32, &shape, span);
                    let cols = self.constant(Const::Int(shape[1] as i64, Scalar::I32), span);
                    let ty = Type::Tile { elem: Scalar::I32, shape: shape.clone() };
                    let rc = self.emit1(OpKind::Bin(BinOp::Mul), vec![r, cols], ty.clone(), span);
                    self.emit1(OpKind::Bin(BinOp::Add), vec![rc, c], ty, span)
                };
                (m, idx, shape.iter().product::<u32>())
            }
            Some(a) => {
                let other = shape[1 - a as usize];
                let red = Type::Tile { elem, shape: vec![other] };
                let m = self.emit1(OpKind::Reduce(k, Some(a)), vec![t], red, span);
                // Each row's extreme down its row (as a column), each column's along its column.
                let m = if a == 1 { self.column(m, span).expect("a numeric vector") } else { m };
                let mb = self.broadcast_to(m, &shape, span);
                let idx = self.fill_tile(Fill::Iota(a), None, Scalar::I32, &shape, span);
                (mb, idx, shape[a as usize])
            }
        };
        // Where an element is the extreme (or NaN), its index; elsewhere past the last index.
        let hit = self.map_elementwise(&[t, m], Scalar::Bool, span, |g, x| {
            let b = Type::Scalar(Scalar::Bool);
            let eq = g.emit1(OpKind::Cmp(CmpOp::Eq), vec![x[0], x[1]], b.clone(), span);
            let nan = g.emit1(OpKind::Cmp(CmpOp::Ne), vec![x[0], x[0]], b.clone(), span);
            g.emit1(OpKind::Bin(BinOp::Or), vec![eq, nan], b, span)
        });
        let past = self.constant(Const::Int(sentinel as i64, Scalar::I32), span);
        let sel = self.select_elementwise(hit, idx, past, Scalar::I32, span);
        Ev::Val(match axis {
            None => self.emit1(OpKind::Reduce(Reduce::Min, None), vec![sel], Type::Scalar(Scalar::I32), span),
            Some(a) => {
                let ty = Type::Tile { elem: Scalar::I32, shape: vec![shape[1 - a as usize]] };
                self.emit1(OpKind::Reduce(Reduce::Min, Some(a)), vec![sel], ty, span)
            }
        })
    }
}
