//! Tile operations on tile storage: rows (or 64-byte segments of long rows) as vectors,
//! unrolled at constant offsets for tiles up to [`UNROLL_SEGMENTS`] segments (which LLVM then
//! keeps in registers) and in a loop over rows beyond; element-wise arithmetic, fills, outer
//! products and rank-1 updates, transposes, flips, and element access. Reductions and scans
//! are in `reduce.rs`, products in `matmul.rs`, factorizations in `factor.rs`.

use super::views::Strided;
use super::{be, err, Gen, Held, V};
use crate::CodegenError;
use inkwell::types::{BasicTypeEnum, VectorType};
use inkwell::values::{BasicValue, IntValue, PointerValue};
use tilec_midend::{BinOp, Fill, Op, OpKind, Scalar, Type, Value};

/// Most row segments an operation unrolls; larger tiles loop over their rows.
const UNROLL_SEGMENTS: u32 = 256;
/// Most 64-byte vectors of a row that loads, stores and reductions unroll; a longer row
/// (`long_row`) is moved or reduced in a loop over its vectors ([`Gen::segment_loop`],
/// [`Gen::reduce_long`]; unrolled, a 4096-element row's masked load, store and reduction took
/// three seconds to compile).
pub(super) const LOOP_SEGMENTS: u32 = 16;
/// Most vectors of an `f32` `exp` or `tanh` (`crate::expf`, `crate::tanhf`) unrolled.
const EXP_UNROLL_SEGMENTS: u32 = 16;
/// An operand of an element-wise operation.
#[derive(Clone, Copy)]
pub(crate) enum Operand<'ctx> {
    Tile(PointerValue<'ctx>, Scalar),
    Scalar(V<'ctx>),
    /// A tile of `cols` columns read through a view (`Gen::pending_view`).
    View(Strided<'ctx>, Scalar, u32),
}

/// Elements per 64-byte vector of `s`.
pub(crate) fn width(s: Scalar) -> u32 {
    64 / s.bytes().max(1)
}

/// The block size of `Gen::transpose_blocks` for a tile of `s` in storage (`dims`: rows,
/// columns): 32 bytes of elements (an AVX2 register: 8 `f32`, 4 `f64`), when both extents are
/// multiples of it, the tile has more than one block and at most 1024 elements and 64 per
/// extent (larger tiles are transposed in a loop).
pub(crate) fn stored_block(s: Scalar, dims: (u32, u32)) -> Option<u32> {
    let (rows, cols) = dims;
    let b = 32 / s.bytes().max(1);
    let fits = matches!(s, Scalar::F32 | Scalar::F64) && rows.is_multiple_of(b) && cols.is_multiple_of(b);
    let small = rows <= 64 && cols <= 64 && rows * cols <= 1024;
    (fits && small && rows * cols > b * b).then_some(b)
}

/// The segments `(start, len)` of a row of `cols` elements: the whole row up to 64 elements,
/// else 64-byte pieces; a length that is not a power of two is split into powers of two
/// (20 `f32`: 16 and 4), vectors the targets have, which LLVM would otherwise legalize
/// element by element in masked loads and stores (a 64x20 tile's load took 3.6 s to compile).
pub(crate) fn segments(cols: u32, s: Scalar) -> Vec<(u32, u32)> {
    let w = if cols <= 64 { cols } else { width(s) };
    let mut out = Vec::new();
    let mut c = 0;
    while c < cols {
        let left = w.min(cols - c);
        let len = 1 << (31 - left.leading_zeros());
        out.push((c, len));
        c += len;
    }
    out
}

/// Whether a row of `cols` elements of `s` is moved in a loop over its 64-byte vectors
/// ([`Gen::segment_loop`]) rather than unrolled: whole vectors, more than [`LOOP_SEGMENTS`].
pub(crate) fn long_row(cols: u32, s: Scalar) -> bool {
    let w = width(s);
    cols.is_multiple_of(w) && cols / w > LOOP_SEGMENTS
}

/// A `rows x cols` tile of `s` seen as rows of one 64-byte vector, when its elements fill whole
/// vectors (element-wise operations on contiguous storage may loop over these); else unchanged.
fn vector_rows((rows, cols): (u32, u32), s: Scalar) -> (u32, u32) {
    let (n, w) = (rows * cols, width(s));
    if n % w == 0 {
        (n / w, w)
    } else {
        (rows, cols)
    }
}

/// `(rows, cols)` of a tile type, a 1-D tile being one row.
pub(crate) fn shape(t: &Type) -> (u32, u32) {
    match t {
        Type::Tile { shape, .. } if shape.len() == 2 => (shape[0], shape[1]),
        Type::Tile { shape, .. } => (1, shape.first().copied().unwrap_or(1)),
        _ => (1, 1),
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// The storage of tile `v`.
    pub(crate) fn tile(&self, v: Value) -> Result<PointerValue<'ctx>, CodegenError> {
        match self.held.get(&v) {
            Some(Held::Tile(p)) => Ok(*p),
            _ => Err(err(format!("%{} is not a tile here", v.0))),
        }
    }

    /// New storage for the tile result `v`.
    pub(crate) fn new_tile(&mut self, v: Value) -> Result<PointerValue<'ctx>, CodegenError> {
        if let Some(p) = self.in_place.remove(&v) {
            self.held.insert(v, Held::Tile(p));
            return Ok(p);
        }
        let t = self.f.ty(v);
        let p = self.alloca(t.elem(), t.tile_len())?;
        self.held.insert(v, Held::Tile(p));
        Ok(p)
    }

    /// The address of element `i` (`i64`) of a tile or array of `s`.
    pub(crate) fn elem_ptr(
        &self,
        base: PointerValue<'ctx>,
        s: Scalar,
        i: IntValue<'ctx>,
    ) -> Result<PointerValue<'ctx>, CodegenError> {
        // SAFETY (LLVM semantics): callers pass in-bounds indices.
        unsafe { self.b.build_in_bounds_gep(self.mem_ty(s), base, &[i], "") }.map_err(be)
    }

    /// One element (`n` = 0) or a vector of `n` elements of `s` loaded from `p`, with element
    /// alignment (a `bool` is a byte in memory, 0 or 1).
    pub(crate) fn load_at(&self, p: PointerValue<'ctx>, s: Scalar, n: u32) -> Result<V<'ctx>, CodegenError> {
        let ty: BasicTypeEnum<'ctx> = match (s, n) {
            (Scalar::Bool | Scalar::F16 | Scalar::BF16, 0) => self.mem_ty(s),
            (Scalar::Bool | Scalar::F16 | Scalar::BF16, n) => match self.mem_ty(s) {
                BasicTypeEnum::FloatType(t) => t.vec_type(n).into(),
                t => t.into_int_type().vec_type(n).into(),
            },
            (_, 0) => self.ty(s),
            (_, n) => self.vty(s, n).into(),
        };
        let x = self.b.build_load(ty, p, "").map_err(be)?;
        x.as_instruction_value().expect("load").set_alignment(s.bytes()).map_err(be)?;
        if s == Scalar::Bool {
            return self.cmp(tilec_midend::CmpOp::Ne, Scalar::I32, x, ty.const_zero());
        }
        if s.is_half() {
            return self.widen_half(s, x);
        }
        Ok(x)
    }

    /// Stores `x` (an element or a vector of `s`) at `p`, with element alignment.
    pub(crate) fn store_at(&self, p: PointerValue<'ctx>, s: Scalar, x: V<'ctx>) -> Result<(), CodegenError> {
        let x = self.to_mem(s, x)?;
        self.b.build_store(p, x).map_err(be)?.set_alignment(s.bytes()).map_err(be)?;
        Ok(())
    }

    /// `x` as it is stored: a `bool` (or a vector of them) widened to bytes, an `f32` narrowed
    /// to a storage type.
    pub(crate) fn to_mem(&self, s: Scalar, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        if s.is_half() {
            return self.narrow_half(s, x);
        }
        if s != Scalar::Bool {
            return Ok(x);
        }
        let ty: BasicTypeEnum<'ctx> = match x {
            V::VectorValue(v) => self.cx.i8_type().vec_type(v.get_type().get_size()).into(),
            _ => self.cx.i8_type().into(),
        };
        self.b.build_cast(inkwell::values::InstructionOpcode::ZExt, x, ty, "").map_err(be)
    }

    pub(crate) fn load_elem(
        &self,
        base: PointerValue<'ctx>,
        s: Scalar,
        i: IntValue<'ctx>,
    ) -> Result<V<'ctx>, CodegenError> {
        self.load_at(self.elem_ptr(base, s, i)?, s, 0)
    }

    pub(crate) fn store_elem(
        &self,
        base: PointerValue<'ctx>,
        s: Scalar,
        i: IntValue<'ctx>,
        x: V<'ctx>,
    ) -> Result<(), CodegenError> {
        self.store_at(self.elem_ptr(base, s, i)?, s, x)
    }

    /// `n` elements from element `off` of `base`, as a vector.
    pub(crate) fn load_vec(
        &self,
        base: PointerValue<'ctx>,
        s: Scalar,
        off: IntValue<'ctx>,
        n: u32,
    ) -> Result<V<'ctx>, CodegenError> {
        self.load_at(self.elem_ptr(base, s, off)?, s, n)
    }

    pub(crate) fn store_vec(
        &self,
        base: PointerValue<'ctx>,
        s: Scalar,
        off: IntValue<'ctx>,
        x: V<'ctx>,
    ) -> Result<(), CodegenError> {
        self.store_at(self.elem_ptr(base, s, off)?, s, x)
    }

    /// Runs `body` for rows `from..rows` of a tile with `cols` columns, with the element offset
    /// of the row's start: unrolled (constant offsets) for small tiles, else in a loop.
    pub(crate) fn each_row(
        &mut self,
        from: u32,
        rows: u32,
        cols: u32,
        s: Scalar,
        body: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        self.each_row_unrolled(from, rows, cols, s, UNROLL_SEGMENTS, body)
    }

    /// [`Self::each_row`], unrolled up to `unroll` row segments.
    pub(crate) fn each_row_unrolled(
        &mut self,
        from: u32,
        rows: u32,
        cols: u32,
        s: Scalar,
        unroll: u32,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let segs = segments(cols, s).len() as u32;
        if rows.saturating_sub(from) * segs <= unroll {
            for r in from..rows {
                let off = self.i64c((r * cols) as i64);
                body(self, off)?;
            }
            return Ok(());
        }
        let (lo, hi) = (self.i64c(from as i64), self.i64c(rows as i64));
        self.dyn_loop(lo, hi, |g, r| {
            let off = g.b.build_int_mul(r, g.i64c(cols as i64), "").map_err(be)?;
            body(g, off)
        })
    }

    /// Runs `body` with the element offset (in the row) of each 64-byte vector of a
    /// [`long_row`] of `cols` elements of `s`, in a loop.
    pub(crate) fn segment_loop(
        &mut self,
        cols: u32,
        s: Scalar,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let w = width(s);
        self.dyn_loop(self.i64c(0), self.i64c((cols / w) as i64), |g, i| {
            let c0 = g.b.build_int_mul(i, g.i64c(w as i64), "").map_err(be)?;
            body(g, c0)
        })
    }

    /// `off + c`.
    pub(crate) fn add_dyn(&self, off: IntValue<'ctx>, c: IntValue<'ctx>) -> Result<IntValue<'ctx>, CodegenError> {
        self.b.build_int_add(off, c, "").map_err(be)
    }

    pub(crate) fn add_off(&self, off: IntValue<'ctx>, c: u32) -> Result<IntValue<'ctx>, CodegenError> {
        if c == 0 {
            return Ok(off);
        }
        self.b.build_int_add(off, self.i64c(c as i64), "").map_err(be)
    }

    /// `dst = f(operands)` element-wise over the tile `dst` of `rows x cols` elements of `s`.
    pub(crate) fn elementwise<F>(
        &mut self,
        dst: PointerValue<'ctx>,
        shape: (u32, u32),
        s: Scalar,
        ops: &[Operand<'ctx>],
        f: F,
    ) -> Result<(), CodegenError>
    where
        F: Fn(&Self, &[V<'ctx>]) -> Result<V<'ctx>, CodegenError>,
    {
        self.elementwise_unrolled(dst, shape, s, ops, UNROLL_SEGMENTS, f)
    }

    /// [`Self::elementwise`], unrolled up to `unroll` row segments (a loop over the rows
    /// beyond).
    pub(crate) fn elementwise_unrolled<F>(
        &mut self,
        dst: PointerValue<'ctx>,
        (rows, cols): (u32, u32),
        s: Scalar,
        ops: &[Operand<'ctx>],
        unroll: u32,
        f: F,
    ) -> Result<(), CodegenError>
    where
        F: Fn(&Self, &[V<'ctx>]) -> Result<V<'ctx>, CodegenError>,
    {
        // A long vector, or a tile of long rows, as rows of one 64-byte vector (the storage is
        // contiguous and every operand tile has `dst`'s shape), so that beyond `unroll`
        // vectors it is a loop.
        // Rows shorter than a vector (a tile of small matrices' `tile<T, B, 1>` entries) as
        // one row, or as rows of one vector, likewise.
        let (n, w) = (rows * cols, width(s));
        let (rows, cols) = if (rows == 1 && cols > 64) || long_row(cols, s) {
            vector_rows((rows, cols), s)
        } else if rows > 1 && cols < w && n <= 64 {
            (1, n)
        } else if rows > 1 && cols < w {
            vector_rows((1, n), s)
        } else {
            (rows, cols)
        };
        // A view's rows are apart in memory: no vector may span two of them.
        let (rows, cols) = match ops.iter().find_map(|o| match o {
            Operand::View(_, _, vc) if n > *vc && !vc.is_multiple_of(cols) => Some(*vc),
            _ => None,
        }) {
            Some(vc) => (n / vc, vc),
            None => (rows, cols),
        };
        let segs = segments(cols, s);
        self.each_row_unrolled(0, rows, cols, s, unroll, |g, row| {
            for &(c0, len) in &segs {
                let off = g.add_off(row, c0)?;
                let args = ops
                    .iter()
                    .map(|o| match o {
                        Operand::Tile(p, ts) => g.load_vec(*p, *ts, off, len),
                        Operand::Scalar(x) => g.splat(*x, len),
                        Operand::View(v, ts, vc) => {
                            // Tile element `off` is [off / vc, off % vc].
                            let vcols = g.i64c(*vc as i64);
                            let r = g.b.build_int_unsigned_div(off, vcols, "").map_err(be)?;
                            let first = g.b.build_int_mul(r, vcols, "").map_err(be)?;
                            let c = g.b.build_int_sub(off, first, "").map_err(be)?;
                            g.load_vec(v.ptr, *ts, v.at(g, r, c)?, len)
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let y = f(g, &args)?;
                g.store_vec(dst, s, off, y)?;
            }
            Ok(())
        })
    }

    /// An element-wise op's operand `v`: a tile, read in place where it is a pending load
    /// (`Gen::pending_view`), or a scalar.
    fn operand(&mut self, v: Value) -> Result<Operand<'ctx>, CodegenError> {
        if let Some(view) = self.pending_view(v)? {
            Ok(Operand::View(view, self.elem(v), shape(self.f.ty(v)).1))
        } else if self.f.ty(v).is_tile() {
            Ok(Operand::Tile(self.tile(v)?, self.elem(v)))
        } else {
            Ok(Operand::Scalar(self.val(v)?))
        }
    }

    /// Lowers an operation with a tile result.
    pub(crate) fn tile_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let rt = self.f.ty(op.results[0]).clone();
        let s = rt.elem();
        let sh = shape(&rt);
        if self.unformed.contains(&op.results[0]) {
            // A `transpose` or `neg` that the product using it reads in place (`matmul_into`).
            return Ok(());
        }
        match &op.kind {
            OpKind::Fill(Fill::Iota(axis)) => {
                let dst = self.new_tile(op.results[0])?;
                let one_d = matches!(&rt, Type::Tile { shape, .. } if shape.len() == 1);
                let cols = self.i64c(sh.1 as i64);
                let (lo, hi) = (self.i64c(0), self.i64c(rt.tile_len() as i64));
                let axis = *axis;
                self.dyn_loop(lo, hi, |g, i| {
                    let idx = match (one_d, axis) {
                        (true, _) => i,
                        (false, 0) => g.b.build_int_unsigned_div(i, cols, "row").map_err(be)?,
                        _ => g.b.build_int_unsigned_rem(i, cols, "col").map_err(be)?,
                    };
                    let x = g.cast(Scalar::I64, s, idx.into())?;
                    g.store_elem(dst, s, i, x)
                })?;
            }
            OpKind::Fill(fill) => {
                let dst = self.new_tile(op.results[0])?;
                let x = match fill {
                    Fill::Full => self.val(op.args[0])?,
                    _ => self.constant(s, 0.0),
                };
                self.elementwise(dst, sh, s, &[Operand::Scalar(x)], |_, a| Ok(a[0]))?;
                if *fill == Fill::Eye {
                    let one = self.constant(s, 1.0);
                    for i in 0..sh.0.min(sh.1) {
                        self.store_elem(dst, s, self.i64c((i * sh.1 + i) as i64), one)?;
                    }
                }
            }
            OpKind::Bin(k) => {
                let ops = [self.operand(op.args[0])?, self.operand(op.args[1])?];
                let dst = self.new_tile(op.results[0])?;
                let k = *k;
                self.elementwise(dst, sh, s, &ops, |g, a| g.bin(k, s, a[0], a[1]))?;
            }
            OpKind::Un(k) => {
                let ops = [self.operand(op.args[0])?];
                let dst = self.new_tile(op.results[0])?;
                let k = *k;
                if crate::expf::is_own(k) && s == Scalar::F32 {
                    // The inline `exp` is about 30 instructions a vector: the tile as rows of
                    // one 64-byte vector, in a loop beyond 16 of them (a 4096-element tile's
                    // 256 unrolled `exp`s took 4 s to compile).
                    let flat = vector_rows(sh, s);
                    self.elementwise_unrolled(dst, flat, s, &ops, EXP_UNROLL_SEGMENTS, |g, a| g.unary(k, s, a[0]))?;
                } else {
                    self.elementwise(dst, sh, s, &ops, |g, a| g.unary(k, s, a[0]))?;
                }
            }
            OpKind::Outer => self.outer(op, s, None)?,
            OpKind::Rank1(alpha) => self.outer(op, s, Some(*alpha))?,
            OpKind::Matmul => self.matmul(op, s, false)?,
            OpKind::MatmulAcc => self.matmul(op, s, true)?,
            OpKind::Transpose => self.transpose(op, s)?,
            OpKind::Reduce(k, Some(axis)) => self.reduce_axis(op, *k, *axis, s)?,
            OpKind::Scan(k, axis) => self.scan(op, *k, *axis, s)?,
            OpKind::Flip(axis) => self.flip(op, *axis, s)?,
            OpKind::Reshape => {
                // Row-major storage: the same bytes.
                let src = self.tile(op.args[0])?;
                let dst = self.new_tile(op.results[0])?;
                let bytes = self.i64c((self.f.ty(op.args[0]).tile_len() * s.bytes()) as i64);
                self.b.build_memcpy(dst, s.bytes(), src, s.bytes(), bytes).map_err(be)?;
            }
            OpKind::Insert => self.insert(op, s)?,
            OpKind::ExtractLine(d) | OpKind::InsertLine(d) => self.line_op(op, *d, s)?,
            OpKind::ExtractBlock(_) | OpKind::InsertBlock(_) | OpKind::Broadcast => self.block_op(op, s)?,
            OpKind::Cholesky => self.cholesky(op, s)?,
            OpKind::Lu => self.lu(op, s)?,
            OpKind::Trsm(kind) => self.trsm(op, *kind, s)?,
            other => return Err(err(format!("unsupported tile op {other:?}"))),
        }
        Ok(())
    }

    /// `outer(u, v)` (`alpha: None`), or the rank-1 update `t + alpha * u v^T`: per row,
    /// `u[r] * v`, or `fma(alpha * u[r], v, t[r])` (`alpha` = 1 and -1 exactly).
    fn outer(&mut self, op: &Op, s: Scalar, alpha: Option<f64>) -> Result<(), CodegenError> {
        let (rows, cols) = shape(self.f.ty(op.results[0]));
        let base = usize::from(alpha.is_some());
        let (u, v) = (self.tile(op.args[base])?, self.tile(op.args[base + 1])?);
        let t = if alpha.is_some() { Some(self.tile(op.args[0])?) } else { None };
        let dst = self.new_tile(op.results[0])?;
        let a = alpha.map(|a| self.constant(s, a));
        let scaled = move |g: &Self, ur: V<'ctx>| -> Result<V<'ctx>, CodegenError> {
            match alpha {
                None | Some(1.0) => Ok(ur),
                Some(-1.0) => g.unary(tilec_midend::UnOp::Neg, s, ur),
                Some(_) => g.bin(BinOp::Mul, s, a.expect("alpha"), ur),
            }
        };
        if long_row(cols, s) {
            // Long rows: `v`'s vectors loaded in a loop over each row's vectors.
            let w = width(s);
            return self.each_row(0, rows, cols, s, |g, row| {
                let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
                let us = g.splat(scaled(g, g.load_elem(u, s, r)?)?, w)?;
                g.segment_loop(cols, s, |g, c0| {
                    let off = g.add_dyn(row, c0)?;
                    let vc = g.load_vec(v, s, c0, w)?;
                    let y = match t {
                        None => g.bin(BinOp::Mul, s, us, vc)?,
                        Some(t) => g.fma3(s, us, vc, g.load_vec(t, s, off, w)?)?,
                    };
                    g.store_vec(dst, s, off, y)
                })
            });
        }
        let segs = segments(cols, s);
        let vv: Vec<V<'ctx>> =
            segs.iter().map(|&(c0, len)| self.load_vec(v, s, self.i64c(c0 as i64), len)).collect::<Result<_, _>>()?;
        self.each_row(0, rows, cols, s, |g, row| {
            let r = g.b.build_int_unsigned_div(row, g.i64c(cols.max(1) as i64), "").map_err(be)?;
            let ur = scaled(g, g.load_elem(u, s, r)?)?;
            for (&(c0, len), vc) in segs.iter().zip(&vv) {
                let off = g.add_off(row, c0)?;
                let us = g.splat(ur, len)?;
                let y = match t {
                    None => g.bin(BinOp::Mul, s, us, *vc)?,
                    Some(t) => {
                        let tr = g.load_vec(t, s, off, len)?;
                        g.fma3(s, us, *vc, tr)?
                    }
                };
                g.store_vec(dst, s, off, y)?;
            }
            Ok(())
        })
    }

    /// The rows of a small tile as vectors (`cols` at most 64).
    pub(crate) fn rows_of(
        &self,
        t: PointerValue<'ctx>,
        s: Scalar,
        rows: u32,
        cols: u32,
    ) -> Result<Vec<V<'ctx>>, CodegenError> {
        (0..rows).map(|r| self.load_vec(t, s, self.i64c((r * cols) as i64), cols)).collect()
    }

    pub(crate) fn put_rows(
        &self,
        t: PointerValue<'ctx>,
        s: Scalar,
        cols: u32,
        rows: &[V<'ctx>],
    ) -> Result<(), CodegenError> {
        for (r, x) in rows.iter().enumerate() {
            self.store_vec(t, s, self.i64c(r as i64 * cols as i64), *x)?;
        }
        Ok(())
    }

    /// Element `j` of a row vector.
    pub(crate) fn lane(&self, row: V<'ctx>, j: u32) -> Result<V<'ctx>, CodegenError> {
        self.b.build_extract_element(row.into_vector_value(), self.i32c(j as i64), "").map_err(be)
    }

    pub(crate) fn with_lane(&self, row: V<'ctx>, j: u32, x: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        Ok(self.b.build_insert_element(row.into_vector_value(), x, self.i32c(j as i64), "").map_err(be)?.into())
    }

    /// The transpose of small row vectors: `cols` rows of `rows.len()` elements. Square tiles
    /// with a power-of-two extent use a shuffle network (`n log2 n` two-source shuffles: stage
    /// `k` swaps bit `k` of the row index with bit `k` of the column index); tall and wide
    /// tiles with power-of-two extents (a 32 x 16 right-hand side in a right solve) use it on
    /// their square blocks, then concatenate or split rows; others move element by element.
    pub(crate) fn transpose_rows(&self, rows: &[V<'ctx>], s: Scalar, cols: u32) -> Result<Vec<V<'ctx>>, CodegenError> {
        let n = rows.len() as u32;
        if n != cols && n.is_power_of_two() && cols.is_power_of_two() && n.min(cols) > 1 {
            // A tall or wide power-of-two tile: its square blocks transposed as below.
            let b = n.min(cols);
            let i32t = self.cx.i32_type();
            let shuffle = |x: V<'ctx>, y: V<'ctx>, idx: Vec<u32>| -> Result<V<'ctx>, CodegenError> {
                let idx: Vec<_> = idx.into_iter().map(|i| i32t.const_int(i as u64, false)).collect();
                let (x, y) = (x.into_vector_value(), y.into_vector_value());
                Ok(self.b.build_shuffle_vector(x, y, VectorType::const_vector(&idx), "").map_err(be)?.into())
            };
            if n > cols {
                // Rows in groups of `b`: output row i is row i of each group's transpose, in turn.
                let blocks: Vec<Vec<V<'ctx>>> =
                    rows.chunks(b as usize).map(|g| self.transpose_rows(g, s, cols)).collect::<Result<_, _>>()?;
                return (0..cols as usize)
                    .map(|i| {
                        // Concatenated pairwise (a shuffle takes two vectors of one type).
                        let (mut parts, mut w) = (blocks.iter().map(|blk| blk[i]).collect::<Vec<_>>(), b);
                        while parts.len() > 1 {
                            parts = parts
                                .chunks(2)
                                .map(|p| shuffle(p[0], p[1], (0..2 * w).collect()))
                                .collect::<Result<_, _>>()?;
                            w *= 2;
                        }
                        Ok(parts[0])
                    })
                    .collect();
            }
            // Columns in chunks of `b`: each chunk's transpose gives `b` output rows.
            let mut out = Vec::new();
            for h in 0..cols / b {
                let chunk: Vec<V<'ctx>> =
                    rows.iter().map(|r| shuffle(*r, *r, (h * b..h * b + b).collect())).collect::<Result<_, _>>()?;
                out.extend(self.transpose_rows(&chunk, s, b)?);
            }
            return Ok(out);
        }
        if n == cols && n.is_power_of_two() && n > 1 {
            let i32t = self.cx.i32_type();
            let mut m: Vec<V<'ctx>> = rows.to_vec();
            let mut h = 1;
            while h < n {
                let lo: Vec<_> =
                    (0..n).map(|c| i32t.const_int(if c & h == 0 { c } else { n + c - h } as u64, false)).collect();
                let hi: Vec<_> =
                    (0..n).map(|c| i32t.const_int(if c & h == 0 { c + h } else { n + c } as u64, false)).collect();
                let (lo, hi) = (VectorType::const_vector(&lo), VectorType::const_vector(&hi));
                for r in (0..n).filter(|r| r & h == 0) {
                    let (a, b) = (m[r as usize].into_vector_value(), m[(r + h) as usize].into_vector_value());
                    m[r as usize] = self.b.build_shuffle_vector(a, b, lo, "").map_err(be)?.into();
                    m[(r + h) as usize] = self.b.build_shuffle_vector(a, b, hi, "").map_err(be)?.into();
                }
                h *= 2;
            }
            return Ok(m);
        }
        (0..cols)
            .map(|j| {
                let mut out: V<'ctx> = self.vty(s, n).get_undef().into();
                for (i, r) in rows.iter().enumerate() {
                    let x = self.lane(*r, j)?;
                    out = self.with_lane(out, i as u32, x)?;
                }
                Ok(out)
            })
            .collect()
    }

    fn transpose(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        let dims = shape(self.f.ty(op.args[0]));
        let dst = self.new_tile(op.results[0])?;
        let Some(p) = self.pending_load(op.args[0])? else {
            let src = self.tile(op.args[0])?;
            return self.transpose_stored(src, dst, dims, s);
        };
        // A load for this transpose alone (`Gen::direct`): by blocks from the array where the
        // tile lies inside it, else from the load's copy; the next program's tile prefetched
        // as a load's (`load_tile`; without it trsm 512 x 92 f32 was 8% slower).
        self.prefetch_pending(&p)?;
        match stored_block(s, dims) {
            Some(b) => self.branches(
                p.inside,
                |g| g.transpose_blocks(p.ptr, p.base, p.row_stride, dst, dims, s, b),
                |g| {
                    let copy = g.copy_pending(&p)?;
                    g.transpose_stored(copy, dst, dims, s)
                },
            ),
            None => {
                let copy = self.copy_pending(&p)?;
                self.transpose_stored(copy, dst, dims, s)
            }
        }
    }

    /// `dst = src^T` for a `rows x cols` tile in storage (`dims`): by blocks
    /// (`transpose_blocks`, `stored_block`), else up to 1024 elements as row vectors
    /// (`transpose_rows`), else element by element in a loop.
    pub(crate) fn transpose_stored(
        &mut self,
        src: PointerValue<'ctx>,
        dst: PointerValue<'ctx>,
        dims: (u32, u32),
        s: Scalar,
    ) -> Result<(), CodegenError> {
        let (rows, cols) = dims;
        if let Some(b) = stored_block(s, dims) {
            return self.transpose_blocks(src, self.i64c(0), self.i64c(cols as i64), dst, dims, s, b);
        }
        if rows <= 64 && cols <= 64 && rows * cols <= 1024 {
            let r = self.rows_of(src, s, rows, cols)?;
            let t = self.transpose_rows(&r, s, cols)?;
            return self.put_rows(dst, s, rows, &t);
        }
        self.transpose_mem(src, dst, rows, cols, s)
    }

    /// The rows of `src^T` for a `rows x cols` tile in storage (`cols` vectors of `rows`
    /// elements): through memory by blocks where `stored_block` allows (a whole 16 x 16 tile
    /// transposed as vectors in registers spills), else by `transpose_rows`.
    pub(crate) fn transposed_rows_of(
        &mut self,
        src: PointerValue<'ctx>,
        s: Scalar,
        rows: u32,
        cols: u32,
    ) -> Result<Vec<V<'ctx>>, CodegenError> {
        if stored_block(s, (rows, cols)).is_some() {
            let tmp = self.alloca(s, rows * cols)?;
            self.transpose_stored(src, tmp, (rows, cols), s)?;
            return self.rows_of(tmp, s, cols, rows);
        }
        let r = self.rows_of(src, s, rows, cols)?;
        self.transpose_rows(&r, s, cols)
    }

    /// Stores the transpose of the row vectors `rows` (each of `cols` elements) into `dst`, a
    /// `cols x rows.len()` tile: the counterpart of `transposed_rows_of`.
    pub(crate) fn put_rows_transposed(
        &mut self,
        dst: PointerValue<'ctx>,
        s: Scalar,
        cols: u32,
        rows: &[V<'ctx>],
    ) -> Result<(), CodegenError> {
        let n = rows.len() as u32;
        if stored_block(s, (n, cols)).is_some() {
            let tmp = self.alloca(s, n * cols)?;
            self.put_rows(tmp, s, cols, rows)?;
            return self.transpose_stored(tmp, dst, (n, cols), s);
        }
        let t = self.transpose_rows(rows, s, cols)?;
        self.put_rows(dst, s, n, &t)
    }

    /// `dst = src^T` for a `rows x cols` tile (`dims`) whose element `[i, j]` is at `src[base +
    /// i * stride + j]` (tile storage, or an array), by `b x b` blocks (`stored_block`):
    /// each block's rows loaded as vectors, transposed by the shuffle network of
    /// `transpose_rows` and stored as the rows of block `[j, i]` of `dst`. Only `b` vectors
    /// live at a time, where a whole 16 x 16 f32 tile in vectors spills (one pinned Zen 3
    /// thread, 512 x 92 f32, with the right solves' transposes by blocks too:
    /// trsm_right_lower_t_batched 11.25 -> 10.43 ms, potrf_batched 5.83 -> 5.38 ms).
    #[allow(clippy::too_many_arguments)]
    fn transpose_blocks(
        &self,
        src: PointerValue<'ctx>,
        base: IntValue<'ctx>,
        stride: IntValue<'ctx>,
        dst: PointerValue<'ctx>,
        dims: (u32, u32),
        s: Scalar,
        b: u32,
    ) -> Result<(), CodegenError> {
        let (rows, cols) = dims;
        for bi in 0..rows / b {
            for bj in 0..cols / b {
                let block: Vec<V<'ctx>> = (0..b)
                    .map(|r| {
                        let row = self.b.build_int_mul(self.i64c((bi * b + r) as i64), stride, "").map_err(be)?;
                        let off = self.b.build_int_add(base, row, "").map_err(be)?;
                        self.load_vec(src, s, self.add_off(off, bj * b)?, b)
                    })
                    .collect::<Result<_, _>>()?;
                for (r, x) in self.transpose_rows(&block, s, b)?.into_iter().enumerate() {
                    let off = (bj * b + r as u32) * rows + bi * b;
                    self.store_vec(dst, s, self.i64c(off as i64), x)?;
                }
            }
        }
        Ok(())
    }

    /// `dst = src^T` for a `rows x cols` tile in memory, element by element in a loop.
    pub(crate) fn transpose_mem(
        &mut self,
        src: PointerValue<'ctx>,
        dst: PointerValue<'ctx>,
        rows: u32,
        cols: u32,
        s: Scalar,
    ) -> Result<(), CodegenError> {
        let (lo, hi) = (self.i64c(0), self.i64c((rows * cols) as i64));
        self.dyn_loop(lo, hi, |g, e| {
            let (c, r) = (g.i64c(cols as i64), g.i64c(rows as i64));
            let i = g.b.build_int_unsigned_div(e, c, "").map_err(be)?;
            let j = g.b.build_int_unsigned_rem(e, c, "").map_err(be)?;
            let x = g.load_elem(src, s, e)?;
            let d = g.b.build_int_mul(j, r, "").map_err(be)?;
            let d = g.b.build_int_add(d, i, "").map_err(be)?;
            g.store_elem(dst, s, d, x)
        })
    }

    /// `Flip(axis)`: rows copied to the mirrored row with vectors (axis 0 of a matrix), or
    /// each row's elements written in reverse order (axis 1, a 1-D tile).
    fn flip(&mut self, op: &Op, axis: u8, s: Scalar) -> Result<(), CodegenError> {
        let ty = self.f.ty(op.args[0]).clone();
        let (rows, cols) = shape(&ty);
        let src = self.tile(op.args[0])?;
        let dst = self.new_tile(op.results[0])?;
        let one_d = matches!(&ty, Type::Tile { shape, .. } if shape.len() == 1);
        let last = self.i64c(((rows - 1) * cols) as i64);
        if axis == 0 && !one_d {
            let segs = segments(cols, s);
            return self.each_row(0, rows, cols, s, |g, row| {
                let to = g.b.build_int_sub(last, row, "").map_err(be)?;
                for &(c0, len) in &segs {
                    let v = g.load_vec(src, s, g.add_off(row, c0)?, len)?;
                    g.store_vec(dst, s, g.add_off(to, c0)?, v)?;
                }
                Ok(())
            });
        }
        self.each_row(0, rows, cols, s, |g, row| {
            let end = g.add_off(row, cols - 1)?;
            let (lo, hi) = (g.i64c(0), g.i64c(cols as i64));
            g.dyn_loop(lo, hi, |g, j| {
                let x = g.load_elem(src, s, g.b.build_int_add(row, j, "").map_err(be)?)?;
                let back = g.b.build_int_sub(end, j, "").map_err(be)?;
                g.store_elem(dst, s, back, x)
            })
        })
    }

    /// The flat index (`i64`) of `t[i, j]` (0 when out of range) and whether it is in range.
    fn element_index(&self, t: Value, idx: &[Value]) -> Result<(IntValue<'ctx>, IntValue<'ctx>), CodegenError> {
        let dims = match self.f.ty(t) {
            Type::Tile { shape, .. } => shape.clone(),
            _ => vec![1],
        };
        if idx.iter().zip(&dims).all(|(v, d)| self.consts.get(v).is_some_and(|c| (0..*d as i64).contains(c))) {
            let flat = idx.iter().zip(&dims).fold(0i64, |f, (v, d)| f * *d as i64 + self.consts[v]);
            return Ok((self.i64c(flat), self.cx.bool_type().const_int(1, false)));
        }
        let mut flat = self.i64c(0);
        let mut ok = self.cx.bool_type().const_int(1, false);
        for (v, d) in idx.iter().zip(&dims) {
            let i = self.wide(self.val(*v)?)?;
            let inb = self.b.build_int_compare(inkwell::IntPredicate::ULT, i, self.i64c(*d as i64), "").map_err(be)?;
            ok = self.b.build_and(ok, inb, "").map_err(be)?;
            flat = self.b.build_int_mul(flat, self.i64c(*d as i64), "").map_err(be)?;
            flat = self.b.build_int_add(flat, i, "").map_err(be)?;
        }
        let flat = self.b.build_select(ok, flat, self.i64c(0), "").map_err(be)?.into_int_value();
        Ok((flat, ok))
    }

    /// `t[i, j]`: zero when out of range.
    pub(crate) fn extract(&mut self, op: &Op) -> Result<V<'ctx>, CodegenError> {
        let s = self.elem(op.args[0]);
        let base = self.tile(op.args[0])?;
        let (idx, ok) = self.element_index(op.args[0], &op.args[1..])?;
        let v = self.load_elem(base, s, idx)?;
        let z = self.constant(s, 0.0);
        self.b.build_select(ok, v, z, "").map_err(be)
    }

    /// `t` with `t[i, j] = x` where in range.
    fn insert(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        let t = self.f.ty(op.args[0]);
        let bytes = t.tile_len() * t.elem().bytes();
        let src = self.tile(op.args[0])?;
        let dst = self.new_tile(op.results[0])?;
        if dst != src {
            self.copy(dst, src, bytes)?;
        }
        let (idx, ok) = self.element_index(op.args[0], &op.args[1..op.args.len() - 1])?;
        let x = self.val(*op.args.last().expect("value"))?;
        if ok.get_zero_extended_constant() == Some(1) {
            return self.store_elem(dst, s, idx, x);
        }
        self.guarded(ok, |g| g.store_elem(dst, s, idx, x))
    }
}
