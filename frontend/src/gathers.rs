//! Indexed loads and stores, gathers and scatters (language §7.6): an array access with
//! integer tiles among its indices (`A[idx]`, `A[b, idx, 0:16]`, `A[rows, cols]`, `A[I, J]`),
//! lowered to a `map` over the elements' positions whose region loads, stores or atomically
//! adds one element, so that every backend runs it with its scalar memory ops and the bounds
//! rules of §7.2.

use crate::builder::FnBuilder;
use crate::errors;
use crate::places::Access;
use tilec_grammar::ast::Expr;
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, CmpOp, Const, Fill, Index, Op, OpKind, Region, Scalar, Type, Value};

/// What a write through an access does to each addressed element.
#[derive(Clone, Copy)]
pub(crate) enum Write {
    /// `A[..] = v`.
    Store,
    /// `atomic_add(A[..], v)`.
    AtomicAdd,
    /// `masked_store(A[..], v, m)`, the mask a `bool` tile of `v`'s shape.
    Masked(Value),
}

impl FnBuilder<'_, '_> {
    /// An index item: an integer scalar (converted to `i32`) or an integer tile (a gather
    /// index, of its own element type); E0215 for anything else.
    pub(crate) fn index_or_tile(&mut self, e: &Expr) -> Option<Value> {
        let v = self.value(e, Some(Scalar::I32))?;
        match self.ty(v) {
            Type::Tile { elem, .. } if elem.is_int() => Some(v),
            Type::Scalar(s) if s.is_int() && s != Scalar::I32 => {
                Some(self.emit1(OpKind::Cast(Scalar::I32), vec![v], Type::Scalar(Scalar::I32), e.span))
            }
            Type::Scalar(s) if s.is_int() => Some(v),
            t => {
                self.error(errors::expected_int(e.span, "an index", &t));
                None
            }
        }
    }

    /// The access `array[..]` whose items include the index tiles `tiles` (array dimension,
    /// tile, span): `kinds` and `indices` as collected for every item (`At` for scalars and
    /// index tiles, `Slice` with its start for slices). A 1-D index tile stands for a slice
    /// whose positions it lists (its extent a dimension of the result, in order with the
    /// slices); a 2-D one addresses elements one by one, and the other items must then be
    /// single positions or index tiles of its shape (E0202). The result has rank 1 or 2
    /// (E0218).
    pub(crate) fn gather_access(
        &mut self,
        array: Value,
        elem: Scalar,
        kinds: &[Index],
        mut indices: Vec<Value>,
        tiles: &[(usize, Value, Span)],
        span: Span,
    ) -> Option<Access> {
        let shape_of = |b: &Self, v: Value| match b.ty(v) {
            Type::Tile { shape, .. } => shape,
            _ => Vec::new(),
        };
        let elementwise = tiles.iter().find(|(_, v, _)| shape_of(self, *v).len() == 2);
        let shape: Vec<u32> = match elementwise {
            Some(&(_, w, _)) => {
                let want = shape_of(self, w);
                let stray = kinds.iter().position(|k| matches!(k, Index::Slice(_)));
                let other = tiles.iter().find(|(_, v, _)| shape_of(self, *v) != want);
                if stray.is_some() || other.is_some() {
                    let at = other.map_or(span, |o| o.2);
                    self.error(errors::gather_shapes(at, &self.ty(w)));
                    return None;
                }
                want
            }
            None => {
                let mut s = Vec::new();
                for (d, k) in kinds.iter().enumerate() {
                    match k {
                        Index::Slice(n) => s.push(*n),
                        Index::At => {
                            if let Some((_, v, _)) = tiles.iter().find(|t| t.0 == d) {
                                s.push(shape_of(self, *v)[0]);
                            }
                        }
                    }
                }
                s
            }
        };
        if shape.len() > 2 {
            self.error(errors::tile_rank(span, shape.len()));
            return None;
        }
        // Each non-scalar index as a tile of positions of the result's shape: a slice's
        // `lo + iota`, a 1-D index tile along its axis.
        let mut axis = 0u8;
        for (d, k) in kinds.iter().enumerate() {
            let is_tile = tiles.iter().any(|t| t.0 == d);
            if !matches!(k, Index::Slice(_)) && !is_tile {
                continue;
            }
            let v = indices[d];
            let ax = axis;
            axis += 1;
            indices[d] = if is_tile && elementwise.is_some() {
                v
            } else if is_tile {
                self.along(v, ax, &shape, span)
            } else {
                self.slice_positions(v, ax, &shape, span)
            };
        }
        let kinds = vec![Index::At; kinds.len()];
        Some(Access { array, kinds, indices, ty: Type::Tile { elem, shape }, gather: true })
    }

