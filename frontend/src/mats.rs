//! Small matrices and vectors (`mat<T, R, C>`, `vec<T, N>` and tiles of them, language §3.6):
//! their types, array accesses with fewer indices than the rank, entry access, constructors,
//! `+ - * /`, `@`, `where` and casts. Each operation is written on the entries (scalars, or
//! tiles of the matrices' shape) between a `MatPart` per entry read and one `MatBuild`;
//! `tilec_midend::mats::lower` then replaces the matrices by their entries. The functions
//! (`inverse`, `svd`, ..) are in `matfns.rs`.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{BinOp, Expr, ExprKind, IndexItem, TypeExpr};
use tilec_grammar::span::Span;
use tilec_midend::{self as ir, CmpOp, Const, Fill, Index, OpKind, Scalar, Type, Value};

/// The largest row, column or vector count of a small matrix.
pub(crate) const MAX_MAT_DIM: u32 = 16;

/// The shape of the tile of matrices or the tile `t` (empty for one matrix or a scalar).
pub(crate) fn outer_shape(t: &Type) -> Vec<u32> {
    match t {
        Type::Mat { shape, .. } | Type::Tile { shape, .. } => shape.clone(),
        _ => Vec::new(),
    }
}

/// The row and column counts of a small matrix type (`[N]` for a vector).
pub(crate) fn mat_dims(t: &Type) -> Option<&[u32]> {
    match t {
        Type::Mat { dims, .. } => Some(dims),
        _ => None,
    }
}

impl FnBuilder<'_, '_> {
    /// The type written `mat<T, R, C>` or `vec<T, N>`: one matrix (`shape` empty) or a tile of
    /// them of shape `shape` (written `tile<mat<..>, B>`). E0233 for a bad element type,
    /// extent or tile rank.
    pub(crate) fn mat_value_type(&mut self, t: &TypeExpr, shape: Vec<u32>, span: Span) -> Option<Type> {
        let TypeExpr::Mat { vector, elem, dims, span: mspan } = t else {
            return None;
        };
        let TypeExpr::Named(n) = &**elem else {
            self.error(errors::mat_type(elem.span(), "the entries of a small matrix are scalars".into()));
            return None;
        };
        let s = self.scalar_type(n)?;
        if s == Scalar::Bool || s.is_half() {
            self.error(errors::mat_type(elem.span(), format!("small matrices of {} are not supported", s.name())));
            return None;
        }
        let want = if *vector { 1 } else { 2 };
        if dims.len() != want {
            let what = if *vector { "`vec<T, N>` takes one extent" } else { "`mat<T, R, C>` takes two extents" };
            self.error(errors::mat_type(*mspan, format!("{what}, {} given", dims.len())));
            return None;
        }
        let mut ds = Vec::new();
        for d in dims {
            let n = self.extent(d, "a small matrix's extent")?;
            if n > MAX_MAT_DIM {
                self.error(errors::mat_type(
                    d.span,
                    format!("a small matrix's extent is at most {MAX_MAT_DIM}, found {n}"),
                ));
                return None;
            }
            ds.push(n);
        }
        if shape.len() > 1 {
            self.error(errors::mat_type(
                span,
                format!("a tile of small matrices has one extent, found {}", shape.len()),
            ));
            return None;
        }
        Some(Type::Mat { elem: s, dims: ds, shape })
    }

    /// The entries of the small matrix `v`, row-major.
    pub(crate) fn entries(&mut self, v: Value, span: Span) -> Vec<Value> {
        let t = self.ty(v);
        let part = t.mat_part().expect("a small matrix");
        (0..t.mat_entries()).map(|i| self.emit1(OpKind::MatPart(i), vec![v], part.clone(), span)).collect()
    }

