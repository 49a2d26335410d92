//! Element-wise `map(f, t1, .., tn)` with a user `fn`, `masked_store`, and shared arrays
//! (`shared<T, R, C>::zeros()`), which are indexed like array parameters.

use crate::builder::{Binding, FnBuilder};
use crate::errors;
use crate::expr::Ev;
use crate::gathers::Write;
use crate::places::Access;
use tilec_grammar::ast::{Expr, ExprKind, Ident, TypeExpr};
use tilec_grammar::span::Span;
use tilec_midend::{Fill, OpKind, Region, Scalar, Type, Value};

/// The name under which `map` binds the element it passes to the user `fn`; it cannot be
/// written in source.
const MAP_ELEM: &str = "map#x";

impl FnBuilder<'_, '_> {
    /// `map(f, t1, .., tn)`: the user `fn` `f` of `n` scalar parameters applied element by
    /// element to tiles of one shape (or shapes that broadcast; scalars stand for every
    /// element), as one `Map` whose region calls `f` (inlined later).
    pub(crate) fn map(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.len() < 2 {
            self.error(errors::arg_count(e.span, &f.name, 2, args.len()));
            return Ev::Err;
        }
        let ExprKind::Name(func) = &args[0].kind else {
            self.error(errors::map_fn(args[0].span));
            return Ev::Err;
        };
        // Literal operands take the element type of the first other operand.
        let mut vals: Vec<Option<(&Expr, Value)>> = vec![None; args.len() - 1];
        let mut hint = None;
        for literals in [false, true] {
            for (i, a) in args[1..].iter().enumerate() {
                if crate::expr::is_literal(a) != literals {
                    continue;
                }
                let Some(v) = self.value(a, hint) else {
                    return Ev::Err;
                };
                hint = hint.or(Some(self.ty(v).elem()));
                vals[i] = Some((a, v));
            }
        }
        let vals: Vec<(&Expr, Value)> = vals.into_iter().flatten().collect();
        let Some(shape) = vals.iter().find_map(|(_, v)| match self.ty(*v) {
            Type::Tile { shape, .. } => Some(shape),
            _ => None,
        }) else {
            let t = self.ty(vals[0].1);
            self.error(errors::needs_tile(args[1].span, "map", &t));
            return Ev::Err;
        };
        if let Some((a, v)) = vals.iter().find(|(_, v)| matches!(self.ty(*v), Type::Array { .. })) {
            let t = self.ty(*v);
            self.error(errors::needs_tile(a.span, "map", &t));
            return Ev::Err;
        }
        let Some(tiles) = self.broadcast_operands("map", e, &vals) else {
            return Ev::Err;
        };
        let shape = match tiles.iter().find_map(|v| match self.ty(*v) {
            Type::Tile { shape, .. } => Some(shape),
            _ => None,
        }) {
            Some(s) => s,
            None => shape,
        };
        let mut operands = Vec::new();
        for v in &tiles {
            let t = self.ty(*v);
            operands.push(if t.is_tile() {
                *v
            } else {
                let ty = Type::Tile { elem: t.elem(), shape: shape.clone() };
                self.emit1(OpKind::Fill(Fill::Full), vec![*v], ty, e.span)
            });
        }
        self.push_scope();
        let mut params = Vec::new();
        let mut call_args = Vec::new();
        for (i, (v, (a, _))) in operands.iter().zip(&vals).enumerate() {
            let x = self.f.new_value(Type::Scalar(self.ty(*v).elem()));
            let name = format!("{MAP_ELEM}{i}");
            self.declare(&name, Binding::Var(x));
            params.push(x);
            call_args.push(Expr { kind: ExprKind::Name(Ident { name, span: a.span }), span: a.span });
        }
        self.push_ops();
        let y = self.user_call(func, &call_args, e);
        let y = match y {
            Ev::Val(y) if !self.ty(y).is_tile() && !matches!(self.ty(y), Type::Array { .. }) => Some(y),
            Ev::Err => None,
            _ => {
                self.error(errors::map_result(args[0].span));
                None
            }
        };
        if let Some(y) = y {
            self.emit(OpKind::Yield, vec![y], vec![], e.span);
        }
        let ops = self.pop_ops();
        self.pop_scope();
        let Some(y) = y else {
            return Ev::Err;
        };
        let out = Type::Tile { elem: self.ty(y).elem(), shape };
        let region = Region { params, ops };
        Ev::Val(self.emit_with_regions(OpKind::Map, operands, vec![out], vec![region], e.span)[0])
    }