    /// The positions `lo, lo + 1, ..` of a slice that is dimension `axis` of a tile of
    /// `shape`, as an `i32` tile of that shape.
    fn slice_positions(&mut self, lo: Value, axis: u8, shape: &[u32], span: Span) -> Value {
        let ty = Type::Tile { elem: Scalar::I32, shape: shape.to_vec() };
        let iota = self.emit1(OpKind::Fill(Fill::Iota(axis)), vec![], ty.clone(), span);
        self.emit1(OpKind::Bin(BinOp::Add), vec![iota, lo], ty, span)
    }

    /// A tile access (`A[r0:r0+16, c]`, or a gather) in the gathering form, one position per
    /// element, for the element-wise ops of atomics (`atomics.rs`).
    pub(crate) fn positions(&mut self, acc: Access, span: Span) -> Access {
        let Type::Tile { shape, .. } = acc.ty.clone() else { return acc };
        if acc.gather {
            return acc;
        }
        let mut axis = 0u8;
        let mut indices = acc.indices.clone();
        for (d, k) in acc.kinds.iter().enumerate() {
            if let Index::Slice(_) = k {
                indices[d] = self.slice_positions(indices[d], axis, &shape, span);
                axis += 1;
            }
        }
        Access { kinds: vec![Index::At; acc.kinds.len()], indices, gather: true, ..acc }
    }

    /// The 1-D tile `v` as a tile of `shape` that repeats it along `axis`: the rows of a
    /// matrix (`axis` 0) or its columns (1).
    fn along(&mut self, v: Value, axis: u8, shape: &[u32], span: Span) -> Value {
        if shape.len() == 1 {
            return v;
        }
        let v = if axis == 0 { self.column(v, span).unwrap_or(v) } else { v };
        self.broadcast_to(v, shape, span)
    }

    /// The value of the access `acc` (`A[..]` in an expression): elements outside the array
    /// read as zero.
    pub(crate) fn load_access(&mut self, acc: Access, span: Span) -> Value {
        if !acc.gather {
            let mut args = vec![acc.array];
            args.extend(acc.indices);
            return self.emit1(OpKind::Load(acc.kinds), args, acc.ty, span);
        }
        let elem = acc.ty.elem();
        self.element_map(&acc, &[], span, |b, pos, _| b.load_at(&acc, pos, elem, span))
    }

    /// `t[:] = A[..]`, the masked load: the access's elements, `old`'s where outside the array.
    pub(crate) fn load_into_access(&mut self, old: Value, acc: Access, span: Span) -> Value {
        if !acc.gather {
            let mut args = vec![old, acc.array];
            args.extend(acc.indices);
            return self.emit1(OpKind::LoadInto(acc.kinds), args, acc.ty, span);
        }
        let elem = acc.ty.elem();
        let extents: Vec<Value> = (0..acc.kinds.len())
            .map(|d| self.emit1(OpKind::Dim(d as u8), vec![acc.array], Type::Scalar(Scalar::I32), span))
            .collect();
        self.element_map(&acc, &[old], span, |b, pos, x| {
            let y = b.load_at(&acc, pos, elem, span);
            let zero = b.constant(Const::Int(0, Scalar::I32), span);
            let mut inside = None;
            for (p, n) in pos.iter().zip(&extents) {
                let lo = b.emit1(OpKind::Cmp(CmpOp::Ge), vec![*p, zero], Type::Scalar(Scalar::Bool), span);
                let hi = b.emit1(OpKind::Cmp(CmpOp::Lt), vec![*p, *n], Type::Scalar(Scalar::Bool), span);
                let both = b.emit1(OpKind::Bin(BinOp::And), vec![lo, hi], Type::Scalar(Scalar::Bool), span);
                inside = Some(match inside {
                    None => both,
                    Some(i) => b.emit1(OpKind::Bin(BinOp::And), vec![i, both], Type::Scalar(Scalar::Bool), span),
                });
            }
            let inside = inside.expect("an array has a dimension");
            b.emit1(OpKind::Select, vec![inside, y, x[0]], Type::Scalar(elem), span)
        })
    }