    /// The small matrix (`dims = [R, C]`) or vector (`[N]`) of these entries, row-major: one
    /// matrix if all are scalars, else a tile of them of the tiles' shape (scalars repeated;
    /// `tile<T, B>` entries become the `tile<T, B, 1>` columns of [`Type::mat_part`]).
    pub(crate) fn build_mat(&mut self, elem: Scalar, dims: &[u32], parts: Vec<Value>, span: Span) -> Value {
        let shape = parts.iter().find_map(|p| match self.ty(*p) {
            Type::Tile { shape, .. } => Some(vec![shape[0]]),
            _ => None,
        });
        self.build_mat_as(elem, dims, parts, shape.unwrap_or_default(), span)
    }

    /// [`Self::build_mat`] of the tile shape `shape` (empty: one matrix, of scalar entries).
    pub(crate) fn build_mat_as(
        &mut self,
        elem: Scalar,
        dims: &[u32],
        parts: Vec<Value>,
        shape: Vec<u32>,
        span: Span,
    ) -> Value {
        let parts = if shape.is_empty() {
            parts
        } else {
            parts.into_iter().map(|p| self.column_entry(p, &shape, span)).collect()
        };
        self.emit1(OpKind::MatBuild, parts, Type::Mat { elem, dims: dims.to_vec(), shape }, span)
    }

    /// `x` as an entry of a tile of matrices of shape `[b]`: a scalar repeated, a `tile<T, b>`
    /// as a `tile<T, b, 1>` column; such a column unchanged.
    pub(crate) fn column_entry(&mut self, x: Value, shape: &[u32], span: Span) -> Value {
        let col = vec![shape[0], 1];
        match self.ty(x) {
            Type::Scalar(s) => self.emit1(OpKind::Fill(Fill::Full), vec![x], Type::Tile { elem: s, shape: col }, span),
            Type::Tile { elem, shape: s } if s.len() == 1 => {
                self.emit1(OpKind::Reshape, vec![x], Type::Tile { elem, shape: col }, span)
            }
            _ => x,
        }
    }

    /// An entry as the program sees it: a scalar, or for a tile of matrices a `tile<T, B>`
    /// (from its `tile<T, B, 1>` column).
    pub(crate) fn entry_value(&mut self, x: Value, span: Span) -> Value {
        match self.ty(x) {
            Type::Tile { elem, shape } if shape.len() == 2 => {
                self.emit1(OpKind::Reshape, vec![x], Type::Tile { elem, shape: vec![shape[0]] }, span)
            }
            _ => x,
        }
    }

    /// `a k b` on entries (scalars, or tiles of one shape; a scalar with a tile stands for
    /// each of its elements).
    pub(crate) fn e_bin(&mut self, k: ir::BinOp, a: Value, b: Value, span: Span) -> Value {
        let (ta, tb) = (self.ty(a), self.ty(b));
        let ty = if ta.is_tile() || !tb.is_tile() { ta } else { tb };
        self.emit1(OpKind::Bin(k), vec![a, b], ty, span)
    }

    /// `k a` on an entry.
    pub(crate) fn e_un(&mut self, k: ir::UnOp, a: Value, span: Span) -> Value {
        let t = self.ty(a);
        self.emit1(OpKind::Un(k), vec![a], t, span)
    }

    /// The comparison `a k b` of entries: a `bool`, or a tile of them.
    pub(crate) fn e_cmp(&mut self, k: CmpOp, a: Value, b: Value, span: Span) -> Value {
        let b1 = Type::Scalar(Scalar::Bool);
        if !self.ty(a).is_tile() && !self.ty(b).is_tile() {
            return self.emit1(OpKind::Cmp(k), vec![a, b], b1, span);
        }
        self.map_elementwise(&[a, b], Scalar::Bool, span, |g, x| g.emit1(OpKind::Cmp(k), x.to_vec(), b1, span))
    }

