//! Indexing and assignment: array loads and stores with static slice extents, tile element
//! access, masked loads `t[:] = A[..]`, and compound assignment to every kind of place.

use crate::builder::{Binding, FnBuilder};
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{AssignOp, BinOp, Expr, ExprKind, IndexItem};
use tilec_grammar::span::Span;
use tilec_midend::{self as ir, Const, Index, OpKind, Scalar, Type, Value};

/// A checked array access: the array value, per-dimension index kinds and index values, and
/// the type of the accessed element or tile.
#[derive(Clone)]
pub(crate) struct Access {
    pub(crate) array: Value,
    pub(crate) kinds: Vec<Index>,
    pub(crate) indices: Vec<Value>,
    pub(crate) ty: Type,
    /// A gather or scatter (`A[idx]`, `gathers.rs`): every kind is `At` and each index is an
    /// `i32` scalar or an integer tile of `ty`'s shape, the element's position in that
    /// dimension.
    pub(crate) gather: bool,
}

/// Structural equality of expressions, ignoring spans (`k0 : k0 + 16`).
fn same_expr(a: &Expr, b: &Expr) -> bool {
    use ExprKind::*;
    match (&a.kind, &b.kind) {
        (Int(x), Int(y)) => x == y,
        (Float(x), Float(y)) => x == y,
        (Bool(x), Bool(y)) => x == y,
        (Name(x), Name(y)) => x.name == y.name,
        (Binary(o, a1, a2), Binary(p, b1, b2)) => o == p && same_expr(a1, b1) && same_expr(a2, b2),
        (Unary(o, a1), Unary(p, b1)) => o == p && same_expr(a1, b1),
        (Call(f, xs), Call(g, ys)) => {
            f.name == g.name && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_expr(x, y))
        }
        _ => false,
    }
}