    /// The access `A[..]` of a `mut` array (a parameter or a shared array) that `what`
    /// (`atomic_add`, `masked_store`) writes: E0211 for anything else, E0205 for a read-only
    /// array.
    pub(crate) fn written_access(&mut self, target: &Expr, what: &str) -> Option<Access> {
        if let ExprKind::Index(base, _) = &target.kind {
            if let ExprKind::Name(n) = &base.kind {
                self.resolve_use(n, false);
            }
        }
        let found = match &target.kind {
            ExprKind::Index(base, items) => match &base.kind {
                ExprKind::Name(n) => match self.lookup(&n.name).cloned() {
                    Some(Binding::Array { value, mutable, name, fixed }) => Some((value, mutable, name, fixed, items)),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        };
        let Some((arr, mutable, name, fixed, items)) = found else {
            self.error(errors::written_target(target.span, what));
            return None;
        };
        if !mutable {
            self.error(errors::read_only(target.span, &name));
            return None;
        }
        self.array_access(arr, &fixed, items, target.span)
    }

    /// The value stored by `what` into `acc`: exactly the access's type (E0201/E0202).
    pub(crate) fn stored_value(&mut self, acc: &Access, value: &Expr) -> Option<Value> {
        let v = self.value(value, Some(acc.ty.elem()))?;
        let v = self.half_to_store(acc, v, value.span);
        let tv = self.ty(v);
        if tv != acc.ty {
            let d = if acc.ty.is_tile() {
                errors::store_type(value.span, &acc.ty, &tv)
            } else {
                errors::assign_type(value.span, &acc.ty, &tv)
            };
            self.error(d);
            return None;
        }
        Some(v)
    }

    /// `present(A)`: whether the array parameter `A` has elements, `false` for an optional array
    /// that the launch omitted (bound with every extent 0, language §3.3). A run-time `bool`.
    pub(crate) fn present(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.len() != 1 {
            self.error(errors::arg_count(e.span, &f.name, 1, args.len()));
            return Ev::Err;
        }
        let ExprKind::Name(n) = &args[0].kind else {
            self.error(errors::present_operand(args[0].span));
            return Ev::Err;
        };
        let Some(Binding::Array { value, .. }) = self
            .lookup(&n.name)
            .cloned()
            .filter(|b| !matches!(b, Binding::Array { value, .. } if self.shared_shapes.contains_key(value)))
        else {
            if self.lookup(&n.name).is_some() {
                self.resolve_use(n, false);
            }
            self.error(errors::present_operand(args[0].span));
            return Ev::Err;
        };
        self.resolve_use(n, false);
        let Type::Array { rank, .. } = self.ty(value) else { return Ev::Err };
        let zero = self.constant(tilec_midend::Const::Int(0, Scalar::I32), e.span);
        let mut all: Option<Value> = None;
        for axis in 0..rank {
            let d = self.emit1(OpKind::Dim(axis), vec![value], Type::Scalar(Scalar::I32), e.span);
            let gt =
                self.emit1(OpKind::Cmp(tilec_midend::CmpOp::Gt), vec![d, zero], Type::Scalar(Scalar::Bool), e.span);
            all = Some(match all {
                None => gt,
                Some(a) => {
                    self.emit1(OpKind::Bin(tilec_midend::BinOp::And), vec![a, gt], Type::Scalar(Scalar::Bool), e.span)
                }
            });
        }
        all.map_or(Ev::Err, Ev::Val)
    }

    /// `v` as stored by `acc`: a value of an `f16` or `bf16` array's own half type is
    /// converted (exactly) to the `f32` that accesses to the array take (§3.5); other values
    /// are left for the caller to check.
    pub(crate) fn half_to_store(&mut self, acc: &Access, v: Value, span: Span) -> Value {
        let Type::Array { elem, .. } = self.ty(acc.array) else { return v };
        if !elem.is_half() || self.ty(v).elem() != elem {
            return v;
        }
        self.convert(v, elem.compute(), span).unwrap_or(v)
    }

    /// `masked_store(A[..], t, m)`: stores the elements of the tile `t` where the mask `m` (a
    /// `bool` tile of `t`'s shape) is true and the position is inside the array.
    pub(crate) fn masked_store(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.len() != 3 {
            self.error(errors::arg_count(e.span, &f.name, 3, args.len()));
            return Ev::Err;
        }
        let Some(acc) = self.written_access(&args[0], "masked_store") else {
            return Ev::Err;
        };
        if !acc.ty.is_tile() {
            self.error(errors::masked_store_scalar(args[0].span));
            return Ev::Err;
        }
        let Some(v) = self.stored_value(&acc, &args[1]) else {
            return Ev::Err;
        };
        let Some(m) = self.value(&args[2], Some(Scalar::Bool)) else {
            return Ev::Err;
        };
        let Type::Tile { shape, .. } = &acc.ty else {
            return Ev::Err;
        };
        let want = Type::Tile { elem: Scalar::Bool, shape: shape.clone() };
        let tm = self.ty(m);
        if tm != want {
            self.error(errors::masked_store_mask(args[2].span, &want, &tm));
            return Ev::Err;
        }
        self.write_access(Write::Masked(m), acc, v, e.span);
        Ev::Unit
    }

    /// `shared<T, R[, C]>::zeros()`: a new zero-filled shared array.
    pub(crate) fn alloc_shared(&mut self, t: &TypeExpr, m: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let TypeExpr::Shared { elem, dims, span } = t else {
            return Ev::Err;
        };
        if m.name != "zeros" || !args.is_empty() {
            self.error(errors::shared_ctor(m.span.to(e.span)));
            return Ev::Err;
        }
        let Some((elem, shape)) = self.shared_type(elem, dims, *span) else {
            return Ev::Err;
        };
        let ty = Type::Array { elem, rank: shape.len() as u8, mutable: true };
        let v = self.emit1(OpKind::AllocShared(shape.clone()), vec![], ty, e.span);
        self.shared_shapes.insert(v, shape);
        Ev::Val(v)
    }

    /// The element type and shape of `shared<elem, dims..>` (reported if invalid).
    pub(crate) fn shared_type(&mut self, elem: &TypeExpr, dims: &[Expr], span: Span) -> Option<(Scalar, Vec<u32>)> {
        let elem = match elem {
            TypeExpr::Named(n) => self.compute_type(n),
            other => {
                self.error(errors::tile_elem(other.span()));
                None
            }
        };
        if dims.is_empty() || dims.len() > 2 {
            self.error(errors::tile_rank(span, dims.len()));
            return None;
        }
        let shape: Option<Vec<u32>> =
            dims.iter().map(|d| self.extent_up_to(d, "a shared array extent", crate::limits::BLOCK_MAX)).collect();
        Some((elem?, shape?))
    }

    /// Checks `let s: shared<T, R, C> = value;`: the value is a shared array of that element
    /// type and shape (E0201 otherwise).
    pub(crate) fn check_shared_annotation(&mut self, t: &TypeExpr, v: tilec_midend::Value, value_span: Span) {
        let TypeExpr::Shared { elem, dims, span } = t else {
            return;
        };
        let Some((elem, shape)) = self.shared_type(elem, dims, *span) else {
            return;
        };
        let want = shared_name(elem, &shape);
        let got = match (self.ty(v), self.shared_shapes.get(&v)) {
            (Type::Array { elem: e, .. }, Some(s)) if e == elem && *s == shape => return,
            (Type::Array { elem: e, .. }, Some(s)) => shared_name(e, s),
            (t, _) => t.to_string(),
        };
        self.error(errors::shared_annotation(value_span, &want, &got));
    }

    /// Binds `let name = shared<..>::zeros();` as an array that can be indexed and written.
    pub(crate) fn declare_shared(&mut self, name: &str, v: tilec_midend::Value, _span: Span) {
        let fixed = self.shared_shapes.get(&v).map(|s| s.iter().map(|&d| Some(d as u64)).collect()).unwrap_or_default();
        self.declare(name, Binding::Array { value: v, mutable: true, name: name.to_string(), fixed });
    }
}

/// `shared<f32, 16, 16>`.
pub(crate) fn shared_name(elem: Scalar, shape: &[u32]) -> String {
    let dims: Vec<String> = shape.iter().map(u32::to_string).collect();
    format!("shared<{}, {}>", elem.name(), dims.join(", "))
}