    /// `where(c, a, b)` on entries (`c` a `bool` or a tile of them).
    pub(crate) fn e_select(&mut self, c: Value, a: Value, b: Value, span: Span) -> Value {
        let elem = self.ty(a).elem();
        if !self.ty(c).is_tile() && !self.ty(a).is_tile() && !self.ty(b).is_tile() {
            return self.emit1(OpKind::Select, vec![c, a, b], Type::Scalar(elem), span);
        }
        self.select_elementwise(c, a, b, elem, span)
    }

    /// The scalar constant `x` of type `elem`.
    pub(crate) fn e_const(&mut self, x: f64, elem: Scalar, span: Span) -> Value {
        let c = if elem.is_int() { Const::Int(x as i64, elem) } else { Const::Float(x, elem) };
        self.constant(c, span)
    }

    /// `a op b` where `a` or `b` is a small matrix (`expr::binary`, compound assignments):
    /// `+ - * /` entry by entry with a matrix of the same size or a scalar (or a tile of the
    /// matrices' shape), and `@`.
    pub(crate) fn mat_binary(&mut self, op: BinOp, va: Value, vb: Value, span: Span) -> Ev {
        let what = format!("`{}`", op.symbol());
        match op {
            BinOp::MatMul => self.mat_matmul(va, vb, span),
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div => {
                self.mat_entrywise(crate::expr::arith_op(op).expect("arithmetic"), va, vb, span, &what)
            }
            _ => {
                let (ta, tb) = (self.ty(va), self.ty(vb));
                self.error(errors::mat_operands(span, &what, &ta, Some(&tb)));
                Ev::Err
            }
        }
    }

    /// `k` applied entry by entry to `a` and `b`, at least one a small matrix, the other a
    /// matrix of the same size, a scalar or a tile of the matrices' shape (`+ - * /`, `min`,
    /// `max`); E0232 (naming the operation `what`) otherwise.
    pub(crate) fn mat_entrywise(&mut self, k: ir::BinOp, va: Value, vb: Value, span: Span, what: &str) -> Ev {
        let (ta, tb) = (self.ty(va), self.ty(vb));
        if ta.elem() != tb.elem() {
            self.error(errors::mat_operands(span, what, &ta, Some(&tb)));
            return Ev::Err;
        }
        let dims = match (mat_dims(&ta), mat_dims(&tb)) {
            (Some(da), Some(db)) if da != db => None,
            (Some(d), _) | (_, Some(d)) => Some(d.to_vec()),
            (None, None) => None,
        };
        let (Some(dims), true) = (dims, self.shapes_agree(&ta, &tb)) else {
            self.error(errors::mat_operands(span, what, &ta, Some(&tb)));
            return Ev::Err;
        };
        let n: u32 = dims.iter().product();
        let shape = outer_shape(&ta).max(outer_shape(&tb));
        let operand = |g: &mut Self, v: Value, t: &Type| {
            if t.mat_part().is_some() {
                g.entries(v, span)
            } else if shape.is_empty() || !t.is_tile() {
                vec![v; n as usize]
            } else {
                vec![g.column_entry(v, &shape, span); n as usize]
            }
        };
        let pa = operand(self, va, &ta);
        let pb = operand(self, vb, &tb);
        let parts = pa.into_iter().zip(pb).map(|(x, y)| self.e_bin(k, x, y, span)).collect();
        Ev::Val(self.build_mat(ta.elem(), &dims, parts, span))
    }

    /// Whether two operands' tile shapes combine: equal, or one of them a single value; a tile
    /// that is not of matrices has one extent.
    pub(crate) fn shapes_agree(&self, ta: &Type, tb: &Type) -> bool {
        let (sa, sb) = (outer_shape(ta), outer_shape(tb));
        sa.len() <= 1 && sb.len() <= 1 && (sa.is_empty() || sb.is_empty() || sa == sb)
    }