impl FnBuilder<'_, '_> {
    /// An expression as a base plus a constant offset: `x + 16` is `(x, 16)`, `(k + 1) + 32`
    /// is `(k, 33)`, `x - 2` is `(x, -2)`, anything else `(e, 0)`.
    fn split_offset<'e>(&mut self, e: &'e Expr) -> (&'e Expr, i64) {
        let konst = |b: &mut Self, x: &Expr| match b.const_eval(x) {
            Ok(Const::Int(v, _)) => Some(v),
            _ => None,
        };
        match &e.kind {
            ExprKind::Binary(op @ (BinOp::Add | BinOp::Sub), a, c) => {
                if let Some(v) = konst(self, c) {
                    let (base, off) = self.split_offset(a);
                    let v = if *op == BinOp::Add { v } else { v.saturating_neg() };
                    return (base, off.saturating_add(v));
                }
                if *op == BinOp::Add {
                    if let Some(v) = konst(self, a) {
                        let (base, off) = self.split_offset(c);
                        return (base, off.saturating_add(v));
                    }
                }
                (e, 0)
            }
            _ => (e, 0),
        }
    }

    /// The static extent of the slice `lo:hi`: both constant, or both the same expression plus
    /// constants (`k0 : k0 + 16`, `k + 1 : k + 33`).
    pub(crate) fn slice_extent(&mut self, lo: &Expr, hi: &Expr) -> Option<u32> {
        let k = match (self.const_eval(lo), self.const_eval(hi)) {
            (Ok(a), Ok(b)) => Some(b.as_i64() - a.as_i64()),
            _ => {
                let ((bl, ol), (bh, oh)) = (self.split_offset(lo), self.split_offset(hi));
                same_expr(bl, bh).then(|| oh.saturating_sub(ol))
            }
        };
        let max = self.cx.limits.max_extent;
        match k {
            Some(k) if (1..=max as i64).contains(&k) => Some(k as u32),
            Some(k) => {
                let limits = self.cx.limits;
                self.error(errors::bad_extent(lo.span.to(hi.span), "a slice extent", k as f64, max, Some(&limits)));
                None
            }
            None => {
                self.error(errors::slice_not_static(lo.span.to(hi.span)));
                None
            }
        }
    }

    /// An index converted to `i32`.
    pub(crate) fn index(&mut self, e: &Expr) -> Option<Value> {
        let v = self.int_value(e, "an index")?;
        if self.ty(v) == Type::Scalar(Scalar::I32) {
            Some(v)
        } else {
            Some(self.emit1(OpKind::Cast(Scalar::I32), vec![v], Type::Scalar(Scalar::I32), e.span))
        }
    }

    /// Checks `A[items]` against the array parameter `A`.
    pub(crate) fn array_access(
        &mut self,
        array: Value,
        fixed: &[Option<u64>],
        items: &[IndexItem],
        span: Span,
    ) -> Option<Access> {
        let Type::Array { elem, rank, .. } = self.ty(array) else {
            return None;
        };
        if items.len() != rank as usize {
            self.error(errors::index_count(span, rank as usize, items.len()));
            return None;
        }
        let mut kinds = Vec::new();
        let mut indices = Vec::new();
        let mut shape = Vec::new();
        let mut ok = true;
        // Index tiles (gathers): their dimension among the array's, value and span.
        let mut tiles = Vec::new();
        for (d, item) in items.iter().enumerate() {
            match item {
                IndexItem::At(e) => match self.index_or_tile(e) {
                    Some(v) => {
                        if let Type::Tile { shape: s, .. } = self.ty(v) {
                            tiles.push((d, v, e.span));
                            if s.len() == 1 {
                                shape.push(s[0]);
                            }
                        }
                        kinds.push(Index::At);
                        indices.push(v);
                    }
                    None => ok = false,
                },
                IndexItem::Range(lo, hi) => {
                    let v = self.index(lo);
                    let k = self.slice_extent(lo, hi);
                    match (v, k) {
                        (Some(v), Some(k)) => {
                            kinds.push(Index::Slice(k));
                            indices.push(v);
                            shape.push(k);
                        }
                        _ => ok = false,
                    }
                }
                IndexItem::RangeFrom(e) | IndexItem::RangeTo(e) => {
                    self.error(errors::slice_not_static(e.span));
                    ok = false;
                }
                IndexItem::Full(s) => match fixed.get(d).copied().flatten() {
                    Some(n) if (1..=self.cx.limits.max_extent as u64).contains(&n) => {
                        let zero = self.constant(Const::Int(0, Scalar::I32), *s);
                        kinds.push(Index::Slice(n as u32));
                        indices.push(zero);
                        shape.push(n as u32);
                    }
                    _ => {
                        self.error(errors::full_slice_dynamic(*s));
                        ok = false;
                    }
                },
            }
        }
        if !ok {
            return None;
        }
        // Storage types (`f16`, `bf16`) load and store as their compute type.
        let elem = elem.compute();
        if !tiles.is_empty() {
            return self.gather_access(array, elem, &kinds, indices, &tiles, span);
        }
        if shape.len() > 2 {
            self.error(errors::tile_rank(span, shape.len()));
            return None;
        }
        let ty = if shape.is_empty() { Type::Scalar(elem) } else { Type::Tile { elem, shape } };
        Some(Access { array, kinds, indices, ty, gather: false })
    }

    /// Element indices `t[i, j]` of a tile: one `At` index per dimension.
    /// Whether `items` name a row or a column of the matrix tile `t` (`t[k, :]`, `t[:, k]`).
    fn is_line(&self, t: Value, items: &[IndexItem]) -> bool {
        matches!(self.ty(t), Type::Tile { ref shape, .. } if shape.len() == 2)
            && matches!(items, [IndexItem::Full(_), IndexItem::At(_)] | [IndexItem::At(_), IndexItem::Full(_)])
    }

    fn tile_indices(&mut self, t: Value, items: &[IndexItem], span: Span) -> Option<Vec<Value>> {
        let Type::Tile { shape, .. } = self.ty(t) else {
            return None;
        };
        if items.iter().any(|i| matches!(i, IndexItem::Range(..) | IndexItem::RangeFrom(_) | IndexItem::RangeTo(_))) {
            self.error(errors::tile_slice(span));
            return None;
        }
        if items.len() != shape.len() || items.iter().any(|i| !matches!(i, IndexItem::At(_))) {
            self.error(errors::tile_index(span, shape.len()));
            return None;
        }
        let mut out = Vec::new();
        for (item, &n) in items.iter().zip(&shape) {
            let IndexItem::At(e) = item else { return None };
            if let Ok(c) = self.const_eval(e) {
                if c.as_i64() < 0 || c.as_i64() >= n as i64 {
                    self.error(errors::tile_index_range(e.span, c.as_i64(), n));
                    return None;
                }
            }
            out.push(self.index(e)?);
        }
        Some(out)
    }

    /// `base[items]` as a value: an array load or a tile element.
    pub(crate) fn index_value(&mut self, base: &Expr, items: &[IndexItem], e: &Expr) -> Ev {
        let binding = match &base.kind {
            ExprKind::Name(n) => {
                self.resolve_use(n, false);
                self.lookup(&n.name).cloned()
            }
            _ => None,
        };
        match binding {
            Some(Binding::Array { value, fixed, .. }) => {
                match self.mat_accesses(value, &fixed, items, e.span) {
                    Some(Ok((accs, ty))) => return Ev::Val(self.load_mat(accs, &ty, e.span)),
                    Some(Err(())) => return Ev::Err,
                    None => {}
                }
                let Some(acc) = self.array_access(value, &fixed, items, e.span) else {
                    return Ev::Err;
                };
                Ev::Val(self.load_access(acc, e.span))
            }
            Some(Binding::Var(t)) if self.ty(t).is_tile() => self.tile_part(t, items, e.span),
            Some(Binding::Var(m)) if matches!(self.ty(m), Type::Mat { .. }) => self.mat_index(m, items, e.span),
            _ => match self.expr(base, None) {
                Ev::Val(v) if self.ty(v).is_tile() => self.tile_part(v, items, e.span),
                Ev::Val(m) if matches!(self.ty(m), Type::Mat { .. }) => self.mat_index(m, items, e.span),
                Ev::Val(v) => {
                    let t = self.ty(v);
                    self.error(errors::not_indexable(base.span, &t));
                    Ev::Err
                }
                _ => Ev::Err,
            },
        }
    }

    /// `t[items]` of the tile value `t`: a row or column, a range, or an element.
    fn tile_part(&mut self, t: Value, items: &[IndexItem], span: Span) -> Ev {
        if let Some(l) = self.tile_line(t, items) {
            return self.read_line(t, &l, span).map_or(Ev::Err, Ev::Val);
        }
        if self.is_block(t, items) {
            return self.tile_block(t, items).map_or(Ev::Err, |b| Ev::Val(self.read_block(t, &b, span)));
        }
        let Some(idx) = self.tile_indices(t, items, span) else {
            return Ev::Err;
        };
        let elem = self.ty(t).elem();
        let mut args = vec![t];
        args.extend(idx);
        Ev::Val(self.emit1(OpKind::Extract, args, Type::Scalar(elem), span))
    }

    /// Applies `op` to an old value and the right-hand side of a compound assignment.
    fn combine(&mut self, op: AssignOp, old: Value, rhs: &Expr, span: Span) -> Option<Value> {
        let t = self.ty(old);
        let v = self.value(rhs, Some(t.elem()))?;
        if op == AssignOp::Set {
            let tv = self.ty(v);
            if tv != t {
                self.error(errors::assign_type(rhs.span, &t, &tv));
                return None;
            }
            return Some(v);
        }
        if matches!(t, Type::Mat { .. }) || matches!(self.ty(v), Type::Mat { .. }) {
            let k = match op {
                AssignOp::Add => BinOp::Add,
                AssignOp::Sub => BinOp::Sub,
                AssignOp::Mul => BinOp::Mul,
                _ => BinOp::Div,
            };
            let r = match self.mat_binary(k, old, v, span) {
                Ev::Val(r) => r,
                _ => return None,
            };
            let tr = self.ty(r);
            if tr != t {
                self.error(errors::assign_type(rhs.span, &t, &tr));
                return None;
            }
            return Some(r);
        }
        // A tile that broadcasts to the target's shape (`t += v` adds `v` to every row).
        let v = match (&t, self.ty(v)) {
            (Type::Tile { shape: st, .. }, Type::Tile { shape: sv, .. })
                if crate::broadcast::broadcast_shape(st, &sv).as_ref() == Some(st) =>
            {
                self.broadcast_to(v, st, span)
            }
            _ => v,
        };
        let tv = self.ty(v);
        let ok = tv.elem() == t.elem() && (tv == t || !tv.is_tile()) && t.elem() != Scalar::Bool;
        if !ok {
            self.error(errors::assign_type(rhs.span, &t, &tv));
            return None;
        }
        let k = match op {
            AssignOp::Add => ir::BinOp::Add,
            AssignOp::Sub => ir::BinOp::Sub,
            AssignOp::Mul => ir::BinOp::Mul,
            _ => ir::BinOp::Div,
        };
        Some(self.emit1(OpKind::Bin(k), vec![old, v], t, span))
    }

    /// As [`Self::combine`], but a plain `=` also takes a scalar of the element type (it fills
    /// the tile `old`'s place; the caller broadcasts it).
    fn combine_or_fill(&mut self, op: AssignOp, old: Value, rhs: &Expr, span: Span) -> Option<Value> {
        let t = self.ty(old);
        if op != AssignOp::Set {
            return self.combine(op, old, rhs, span);
        }
        let v = self.value(rhs, Some(t.elem()))?;
        let tv = self.ty(v);
        if tv != t && tv != Type::Scalar(t.elem()) {
            self.error(errors::assign_type(rhs.span, &t, &tv));
            return None;
        }
        Some(v)
    }

    /// Checks the right-hand side of an assignment whose target failed, so its errors are
    /// reported too.
    fn check_rhs(&mut self, value: &Expr) {
        let _ = self.expr(value, None);
    }

    /// `target op= value;`
    pub(crate) fn assign(&mut self, target: &Expr, op: AssignOp, value: &Expr, span: Span) {
        let (name, items) = match &target.kind {
            ExprKind::Name(n) => (n, None),
            ExprKind::Index(base, items) => match &base.kind {
                ExprKind::Name(n) => (n, Some(items)),
                _ => {
                    self.error(errors::bad_target(target.span));
                    return;
                }
            },
            _ => {
                self.error(errors::bad_target(target.span));
                return;
            }
        };
        // A plain `x = v` writes x; `x += v`, `x[i] = v` and stores into an array also read it.
        let write_only = op == AssignOp::Set && items.is_none();
        self.resolve_use(name, write_only);
        match (self.lookup(&name.name).cloned(), items) {
            (Some(Binding::Var(old)), None) => {
                if let Some(v) = self.combine(op, old, value, span) {
                    self.set_var(&name.name, v);
                }
            }
            (Some(Binding::Var(old)), Some(items))
                if self.ty(old).is_tile() && items.iter().all(|i| matches!(i, IndexItem::Full(_))) =>
            {
                let t = self.ty(old);
                let Type::Tile { shape, .. } = &t else { return };
                if items.len() != shape.len() && items.len() != 1 {
                    self.error(errors::tile_index(target.span, shape.len()));
                    return;
                }
                // `t[:] = A[..]` is the masked load: elements outside the array keep t's values.
                if op == AssignOp::Set {
                    if let ExprKind::Index(b, its) = &value.kind {
                        if let ExprKind::Name(an) = &b.kind {
                            self.resolve_use(an, false);
                            if let Some(Binding::Array { value: arr, fixed, .. }) = self.lookup(&an.name).cloned() {
                                let Some(acc) = self.array_access(arr, &fixed, its, value.span) else {
                                    return;
                                };
                                if acc.ty != t {
                                    self.error(errors::assign_type(value.span, &t, &acc.ty));
                                    return;
                                }
                                let v = self.load_into_access(old, acc, span);
                                self.set_var(&name.name, v);
                                return;
                            }
                        }
                    }
                }
                if let Some(v) = self.combine(op, old, value, span) {
                    self.set_var(&name.name, v);
                }
            }
            (Some(Binding::Var(m)), Some(items)) if matches!(self.ty(m), Type::Mat { .. }) => {
                let old = match self.mat_index(m, items, target.span) {
                    Ev::Val(v) => v,
                    _ => {
                        self.check_rhs(value);
                        return;
                    }
                };
                // `=` also takes a scalar for an entry of a tile of matrices (`mat_with`).
                let v = match op {
                    AssignOp::Set => self.value(value, Some(self.ty(old).elem())),
                    _ => self.combine(op, old, value, span),
                };
                let Some(v) = v else {
                    return;
                };
                if let Some(nm) = self.mat_with(m, items, v, span) {
                    self.set_var(&name.name, nm);
                }
            }
            (Some(Binding::Var(t)), Some(items)) if self.is_block(t, items) => {
                let Some(b) = self.tile_block(t, items) else {
                    self.check_rhs(value);
                    return;
                };
                let old = self.read_block(t, &b, target.span);
                let Some(v) = self.combine_or_fill(op, old, value, span) else {
                    return;
                };
                let nt = self.write_block(t, &b, v, span);
                self.set_var(&name.name, nt);
            }
            (Some(Binding::Var(t)), Some(items)) if self.ty(t).is_tile() && self.is_line(t, items) => {
                let Some(l) = self.tile_line(t, items) else {
                    self.check_rhs(value);
                    return;
                };
                let Some(old) = self.read_line(t, &l, target.span) else {
                    return;
                };
                let Some(v) = self.combine(op, old, value, span) else {
                    return;
                };
                let nt = self.write_line(t, &l, v, span);
                self.set_var(&name.name, nt);
            }
            (Some(Binding::Var(t)), Some(items)) if self.ty(t).is_tile() => {
                let Some(idx) = self.tile_indices(t, items, target.span) else {
                    return;
                };
                let elem = self.ty(t).elem();
                let mut args = vec![t];
                args.extend(idx.iter().copied());
                let old = self.emit1(OpKind::Extract, args.clone(), Type::Scalar(elem), target.span);
                let Some(v) = self.combine(op, old, value, span) else {
                    return;
                };
                args.push(v);
                let tt = self.ty(t);
                let nt = self.emit1(OpKind::Insert, args, tt, span);
                self.set_var(&name.name, nt);
            }
            (Some(Binding::Array { value: arr, mutable, fixed, name: aname }), Some(items)) => {
                if !mutable {
                    self.error(errors::read_only(target.span, &aname));
                    self.check_rhs(value);
                    return;
                }
                match self.mat_accesses(arr, &fixed, items, target.span) {
                    Some(Ok((accs, ty))) => {
                        let v = if op == AssignOp::Set {
                            let Some(v) = self.value(value, Some(ty.elem())) else {
                                return;
                            };
                            let tv = self.ty(v);
                            if tv != ty {
                                self.error(errors::assign_type(value.span, &ty, &tv));
                                return;
                            }
                            v
                        } else {
                            let old = self.load_mat(accs.clone(), &ty, target.span);
                            let Some(v) = self.combine(op, old, value, span) else {
                                return;
                            };
                            v
                        };
                        self.store_mat(accs, v, span);
                        return;
                    }
                    Some(Err(())) => {
                        self.check_rhs(value);
                        return;
                    }
                    None => {}
                }
                let Some(acc) = self.array_access(arr, &fixed, items, target.span) else {
                    self.check_rhs(value);
                    return;
                };
                let v = if op == AssignOp::Set {
                    let Some(v) = self.value(value, Some(acc.ty.elem())) else {
                        return;
                    };
                    let v = self.half_to_store(&acc, v, value.span);
                    let tv = self.ty(v);
                    if tv != acc.ty {
                        if acc.ty.is_tile() {
                            self.error(errors::store_type(value.span, &acc.ty, &tv));
                        } else {
                            self.error(errors::assign_type(value.span, &acc.ty, &tv));
                        }
                        return;
                    }
                    v
                } else {
                    let old = self.load_access(acc.clone(), target.span);
                    let Some(v) = self.combine(op, old, value, span) else {
                        return;
                    };
                    v
                };
                self.write_access(crate::gathers::Write::Store, acc, v, span);
            }
            (Some(Binding::Poisoned), _) => self.check_rhs(value),
            (Some(Binding::Array { .. }), None) => {
                self.error(errors::bad_target(target.span));
                self.check_rhs(value);
            }
            (Some(Binding::Var(v)), Some(_)) => {
                let t = self.ty(v);
                self.error(errors::not_indexable(target.span, &t));
            }
            (None, _) => {
                self.check_rhs(value);
                let cands = self.names_in_scope();
                if self.generics.contains_key(&name.name) || self.cx.program.consts.contains_key(&name.name) {
                    self.error(errors::assign_const(target.span, &name.name));
                } else {
                    self.error(errors::unknown_name(name, &cands));
                }
            }
        }
    }
}