    /// Writes `v` (of the access's type) through `acc`: a store, an atomic addition or a
    /// masked store; only elements inside the array are touched.
    pub(crate) fn write_access(&mut self, w: Write, acc: Access, v: Value, span: Span) {
        if !acc.gather {
            let mut args = vec![acc.array];
            args.extend(acc.indices);
            args.push(v);
            let kind = match w {
                Write::Store => OpKind::Store(acc.kinds),
                Write::AtomicAdd => OpKind::AtomicAdd(acc.kinds),
                Write::Masked(m) => {
                    args.push(m);
                    OpKind::StoreMasked(acc.kinds)
                }
            };
            self.emit(kind, args, vec![], span);
            return;
        }
        let extra: Vec<Value> = match w {
            Write::Masked(m) => vec![v, m],
            _ => vec![v],
        };
        let kinds = acc.kinds.clone();
        self.element_map(&acc, &extra, span, |b, pos, x| {
            let mut args = vec![acc.array];
            args.extend_from_slice(pos);
            if let Write::Masked(_) = w {
                // A masked-off element's first position is -1: out of bounds, not written.
                let m1 = b.constant(Const::Int(-1, Scalar::I32), span);
                args[1] = b.emit1(OpKind::Select, vec![x[1], pos[0], m1], Type::Scalar(Scalar::I32), span);
            }
            args.push(x[0]);
            let kind = if let Write::AtomicAdd = w { OpKind::AtomicAdd(kinds) } else { OpKind::Store(kinds) };
            b.emit(kind, args, vec![], span);
            x[0]
        });
    }

    /// The element of `acc`'s array at the `i32` positions `pos`, of type `elem`.
    fn load_at(&mut self, acc: &Access, pos: &[Value], elem: Scalar, span: Span) -> Value {
        let mut args = vec![acc.array];
        args.extend_from_slice(pos);
        self.emit1(OpKind::Load(acc.kinds.clone()), args, Type::Scalar(elem), span)
    }

    /// A `map` over the elements of the gathering access `acc` (and of the tiles `extra`, of
    /// its shape): `body` gets one `i32` position per array dimension and the elements of
    /// `extra`, emits the element's ops and returns the value the map yields.
    pub(crate) fn element_map(
        &mut self,
        acc: &Access,
        extra: &[Value],
        span: Span,
        body: impl FnOnce(&mut Self, &[Value], &[Value]) -> Value,
    ) -> Value {
        let tiles: Vec<Value> = acc.indices.iter().copied().filter(|v| self.ty(*v).is_tile()).collect();
        let mut operands = tiles.clone();
        operands.extend_from_slice(extra);
        let params: Vec<Value> = operands.iter().map(|v| self.f.new_value(Type::Scalar(self.ty(*v).elem()))).collect();
        self.push_ops();
        let mut pos = Vec::new();
        let mut k = 0;
        for v in &acc.indices {
            if !self.ty(*v).is_tile() {
                pos.push(*v);
                continue;
            }
            let p = params[k];
            k += 1;
            pos.push(if self.ty(p) == Type::Scalar(Scalar::I32) {
                p
            } else {
                self.emit1(OpKind::Cast(Scalar::I32), vec![p], Type::Scalar(Scalar::I32), span)
            });
        }
        let y = body(self, &pos, &params[tiles.len()..]);
        self.emit(OpKind::Yield, vec![y], vec![], span);
        let ops: Vec<Op> = self.pop_ops();
        let Type::Tile { shape, .. } = &acc.ty else { unreachable!("a gather gives a tile") };
        let out = Type::Tile { elem: self.ty(y).elem(), shape: shape.clone() };
        let region = Region { params, ops };
        self.emit_with_regions(OpKind::Map, operands, vec![out], vec![region], span)[0]
    }
}