    /// `a @ b` of small matrices and vectors: `mat<R, K> @ mat<K, C>`, `mat<R, K> @ vec<K>`,
    /// `vec<K> @ mat<K, C>`; each entry the sum over `k` in order of the products (no fused
    /// multiply-add, so every target rounds alike).
    pub(crate) fn mat_matmul(&mut self, va: Value, vb: Value, span: Span) -> Ev {
        let (ta, tb) = (self.ty(va), self.ty(vb));
        let bad = |g: &mut Self| {
            g.error(errors::mat_operands(span, "`@`", &ta, Some(&tb)));
            Ev::Err
        };
        let (Some(da), Some(db)) = (mat_dims(&ta), mat_dims(&tb)) else {
            return bad(self);
        };
        // (rows of a, inner, columns of b, the result's dims)
        let (r, k, c, out) = match (da, db) {
            ([r, k], [k2, c]) if k == k2 => (*r, *k, *c, vec![*r, *c]),
            ([r, k], [k2]) if k == k2 => (*r, *k, 1, vec![*r]),
            ([k], [k2, c]) if k == k2 => (1, *k, *c, vec![*c]),
            _ => return bad(self),
        };
        if ta.elem() != tb.elem() || !self.shapes_agree(&ta, &tb) {
            return bad(self);
        }
        let (pa, pb) = (self.entries(va, span), self.entries(vb, span));
        let mut parts = Vec::new();
        for i in 0..r {
            for j in 0..c {
                let mut acc = None;
                for l in 0..k {
                    let p = self.e_bin(ir::BinOp::Mul, pa[(i * k + l) as usize], pb[(l * c + j) as usize], span);
                    acc = Some(match acc {
                        None => p,
                        Some(s) => self.e_bin(ir::BinOp::Add, s, p, span),
                    });
                }
                parts.push(acc.expect("k >= 1"));
            }
        }
        Ev::Val(self.build_mat(ta.elem(), &out, parts, span))
    }

    /// The math function `k` of every entry of `v` (`abs`, `sqrt`, `exp`, ..; with `recip`,
    /// `1 / sqrt(x)`: `rsqrt`).
    pub(crate) fn mat_unary(&mut self, k: ir::UnOp, recip: bool, v: Value, span: Span) -> Value {
        let t = self.ty(v);
        let mut parts = Vec::new();
        for p in self.entries(v, span) {
            let y = self.e_un(k, p, span);
            parts.push(if recip {
                let one = self.e_const(1.0, t.elem(), span);
                self.e_bin(ir::BinOp::Div, one, y, span)
            } else {
                y
            });
        }
        self.build_mat_as(t.elem(), mat_dims(&t).expect("a matrix"), parts, outer_shape(&t), span)
    }

    /// `-m`.
    pub(crate) fn mat_neg(&mut self, v: Value, span: Span) -> Value {
        let t = self.ty(v);
        let parts = self.entries(v, span).into_iter().map(|p| self.e_un(ir::UnOp::Neg, p, span)).collect();
        self.build_mat(t.elem(), mat_dims(&t).expect("a matrix"), parts, span)
    }

    /// `m as s`, entry by entry.
    pub(crate) fn mat_cast(&mut self, v: Value, s: Scalar, span: Span) -> Option<Value> {
        let t = self.ty(v);
        if t.elem() == s {
            return Some(v);
        }
        if s == Scalar::Bool || s.is_half() {
            return None;
        }
        let mut parts = Vec::new();
        for p in self.entries(v, span) {
            parts.push(self.convert(p, s, span)?);
        }
        Some(self.build_mat(s, mat_dims(&t).expect("a matrix"), parts, span))
    }

    /// `where(c, a, b)` with `a` or `b` a small matrix: entry by entry; `c` is a `bool`, or a
    /// tile of them of the matrices' shape.
    pub(crate) fn mat_where(&mut self, c: Value, a: Value, b: Value, span: Span) -> Ev {
        let (tc, ta, tb) = (self.ty(c), self.ty(a), self.ty(b));
        if ta.elem() != tb.elem()
            || mat_dims(&ta) != mat_dims(&tb)
            || !self.shapes_agree(&ta, &tb)
            || !self.shapes_agree(&tc, &ta)
            || !self.shapes_agree(&tc, &tb)
        {
            self.error(errors::mat_operands(span, "`where`", &ta, Some(&tb)));
            return Ev::Err;
        }
        let dims = mat_dims(&ta).expect("a matrix").to_vec();
        let c = if tc.is_tile() { self.column_entry(c, &outer_shape(&tc), span) } else { c };
        let (pa, pb) = (self.entries(a, span), self.entries(b, span));
        let parts = pa.into_iter().zip(pb).map(|(x, y)| self.e_select(c, x, y, span)).collect();
        Ev::Val(self.build_mat(ta.elem(), &dims, parts, span))
    }

    /// The entry `x` chosen by the run-time index `i` among `options` (`options[i]`; zero
    /// when `i` is out of range); a constant index picks without code.
    fn choose(&mut self, i: Value, options: &[Value], span: Span) -> Value {
        if let Some(Const::Int(k, _)) = self.known.get(&i) {
            if let Some(v) = options.get(*k as usize) {
                return *v;
            }
        }
        let elem = self.ty(options[0]).elem();
        let mut acc = self.e_const(0.0, elem, span);
        for (r, o) in options.iter().enumerate() {
            let rc = self.constant(Const::Int(r as i64, Scalar::I32), span);
            let is = self.e_cmp(CmpOp::Eq, i, rc, span);
            acc = self.e_select(is, *o, acc, span);
        }
        acc
    }

    /// The indices of `m[items]`: `[i]` of a vector, `[i, j]`, `[i, :]` (a row) or `[:, j]` (a
    /// column) of a matrix, each `None` for `:`. Constant indices are checked (E0209).
    fn mat_items(&mut self, t: &Type, items: &[IndexItem], span: Span) -> Option<Vec<Option<Value>>> {
        let dims = mat_dims(t).expect("a matrix").to_vec();
        let shape_ok = matches!(
            (dims.len(), items),
            (1, [IndexItem::At(_)])
                | (2, [IndexItem::At(_), IndexItem::At(_)])
                | (2, [IndexItem::At(_), IndexItem::Full(_)] | [IndexItem::Full(_), IndexItem::At(_)])
        );
        if !shape_ok {
            self.error(errors::mat_operands(span, "this indexing", t, None));
            return None;
        }
        let mut out = Vec::new();
        for (item, &n) in items.iter().zip(&dims) {
            match item {
                IndexItem::At(e) => {
                    if let Ok(c) = self.const_eval(e) {
                        if c.as_i64() < 0 || c.as_i64() >= n as i64 {
                            self.error(errors::tile_index_range(e.span, c.as_i64(), n));
                            return None;
                        }
                    }
                    out.push(Some(self.index(e)?));
                }
                _ => out.push(None),
            }
        }
        Some(out)
    }

    /// `m[items]` of the small matrix `m`: an entry (a scalar, or a tile of the matrices'
    /// shape), or a row or column as a vector. A run-time index chooses among the entries;
    /// out of range reads zero.
    pub(crate) fn mat_index(&mut self, m: Value, items: &[IndexItem], span: Span) -> Ev {
        let t = self.ty(m);
        let Some(ix) = self.mat_items(&t, items, span) else {
            return Ev::Err;
        };
        let dims = mat_dims(&t).expect("a matrix").to_vec();
        let p = self.entries(m, span);
        if dims.len() == 1 {
            let x = self.choose(ix[0].expect("an index"), &p, span);
            return Ev::Val(self.entry_value(x, span));
        }
        let (r, c) = (dims[0] as usize, dims[1] as usize);
        let col = |j: usize| (0..r).map(|i| p[i * c + j]).collect::<Vec<_>>();
        match (ix[0], ix[1]) {
            (Some(i), Some(j)) => {
                let cols: Vec<Value> = (0..c).map(|jj| self.choose(i, &col(jj), span)).collect();
                let x = self.choose(j, &cols, span);
                Ev::Val(self.entry_value(x, span))
            }
            (Some(i), None) => {
                let row: Vec<Value> = (0..c).map(|jj| self.choose(i, &col(jj), span)).collect();
                Ev::Val(self.build_mat(t.elem(), &[c as u32], row, span))
            }
            (None, Some(j)) => {
                let column: Vec<Value> = (0..r).map(|ii| self.choose(j, &p[ii * c..ii * c + c], span)).collect();
                Ev::Val(self.build_mat(t.elem(), &[r as u32], column, span))
            }
            (None, None) => Ev::Err,
        }
    }

    /// The matrix `m` with `m[items]` replaced by `x` (an entry, or a row or column vector);
    /// with a run-time index each entry chooses between its old value and the new one, and
    /// an index out of range changes nothing.
    pub(crate) fn mat_with(&mut self, m: Value, items: &[IndexItem], x: Value, span: Span) -> Option<Value> {
        let t = self.ty(m);
        let ix = self.mat_items(&t, items, span)?;
        let dims = mat_dims(&t).expect("a matrix").to_vec();
        let (r, c) = (dims[0] as usize, dims.get(1).copied().unwrap_or(1) as usize);
        let line = ix.iter().any(Option::is_none);
        let tx = self.ty(x);
        let want = if line {
            let n = if ix[0].is_none() { r } else { c };
            Type::Mat { elem: t.elem(), dims: vec![n as u32], shape: outer_shape(&tx) }
        } else {
            match outer_shape(&t) {
                s if s.is_empty() => Type::Scalar(t.elem()),
                s => Type::Tile { elem: t.elem(), shape: s },
            }
        };
        let fits = tx.elem() == t.elem() && self.shapes_agree(&tx, &t) && (tx == want || (!line && !tx.is_tile()));
        if !fits {
            self.error(errors::assign_type(span, &want, &tx));
            return None;
        }
        let shape = outer_shape(&t);
        let xs = if line {
            self.entries(x, span)
        } else if shape.is_empty() {
            vec![x]
        } else {
            vec![self.column_entry(x, &shape, span)]
        };
        let mut p = self.entries(m, span);
        for i in 0..r {
            for j in 0..c {
                let (hit, k) = match (dims.len(), ix[0], ix.get(1).copied().flatten()) {
                    (1, Some(a), _) => (vec![(a, i)], 0),
                    (_, Some(a), Some(b)) => (vec![(a, i), (b, j)], 0),
                    (_, Some(a), None) => (vec![(a, i)], j),
                    (_, None, Some(b)) => (vec![(b, j)], i),
                    _ => return None,
                };
                // Constant indices: keep or replace at compile time.
                let mut cond: Option<Value> = None;
                let mut never = false;
                for (v, at) in hit {
                    match self.known.get(&v) {
                        Some(Const::Int(kk, _)) => never |= *kk != at as i64,
                        _ => {
                            let atc = self.constant(Const::Int(at as i64, Scalar::I32), span);
                            let is = self.e_cmp(CmpOp::Eq, v, atc, span);
                            cond = Some(match cond {
                                None => is,
                                Some(c0) => self.e_bin(ir::BinOp::And, c0, is, span),
                            });
                        }
                    }
                }
                if never {
                    continue;
                }
                let e = i * c + j;
                p[e] = match cond {
                    None => xs[k],
                    Some(cv) => self.e_select(cv, xs[k], p[e], span),
                };
            }
        }
        Some(self.build_mat(t.elem(), &dims, p, span))
    }

    /// `A[items]` with fewer indices than `A`'s rank: the last one (a vector) or two (a
    /// matrix) axes, of fixed extents, are each element's entries. `None` when that is not
    /// the case (one index per axis: an ordinary access; other counts, or axes that are not
    /// fixed: the ordinary access's E0209). Each entry is an ordinary access with constant
    /// indices on those axes.
    pub(crate) fn mat_accesses(
        &mut self,
        array: Value,
        fixed: &[Option<u64>],
        items: &[IndexItem],
        span: Span,
    ) -> Option<Result<(Vec<crate::places::Access>, Type), ()>> {
        let Type::Array { rank, .. } = self.ty(array) else {
            return None;
        };
        let (rank, given) = (rank as usize, items.len());
        if given >= rank {
            return None;
        }
        let dims: Option<Vec<u32>> = fixed[given..]
            .iter()
            .map(|d| d.filter(|&n| (1..=MAX_MAT_DIM as u64).contains(&n)).map(|n| n as u32))
            .collect();
        // Other counts are the ordinary access's E0209, which mentions small matrices.
        let (Some(dims), true) = (dims, rank - given <= 2) else {
            return None;
        };
        let zero = |s: Span| IndexItem::At(Expr { kind: ExprKind::Int(0), span: s });
        let mut full = items.to_vec();
        full.extend((given..rank).map(|_| zero(span)));
        let Some(base) = self.array_access(array, fixed, &full, span) else {
            return Some(Err(()));
        };
        let shape = outer_shape(&base.ty);
        if shape.len() > 1 {
            self.error(errors::mat_type(
                span,
                format!("a tile of small matrices has one extent, found {}", shape.len()),
            ));
            return Some(Err(()));
        }
        let n: u32 = dims.iter().product();
        let mut accs = Vec::new();
        // A tile of matrices loads each entry as its `tile<T, B, 1>` column: the first entry
        // axis a range of one.
        let mut base = base;
        if !shape.is_empty() && !base.gather {
            let k = base.kinds.len() - dims.len();
            base.kinds[k] = Index::Slice(1);
            base.ty = Type::Tile { elem: base.ty.elem(), shape: vec![shape[0], 1] };
        }
        for e in 0..n {
            let mut acc = base.clone();
            let (i, j) = if dims.len() == 2 { (e / dims[1], Some(e % dims[1])) } else { (e, None) };
            let at = |g: &mut Self, k: u32| g.constant(Const::Int(k as i64, Scalar::I32), span);
            let last = acc.indices.len();
            match j {
                Some(j) => {
                    acc.indices[last - 2] = at(self, i);
                    acc.indices[last - 1] = at(self, j);
                }
                None => acc.indices[last - 1] = at(self, i),
            }
            accs.push(acc);
        }
        let ty = Type::Mat { elem: base.ty.elem(), dims, shape };
        Some(Ok((accs, ty)))
    }

    /// Loads the small matrices of `mat_accesses`.
    pub(crate) fn load_mat(&mut self, accs: Vec<crate::places::Access>, ty: &Type, span: Span) -> Value {
        let parts = accs.into_iter().map(|a| self.load_access(a, span)).collect();
        // (`build_mat` makes a gather's `tile<T, B>` entries columns.)
        self.build_mat(ty.elem(), mat_dims(ty).expect("a matrix"), parts, span)
    }

    /// Stores the small matrices `v` (of `mat_accesses`' type) entry by entry.
    pub(crate) fn store_mat(&mut self, accs: Vec<crate::places::Access>, v: Value, span: Span) {
        let parts = self.entries(v, span);
        for (acc, p) in accs.into_iter().zip(parts) {
            let p = if acc.ty.is_tile() && outer_shape(&acc.ty).len() == 1 { self.entry_value(p, span) } else { p };
            let p = self.half_to_store(&acc, p, span);
            self.write_access(crate::gathers::Write::Store, acc, p, span);
        }
    }

    /// The small matrix `v` as a register tile, for `print`: one matrix as a `tile<T, R, C>`
    /// (a vector as a `tile<T, N>`); a tile of `B` of them as a `tile<T, B, R * C>`, a row of
    /// entries (row-major) per matrix.
    pub(crate) fn mat_as_tile(&mut self, v: Value, span: Span) -> Value {
        let t = self.ty(v);
        let (elem, n) = (t.elem(), t.mat_entries());
        let shape = outer_shape(&t);
        let parts = self.entries(v, span);
        if let [b] = shape[..] {
            let ty = Type::Tile { elem, shape: vec![b, n] };
            let mut out = self.emit1(OpKind::Fill(Fill::Zeros), vec![], ty.clone(), span);
            for (k, p) in parts.into_iter().enumerate() {
                out = self.emit1(OpKind::InsertBlock(vec![0, k as u32]), vec![out, p], ty.clone(), span);
            }
            return out;
        }
        let dims = mat_dims(&t).expect("a matrix").to_vec();
        let ty = Type::Tile { elem, shape: dims.clone() };
        let mut out = self.emit1(OpKind::Fill(Fill::Zeros), vec![], ty.clone(), span);
        let cols = dims.get(1).copied().unwrap_or(1);
        for (k, p) in parts.into_iter().enumerate() {
            let mut args = vec![out];
            let (i, j) = (k as u32 / cols, k as u32 % cols);
            args.push(self.constant(Const::Int(i as i64, Scalar::I32), span));
            if dims.len() == 2 {
                args.push(self.constant(Const::Int(j as i64, Scalar::I32), span));
            }
            args.push(p);
            out = self.emit1(OpKind::Insert, args, ty.clone(), span);
        }
        out
    }

    /// `mat<T, R, C>::NAME(args)` and `tile<mat<..>, B>::NAME(args)`: `zeros()`, `eye()`,
    /// `full(x)` and `new(x0, x1, ..)` (the entries, row-major: scalars, or tiles of one
    /// shape, which make a tile of matrices).
    pub(crate) fn mat_ctor(&mut self, ty: &Type, m: &tilec_grammar::ast::Ident, args: &[Expr], e: &Expr) -> Ev {
        let Type::Mat { elem, dims, shape } = ty.clone() else {
            return Ev::Err;
        };
        let n: u32 = dims.iter().product();
        let want = match m.name.as_str() {
            "zeros" | "eye" => 0,
            "full" => 1,
            "new" => n as usize,
            _ => {
                self.error(errors::unknown_ctor(m));
                return Ev::Err;
            }
        };
        if args.len() != want {
            self.error(errors::arg_count(e.span, &m.name, want, args.len()));
            return Ev::Err;
        }
        let mut vals = Vec::new();
        for a in args {
            let Some(v) = self.value(a, Some(elem)) else {
                return Ev::Err;
            };
            let tv = self.ty(v);
            let ok = tv.elem() == elem
                && match &tv {
                    Type::Scalar(_) => true,
                    Type::Tile { shape: s, .. } => s.len() == 1 && (shape.is_empty() || *s == shape),
                    _ => false,
                };
            if !ok {
                let part =
                    if shape.is_empty() { Type::Scalar(elem) } else { Type::Tile { elem, shape: shape.clone() } };
                self.error(errors::arg_type(a.span, &m.name, &part, &tv));
                return Ev::Err;
            }
            vals.push(v);
        }
        let zero = self.e_const(0.0, elem, e.span);
        let one = self.e_const(1.0, elem, e.span);
        let cols = dims.get(1).copied().unwrap_or(1);
        let mut parts: Vec<Value> = match m.name.as_str() {
            "zeros" => vec![zero; n as usize],
            "eye" => (0..n)
                .map(|k| if dims.len() == 1 && k == 0 || dims.len() == 2 && k / cols == k % cols { one } else { zero })
                .collect(),
            "full" => vec![vals[0]; n as usize],
            _ => vals,
        };
        if !shape.is_empty() {
            parts = parts.into_iter().map(|p| self.column_entry(p, &shape, e.span)).collect();
        }
        Ev::Val(self.build_mat(elem, &dims, parts, e.span))
    }
}
