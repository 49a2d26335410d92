//! Global and shared arrays in the LLVM CPU backend: element offsets from indices and
//! row-major strides, and the bounds rules of the Tile IR (loads out of bounds read zero or
//! keep the tile's value; stores and atomic adds out of bounds do nothing). A tile access
//! wholly inside the array takes a fast path (whole-row vector loads and stores where the
//! tile's rows are contiguous in the array); otherwise rows use masked vector loads and
//! stores, and strided rows element by element with a safe address.

use super::tile::shape;
use super::{be, err, Gen, Held, V};
use crate::CodegenError;
use inkwell::types::VectorType;
use inkwell::values::{BasicValue, IntValue, PointerValue};
use inkwell::IntPredicate;
use tilec_midend::{Index, Op, OpKind, Scalar, Type, Value};

/// The longest vector segment (lanes) a column mask covers, and a third of the mask table.
const MASK_TABLE_SPAN: u32 = 64;

/// The columns of a row segment inside the array (`Gen::col_range_mask`).
#[derive(Clone, Copy)]
struct ColMask<'ctx> {
    /// All-ones lanes for the columns inside, zero lanes for the others.
    lanes: V<'ctx>,
    /// Whether the columns inside start at the segment's first lane (an `i1`).
    from_0: IntValue<'ctx>,
    /// Whether every lane is inside (an `i1`).
    whole: IntValue<'ctx>,
    /// The end of the columns inside, in lanes (an `i64` in `0..=len`).
    hi: IntValue<'ctx>,
}

/// Most cache lines of each row of a tile that `Gen::prefetch_next` prefetches (1 KiB: every
/// row of the stdlib's tiles, up to 92 `f64`).
const PREFETCH_ROW_LINES: u32 = 16;

/// Most segments of a row whose partial stores take plain stores for a whole segment or a
/// prefix of it (a branch per segment and per power of two); longer rows take masked stores.
const PREFIX_STORE_SEGMENTS: usize = 16;

/// One slice dimension of an access.
#[derive(Clone, Copy)]
pub(super) struct SliceDim<'ctx> {
    extent: u32,
    /// Whether the slice is proven to lie inside the array (`tilec_midend::bounds`).
    proven: bool,
    pub(super) start: IntValue<'ctx>,
    pub(super) dim: IntValue<'ctx>,
    pub(super) stride: IntValue<'ctx>,
}

/// A checked array access: the element offset of the first element, whether the single
/// (`At`) indices are in bounds, and the slice dimensions (rows, then columns).
pub(super) struct Access<'ctx> {
    pub(super) ptr: PointerValue<'ctx>,
    pub(super) elem: Scalar,
    pub(super) base: IntValue<'ctx>,
    at_ok: IntValue<'ctx>,
    slices: Vec<SliceDim<'ctx>>,
    /// Whether the last slice is the array's innermost dimension (contiguous rows).
    contiguous: bool,
    /// The element offset of the same access in the next program (`program_id(0) + 1`), when
    /// a single index is `program_id(0)` (`Gen::batch_ids`).
    next: Option<IntValue<'ctx>>,
}

/// The index kinds that move a `tile<T, R, 1>` column (`R > 1`) whose last slice is a range
/// of one, such as a tile of small matrices' entries, as a one-row access of `R` elements:
/// that range as a single index (the same element, bounds and storage). Its `R` rows of one
/// element would otherwise be moved one by one, each with its own bounds check.
fn column_kinds(kinds: &[Index], ty: &Type) -> Option<Vec<Index>> {
    let Type::Tile { shape, .. } = ty else { return None };
    if shape.len() != 2 || shape[1] != 1 || shape[0] == 1 {
        return None;
    }
    let slices: Vec<usize> = (0..kinds.len()).filter(|&d| matches!(kinds[d], Index::Slice(_))).collect();
    let [_, last] = slices.as_slice() else { return None };
    let mut k = kinds.to_vec();
    k[*last] = Index::At;
    Some(k)
}

/// `(rows, cols)` in which the tile of type `ty` moves through the access `a`: its shape, or
/// one row for a one-slice access ([`column_kinds`]).
fn access_shape(a: &Access<'_>, ty: &Type) -> (u32, u32) {
    if a.slices.len() == 1 {
        (1, ty.tile_len())
    } else {
        shape(ty)
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// The data pointer and extents of an array.
    pub(crate) fn array(&self, v: Value) -> Result<(PointerValue<'ctx>, Vec<IntValue<'ctx>>), CodegenError> {
        match self.held.get(&v) {
            Some(Held::Array { ptr, dims }) => Ok((*ptr, dims.clone())),
            _ => Err(err(format!("%{} is not an array", v.0))),
        }
    }

    pub(super) fn access(&self, array: Value, kinds: &[Index], idx: &[Value]) -> Result<Access<'ctx>, CodegenError> {
        let (ptr, dims) = self.array(array)?;
        let n = dims.len();
        let b = &self.b;
        let mut strides = vec![self.i64c(1); n];
        for d in (0..n.saturating_sub(1)).rev() {
            strides[d] = b.build_int_mul(strides[d + 1], dims[d + 1], "").map_err(be)?;
        }
        let mut base = self.i64c(0);
        let mut at_ok = self.cx.bool_type().const_int(1, false);
        let mut slices = Vec::new();
        let mut next_step = None;
        for d in 0..n {
            let i = self.wide(self.val(idx[d])?)?;
            let t = b.build_int_mul(i, strides[d], "").map_err(be)?;
            base = b.build_int_add(base, t, "").map_err(be)?;
            match kinds[d] {
                Index::At => {
                    if next_step.is_none() && self.batch_ids.contains(&idx[d]) {
                        next_step = Some(strides[d]);
                    }
                    if !self.bounds.inside(array, d, idx[d], None) {
                        let ok = b.build_int_compare(IntPredicate::ULT, i, dims[d], "").map_err(be)?;
                        at_ok = b.build_and(at_ok, ok, "").map_err(be)?;
                    }
                }
                Index::Slice(k) => {
                    let proven = self.bounds.inside(array, d, idx[d], Some(k));
                    slices.push(SliceDim { extent: k, proven, start: i, dim: dims[d], stride: strides[d] })
                }
            }
        }
        let contiguous = matches!(kinds.last(), Some(Index::Slice(_)));
        let next = match next_step {
            Some(st) => Some(b.build_int_add(base, st, "").map_err(be)?),
            None => None,
        };
        Ok(Access { ptr, elem: self.elem(array), base, at_ok, slices, contiguous, next })
    }

    /// Prefetches the rows of the tile that access `a` reads in the next program (which the
    /// CPU launcher runs next on this thread): one program's loads then bring in the next
    /// one's data while it computes, where the first touch of each tile would otherwise wait
    /// on memory. A prefetch never faults, so addresses past the array are harmless.
    pub(super) fn prefetch_next(&self, a: &Access<'ctx>, rows: u32, cols: u32) -> Result<(), CodegenError> {
        let Some(next) = a.next else { return Ok(()) };
        // Not a tile of one cache line or less (a row of W matrices in the compact layout,
        // read in the factorization's inner loops): its two prefetches cost as much as the
        // load, and the hardware prefetcher streams such rows (potrf_compact_batched 4096 x
        // 16 x 16: f32 0.215 -> 0.176 ms, f64 0.434 -> 0.377 ms).
        if !a.contiguous || (rows as u64) * (cols as u64) * (a.elem.bytes() as u64) <= 64 {
            return Ok(());
        }
        let (row, _) = Self::tile_dims(a);
        // The first and the last element of each row: a row of up to 64 bytes spans at most
        // two cache lines. Of a longer row only its first PREFETCH_ROW_LINES lines: the
        // hardware prefetcher follows a sequential stream from there (a 4096-element row
        // took 256 prefetches, which cost compile time and no speed).
        let line = 64 / a.elem.bytes().max(1);
        let cols = cols.min(PREFETCH_ROW_LINES * line);
        for r in 0..rows {
            let off = match row {
                Some(rd) => {
                    let o = self.b.build_int_mul(self.i64c(r as i64), rd.stride, "").map_err(be)?;
                    self.b.build_int_add(next, o, "").map_err(be)?
                }
                None => next,
            };
            for c in (0..cols).step_by(line as usize).chain(std::iter::once(cols.saturating_sub(1))) {
                // Read, into L1 (locality 3), data cache.
                let p = self.raw_ptr(a, self.add_off(off, c)?)?;
                self.call_void(
                    "llvm.prefetch.p0",
                    &[p.into(), self.i32c(0).into(), self.i32c(3).into(), self.i32c(1).into()],
                )?;
            }
        }
        Ok(())
    }

    /// Whether every element of the slice lies inside the array.
    pub(super) fn all_inside(&self, a: &Access<'ctx>) -> Result<IntValue<'ctx>, CodegenError> {
        let b = &self.b;
        let mut ok = a.at_ok;
        for sd in a.slices.iter().filter(|sd| !sd.proven) {
            let nonneg = b.build_int_compare(IntPredicate::SGE, sd.start, self.i64c(0), "").map_err(be)?;
            let end = b.build_int_add(sd.start, self.i64c(sd.extent as i64), "").map_err(be)?;
            let fits = b.build_int_compare(IntPredicate::SLE, end, sd.dim, "").map_err(be)?;
            ok = b.build_and(ok, nonneg, "").map_err(be)?;
            ok = b.build_and(ok, fits, "").map_err(be)?;
        }
        Ok(ok)
    }

    /// `(rows, cols)` of the accessed tile and the (row, column) slice dimensions.
    pub(super) fn tile_dims(a: &Access<'ctx>) -> (Option<SliceDim<'ctx>>, SliceDim<'ctx>) {
        match a.slices.as_slice() {
            [r, c] => (Some(*r), *c),
            [c] => (None, *c),
            _ => unreachable!("tile accesses have one or two slices"),
        }
    }

    /// The element offset in the array of tile element (`r`, `c0`), and whether row `r` is in
    /// bounds (with the single indices).
    fn row_at(&self, a: &Access<'ctx>, r: IntValue<'ctx>) -> Result<(IntValue<'ctx>, IntValue<'ctx>), CodegenError> {
        let (row, _) = Self::tile_dims(a);
        let Some(rd) = row else { return Ok((a.base, a.at_ok)) };
        let b = &self.b;
        let off = b.build_int_mul(r, rd.stride, "").map_err(be)?;
        let off = b.build_int_add(a.base, off, "").map_err(be)?;
        if rd.proven {
            return Ok((off, a.at_ok));
        }
        let i = b.build_int_add(rd.start, r, "").map_err(be)?;
        let ok = b.build_int_compare(IntPredicate::ULT, i, rd.dim, "").map_err(be)?;
        Ok((off, b.build_and(ok, a.at_ok, "").map_err(be)?))
    }

    /// An address in the array that may lie outside it (no `inbounds`).
    pub(super) fn raw_ptr(&self, a: &Access<'ctx>, off: IntValue<'ctx>) -> Result<PointerValue<'ctx>, CodegenError> {
        // SAFETY (LLVM semantics): a plain GEP is defined for any offset; it is dereferenced
        // only where the bounds check passed (masked-off lanes are not accessed).
        unsafe { self.b.build_gep(self.mem_ty(a.elem), a.ptr, &[off], "") }.map_err(be)
    }

    /// A harmless address to load from or store to where an access is out of bounds.
    fn dummy(&mut self, s: Scalar) -> Result<PointerValue<'ctx>, CodegenError> {
        self.alloca(s, 1)
    }

    /// The mask of columns `c0..c0+len` of a row in bounds (`row_ok` and the column bound).
    fn col_mask(
        &self,
        cd: &SliceDim<'ctx>,
        c0: u32,
        len: u32,
        row_ok: IntValue<'ctx>,
    ) -> Result<V<'ctx>, CodegenError> {
        let i64t = self.cx.i64_type();
        let iota: Vec<_> = (0..len).map(|j| i64t.const_int((c0 + j) as u64, false)).collect();
        let iota = VectorType::const_vector(&iota);
        let start = self.splat(cd.start.into(), len)?.into_vector_value();
        let idx = self.b.build_int_add(start, iota, "").map_err(be)?;
        let dim = self.splat(cd.dim.into(), len)?.into_vector_value();
        let ok = self.b.build_int_compare(IntPredicate::ULT, idx, dim, "").map_err(be)?;
        let rk = self.splat(row_ok.into(), len)?.into_vector_value();
        Ok(self.b.build_and(ok, rk, "").map_err(be)?.into())
    }

    /// The lanes of columns `c0..c0+len` that lie inside the array's column range (whatever
    /// the row), for the masked vector loads and stores of the contiguous rows of `s`: lane
    /// `j` is in when `0 <= start + c0 + j < dim`, as an all-ones or zero integer of `s`'s
    /// width (`lane_mask` tests its sign where it is used). The range `lo..hi` is clamped on
    /// scalars and the lanes read from a constant table (`mask_table`) at offsets `64 - hi`
    /// and `128 - lo`: instruction selection works a block at a time, and lane compares would
    /// be sunk into (and redone in) every row's block, while x86's masked moves take the
    /// table's lanes as they are.
    fn col_range_mask(
        &self,
        cd: &SliceDim<'ctx>,
        c0: IntValue<'ctx>,
        len: u32,
        s: Scalar,
    ) -> Result<ColMask<'ctx>, CodegenError> {
        let b = &self.b;
        let clamp = |x: IntValue<'ctx>, lo: i64, hi: i64| -> Result<IntValue<'ctx>, CodegenError> {
            let (l, h) = (self.i64c(lo), self.i64c(hi));
            let below = b.build_int_compare(IntPredicate::SLT, x, l, "").map_err(be)?;
            let x = b.build_select(below, l, x, "").map_err(be)?.into_int_value();
            let above = b.build_int_compare(IntPredicate::SGT, x, h, "").map_err(be)?;
            Ok(b.build_select(above, h, x, "").map_err(be)?.into_int_value())
        };
        // Array extents are far below 2^50, so clamping the first column there keeps the
        // differences below from overflowing without changing which lanes are in.
        let big = 1i64 << 50;
        let first = clamp(b.build_int_add(cd.start, c0, "").map_err(be)?, -big, big)?;
        let lo = clamp(b.build_int_neg(first, "").map_err(be)?, 0, len as i64)?;
        let hi = clamp(b.build_int_sub(cd.dim, first, "").map_err(be)?, 0, len as i64)?;
        let (table, it) = self.mask_table(s);
        let w = MASK_TABLE_SPAN as i64;
        let lanes_at = |off: IntValue<'ctx>| -> Result<_, CodegenError> {
            // SAFETY (LLVM semantics): `off + len <= 3 * MASK_TABLE_SPAN`, inside the table.
            let p = unsafe { b.build_gep(it, table, &[off], "") }.map_err(be)?;
            let v = b.build_load(it.vec_type(len), p, "").map_err(be)?;
            v.as_instruction_value().expect("load").set_alignment(s.bytes().max(1)).map_err(be)?;
            Ok(v.into_vector_value())
        };
        // Lane j is below `hi` where table[w - hi + j] is all ones (in the first span), and at
        // or after `lo` where table[2w - lo + j] is (in the last span).
        let before_hi = lanes_at(b.build_int_sub(self.i64c(w), hi, "").map_err(be)?)?;
        let after_lo = lanes_at(b.build_int_sub(self.i64c(2 * w), lo, "").map_err(be)?)?;
        let lanes = b.build_and(before_hi, after_lo, "").map_err(be)?.into();
        let from_0 = b.build_int_compare(IntPredicate::EQ, lo, self.i64c(0), "").map_err(be)?;
        let to_len = b.build_int_compare(IntPredicate::EQ, hi, self.i64c(len as i64), "").map_err(be)?;
        Ok(ColMask { lanes, from_0, whole: b.build_and(from_0, to_len, "").map_err(be)?, hi })
    }

    /// A constant table of `3 * MASK_TABLE_SPAN` integers of `s`'s width: all ones, zeros,
    /// all ones (one per module and width).
    fn mask_table(&self, s: Scalar) -> (PointerValue<'ctx>, inkwell::types::IntType<'ctx>) {
        let bits = 8 * s.bytes().max(1);
        let it = match bits {
            64 => self.cx.i64_type(),
            16 => self.cx.i16_type(),
            8 => self.cx.i8_type(),
            _ => self.cx.i32_type(),
        };
        let name = format!("tilec.mask_table.i{bits}");
        if let Some(g) = self.m.get_global(&name) {
            return (g.as_pointer_value(), it);
        }
        let span = MASK_TABLE_SPAN as usize;
        let vals: Vec<_> = (0..3 * span)
            .map(|i| if (span..2 * span).contains(&i) { it.const_zero() } else { it.const_all_ones() })
            .collect();
        let init = it.const_array(&vals);
        let g = self.m.add_global(init.get_type(), None, &name);
        g.set_initializer(&init);
        g.set_constant(true);
        g.set_linkage(inkwell::module::Linkage::Private);
        g.set_unnamed_addr(true);
        (g.as_pointer_value(), it)
    }

    /// Stores the first `count` lanes of the vector `x` (`count` an `i64` below its length) at
    /// element `at` of the array of `a`: plain stores of 2^k lanes for the set bits of
    /// `count`, the largest first, each behind a branch (all taken or not by every row of a
    /// tile access).
    fn store_prefix(
        &mut self,
        a: &Access<'ctx>,
        at: IntValue<'ctx>,
        x: V<'ctx>,
        count: IntValue<'ctx>,
    ) -> Result<(), CodegenError> {
        let s = a.elem;
        let x = x.into_vector_value();
        let len = x.get_type().get_size();
        let i32t = self.cx.i32_type();
        let (mut v, mut pos) = (x, at);
        let mut bit = if len > 1 { 1u32 << (31 - (len - 1).leading_zeros()) } else { 0 };
        while bit >= 1 {
            let set = self.b.build_and(count, self.i64c(bit as i64), "").map_err(be)?;
            let set = self.b.build_int_compare(IntPredicate::NE, set, self.i64c(0), "").map_err(be)?;
            let from = self.b.get_insert_block().expect("a block");
            let (yes, join) = (self.block(), self.block());
            self.b.build_conditional_branch(set, yes, join).map_err(be)?;
            self.b.position_at_end(yes);
            let undef = x.get_type().get_undef();
            let piece: V<'ctx> = if bit == 1 {
                self.b.build_extract_element(v, i32t.const_zero(), "").map_err(be)?
            } else {
                let idx: Vec<_> = (0..bit).map(|j| i32t.const_int(j as u64, false)).collect();
                self.b.build_shuffle_vector(v, undef, VectorType::const_vector(&idx), "").map_err(be)?.into()
            };
            self.store_at(self.raw_ptr(a, pos)?, s, piece)?;
            let idx: Vec<_> = (0..len).map(|j| i32t.const_int((j + bit).min(len) as u64, false)).collect();
            let shifted = self.b.build_shuffle_vector(v, undef, VectorType::const_vector(&idx), "").map_err(be)?;
            let moved = self.b.build_int_add(pos, self.i64c(bit as i64), "").map_err(be)?;
            self.b.build_unconditional_branch(join).map_err(be)?;
            self.b.position_at_end(join);
            let pv = self.b.build_phi(x.get_type(), "").map_err(be)?;
            pv.add_incoming(&[(&v, from), (&shifted, yes)]);
            let pp = self.b.build_phi(self.cx.i64_type(), "").map_err(be)?;
            pp.add_incoming(&[(&pos, from), (&moved, yes)]);
            v = pv.as_basic_value().into_vector_value();
            pos = pp.as_basic_value().into_int_value();
            bit /= 2;
        }
        Ok(())
    }

    /// The `i1` lanes of a mask from `col_range_mask`.
    fn lane_mask(&self, ones: V<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let ones = ones.into_vector_value();
        let zero = ones.get_type().const_zero();
        Ok(self.b.build_int_compare(IntPredicate::SLT, ones, zero, "").map_err(be)?.into())
    }

    /// `llvm.masked.load` at `p` of a vector shaped like `pass`: the lanes where the `i1`
    /// vector `mask` is set from memory, the others `pass`'s.
    fn masked_load(
        &self,
        p: PointerValue<'ctx>,
        s: Scalar,
        mask: V<'ctx>,
        pass: V<'ctx>,
    ) -> Result<V<'ctx>, CodegenError> {
        let name = format!("llvm.masked.load.{}.p0", super::scalar::suffix(pass));
        self.call(&name, pass.get_type(), &[p.into(), self.align(s), mask, pass])
    }

    /// `llvm.masked.store` of the vector `x` at `p`, in the lanes where the `i1` vector `mask`
    /// is set.
    fn masked_store(&self, x: V<'ctx>, p: PointerValue<'ctx>, s: Scalar, mask: V<'ctx>) -> Result<(), CodegenError> {
        let name = format!("llvm.masked.store.{}.p0", super::scalar::suffix(x));
        self.call_void(&name, &[x, p.into(), self.align(s), mask])
    }

    fn align(&self, s: Scalar) -> V<'ctx> {
        self.i32c(s.bytes() as i64).into()
    }

    pub(crate) fn memory_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        match &op.kind {
            OpKind::Load(kinds) if !self.f.ty(op.results[0]).is_tile() => {
                let v = self.load_scalar(op, kinds)?;
                self.held.insert(op.results[0], Held::Val(v));
                Ok(())
            }
            OpKind::Load(kinds) => self.load_tile(op, kinds, false),
            OpKind::LoadInto(kinds) => self.load_tile(op, kinds, true),
            OpKind::Store(kinds) | OpKind::AtomicAdd(kinds) => {
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                let n = op.args.len();
                let v = op.args[n - 1];
                let kinds = column_kinds(kinds, self.f.ty(v)).unwrap_or_else(|| kinds.to_vec());
                let a = self.access(op.args[0], &kinds, &op.args[1..n - 1])?;
                if !self.f.ty(v).is_tile() {
                    // Out of bounds, the element goes to a scratch slot: no branch for a
                    // scatter's unpredictable drops (`Y[where(keep, at, -1)] = x`,
                    // examples/compact.tile) to mispredict.
                    let x = self.val(v)?;
                    let p = self.raw_ptr(&a, a.base)?;
                    let dummy = self.dummy(a.elem)?;
                    let safe = self.b.build_select(a.at_ok, p, dummy, "").map_err(be)?.into_pointer_value();
                    return self.put(safe, a.elem, x, atomic);
                }
                if atomic {
                    self.atomic_tile(&a, v)
                } else {
                    self.store_tile(&a, v, None)
                }
            }
            OpKind::StoreMasked(kinds) => {
                let n = op.args.len();
                let a = self.access(op.args[0], kinds, &op.args[1..n - 2])?;
                self.store_tile(&a, op.args[n - 2], Some(op.args[n - 1]))
            }
            OpKind::AllocShared(shape) => {
                let elem = self.elem(op.results[0]);
                let len: u32 = shape.iter().product();
                let ptr = self.alloca(elem, len)?;
                self.b
                    .build_memset(ptr, 64, self.cx.i8_type().const_zero(), self.i64c((len * elem.bytes()) as i64))
                    .map_err(be)?;
                let dims = shape.iter().map(|d| self.i64c(*d as i64)).collect();
                self.held.insert(op.results[0], Held::Array { ptr, dims });
                Ok(())
            }
            _ => Err(err("not a memory op")),
        }
    }

    /// A store, or an atomic add, of one element.
    pub(super) fn put(&self, p: PointerValue<'ctx>, s: Scalar, x: V<'ctx>, atomic: bool) -> Result<(), CodegenError> {
        if !atomic {
            return self.store_at(p, s, x);
        }
        if s.is_half() {
            return self.rmw_at(tilec_midend::Rmw::Add, p, x, None, s).map(|_| ());
        }
        let x = self.to_mem(s, x)?;
        let op = if s.is_float() {
            llvm_sys::LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpFAdd
        } else {
            llvm_sys::LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd
        };
        self.atomicrmw(op, p, x).map(|_| ())
    }

    /// `AtomicRmw(k)`: the update of one element (made on a scratch element when out of
    /// bounds), 0 when out of bounds.
    pub(crate) fn rmw_scalar(&mut self, op: &Op, k: tilec_midend::Rmw) -> Result<V<'ctx>, CodegenError> {
        let rank = op.args.len() - if k == tilec_midend::Rmw::Cas { 3 } else { 2 };
        let a = self.access(op.args[0], &vec![Index::At; rank], &op.args[1..1 + rank])?;
        let n = op.args.len();
        let x = self.val(op.args[n - 1])?;
        let cmp = if k == tilec_midend::Rmw::Cas { Some(self.val(op.args[n - 2])?) } else { None };
        let p = self.raw_ptr(&a, a.base)?;
        let dummy = self.dummy(a.elem)?;
        let safe = self.b.build_select(a.at_ok, p, dummy, "").map_err(be)?.into_pointer_value();
        let old = self.rmw_at(k, safe, x, cmp, a.elem)?;
        self.b.build_select(a.at_ok, old, self.constant(a.elem.compute(), 0.0), "").map_err(be)
    }

    /// A single element: zero when out of bounds.
    pub(crate) fn load_scalar(&mut self, op: &Op, kinds: &[Index]) -> Result<V<'ctx>, CodegenError> {
        let a = self.access(op.args[0], kinds, &op.args[1..])?;
        let p = self.raw_ptr(&a, a.base)?;
        let dummy = self.dummy(a.elem)?;
        let safe = self.b.build_select(a.at_ok, p, dummy, "").map_err(be)?.into_pointer_value();
        let v = self.load_at(safe, a.elem, 0)?;
        self.b.build_select(a.at_ok, v, self.constant(a.elem, 0.0), "").map_err(be)
    }

    /// A tile from an array (`into`: elements out of bounds keep the first operand's values).
    /// A load that its product or solve reads in place (`Gen::direct`) is only noted here (a
    /// `load_into`, the solves' triangular tiles, still prefetches the next program's tile:
    /// potrs 512 x 92 f32 on one Zen 3 thread 20.0 -> 19.5 ms).
    fn load_tile(&mut self, op: &Op, kinds: &[Index], into: bool) -> Result<(), CodegenError> {
        if self.direct.contains(&op.results[0]) {
            self.pending.insert(op.results[0], op.clone());
            if into {
                let a = self.access(op.args[1], kinds, &op.args[2..])?;
                let (rows, cols) = shape(self.f.ty(op.results[0]));
                self.prefetch_next(&a, rows, cols)?;
            }
            return Ok(());
        }
        let base = usize::from(into);
        let ty = self.f.ty(op.results[0]).clone();
        let kinds = column_kinds(kinds, &ty).unwrap_or_else(|| kinds.to_vec());
        let a = self.access(op.args[base], &kinds, &op.args[base + 1..])?;
        let old = if into { Some(self.tile(op.args[0])?) } else { None };
        let dst = self.new_tile(op.results[0])?;
        let (rows, cols) = access_shape(&a, &ty);
        self.prefetch_next(&a, rows, cols)?;
        self.fill_tile(&a, dst, rows, cols, old)
    }

    /// Fills the `rows x cols` tile `dst` from the access `a`: elements out of bounds read as
    /// zero, or keep `old`'s values.
    pub(super) fn fill_tile(
        &mut self,
        a: &Access<'ctx>,
        dst: PointerValue<'ctx>,
        rows: u32,
        cols: u32,
        old: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        // `s` in the array, `tc` in the tile (they differ for the storage types).
        let s = a.elem;
        let tc = s.compute();
        let inside = self.all_inside(a)?;
        let (_, cd) = Self::tile_dims(a);
        let segs = super::tile::segments(cols, tc);
        self.branches(
            inside,
            |g| {
                g.each_row(0, rows, cols, tc, |g, row| {
                    let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
                    let (off, _) = g.row_at(a, r)?;
                    if !a.contiguous && cols > super::strided::STRIDED_UNROLL {
                        return g.strided_load_row(a, (off, row, cols), dst, None, old);
                    }
                    if a.contiguous && super::tile::long_row(cols, tc) {
                        return g.segment_loop(cols, tc, |g, c0| {
                            let x = g.load_vec(a.ptr, s, g.add_dyn(off, c0)?, super::tile::width(tc))?;
                            g.store_vec(dst, tc, g.add_dyn(row, c0)?, x)
                        });
                    }
                    for &(c0, len) in &segs {
                        let x = if a.contiguous {
                            let p = g.add_off(off, c0)?;
                            g.load_vec(a.ptr, s, p, len)?
                        } else {
                            let mut v: V<'ctx> = g.vty(s, len).get_undef().into();
                            for j in 0..len {
                                let o = g.b.build_int_mul(g.i64c((c0 + j) as i64), cd.stride, "").map_err(be)?;
                                let o = g.b.build_int_add(off, o, "").map_err(be)?;
                                let x = g.load_elem(a.ptr, s, o)?;
                                v = g.with_lane(v, j, x)?;
                            }
                            v
                        };
                        let t = g.add_off(row, c0)?;
                        g.store_vec(dst, tc, t, x)?;
                    }
                    Ok(())
                })
            },
            |g| {
                if a.contiguous && s != Scalar::Bool && !s.is_half() {
                    return g.fill_rows_masked(a, dst, (rows, cols), old);
                }
                let dummy = g.dummy(s)?;
                g.each_row(0, rows, cols, tc, |g, row| {
                    let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
                    let (off, row_ok) = g.row_at(a, r)?;
                    if cols > super::strided::STRIDED_UNROLL {
                        return g.strided_load_row(a, (off, row, cols), dst, Some((row_ok, dummy)), old);
                    }
                    for &(c0, len) in &segs {
                        let t = g.add_off(row, c0)?;
                        let pass = match old {
                            Some(o) => g.load_vec(o, tc, t, len)?,
                            None => g.splat(g.constant(tc, 0.0), len)?,
                        };
                        let mask = g.col_mask(&cd, c0, len, row_ok)?;
                        let x = {
                            let mut v = pass;
                            for j in 0..len {
                                let o = g.b.build_int_mul(g.i64c((c0 + j) as i64), cd.stride, "").map_err(be)?;
                                let o = g.b.build_int_add(off, o, "").map_err(be)?;
                                let ok = g.lane(mask, j)?.into_int_value();
                                let p = g.raw_ptr(a, o)?;
                                let p = g.b.build_select(ok, p, dummy, "").map_err(be)?.into_pointer_value();
                                let x = g.load_at(p, s, 0)?;
                                let keep = g.lane(pass, j)?;
                                let x = g.b.build_select(ok, x, keep, "").map_err(be)?;
                                v = g.with_lane(v, j, x)?;
                            }
                            v
                        };
                        g.store_vec(dst, tc, t, x)?;
                    }
                    Ok(())
                })
            },
        )
    }

    /// The partial-tile path of `fill_tile` for contiguous rows of a masked-load type: a row
    /// inside the array's row range is a masked vector load per segment (the columns inside,
    /// `col_range_mask`, computed once for every row); a row outside it takes zero or `old`'s
    /// values, behind a branch rather than a mask.
    fn fill_rows_masked(
        &mut self,
        a: &Access<'ctx>,
        dst: PointerValue<'ctx>,
        (rows, cols): (u32, u32),
        old: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        let s = a.elem;
        let (_, cd) = Self::tile_dims(a);
        if super::tile::long_row(cols, s) {
            return self.fill_long_rows_masked(a, dst, (rows, cols), old);
        }
        let segs = super::tile::segments(cols, s);
        let masks: Vec<_> = segs
            .iter()
            .map(|&(c0, len)| self.col_range_mask(&cd, self.i64c(c0 as i64), len, s))
            .collect::<Result<_, _>>()?;
        self.each_row(0, rows, cols, s, |g, row| {
            let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
            let (off, row_ok) = g.row_at(a, r)?;
            let pass = |g: &Self, c0: u32, len: u32| match old {
                Some(o) => g.load_vec(o, s, g.add_off(row, c0)?, len),
                None => g.splat(g.constant(s, 0.0), len),
            };
            g.branches(
                row_ok,
                |g| {
                    for (&(c0, len), m) in segs.iter().zip(&masks) {
                        let pass = pass(g, c0, len)?;
                        let p = g.raw_ptr(a, g.add_off(off, c0)?)?;
                        let x = g.masked_load(p, s, g.lane_mask(m.lanes)?, pass)?;
                        g.store_vec(dst, s, g.add_off(row, c0)?, x)?;
                    }
                    Ok(())
                },
                |g| {
                    for &(c0, len) in &segs {
                        let x = pass(g, c0, len)?;
                        g.store_vec(dst, s, g.add_off(row, c0)?, x)?;
                    }
                    Ok(())
                },
            )
        })
    }

    /// [`Self::fill_rows_masked`] for [`super::tile::long_row`]s: a loop over each row's
    /// vectors, every vector's column mask computed in the loop.
    fn fill_long_rows_masked(
        &mut self,
        a: &Access<'ctx>,
        dst: PointerValue<'ctx>,
        (rows, cols): (u32, u32),
        old: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        let s = a.elem;
        let (_, cd) = Self::tile_dims(a);
        let w = super::tile::width(s);
        let pass = |g: &Self, t: IntValue<'ctx>| match old {
            Some(o) => g.load_vec(o, s, t, w),
            None => g.splat(g.constant(s, 0.0), w),
        };
        self.each_row(0, rows, cols, s, |g, row| {
            let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
            let (off, row_ok) = g.row_at(a, r)?;
            g.branches(
                row_ok,
                |g| {
                    g.segment_loop(cols, s, |g, c0| {
                        let t = g.add_dyn(row, c0)?;
                        let pass = pass(g, t)?;
                        let mask = g.lane_mask(g.col_range_mask(&cd, c0, w, s)?.lanes)?;
                        let p = g.raw_ptr(a, g.add_dyn(off, c0)?)?;
                        let x = g.masked_load(p, s, mask, pass)?;
                        g.store_vec(dst, s, t, x)
                    })
                },
                |g| {
                    g.segment_loop(cols, s, |g, c0| {
                        let t = g.add_dyn(row, c0)?;
                        let x = pass(g, t)?;
                        g.store_vec(dst, s, t, x)
                    })
                },
            )
        })
    }

    /// Stores a tile; elements outside the array are not written.
    /// Stores the tile `v` to the in-bounds elements of `a`; with `user_mask` (a `bool` tile of
    /// `v`'s shape), only where it is true.
    fn store_tile(&mut self, a: &Access<'ctx>, v: Value, user_mask: Option<Value>) -> Result<(), CodegenError> {
        let src = self.tile(v)?;
        let um_ptr = user_mask.map(|m| self.tile(m)).transpose()?;
        let (rows, cols) = access_shape(a, self.f.ty(v));
        // `s` in the array, `tc` in the tile (they differ for the storage types).
        let s = a.elem;
        let tc = s.compute();
        let inside = self.all_inside(a)?;
        let (_, cd) = Self::tile_dims(a);
        let segs = super::tile::segments(cols, tc);
        let masked_moves = a.contiguous && s != Scalar::Bool && !s.is_half();
        // Long rows of plain stores move in a loop over their vectors, each one's column mask
        // computed there.
        let long = a.contiguous && user_mask.is_none() && super::tile::long_row(cols, tc);
        // The columns inside, one mask per segment for every row of a masked path.
        let col_masks = |g: &Self| -> Result<Vec<ColMask<'ctx>>, CodegenError> {
            if !masked_moves || long {
                return Ok(Vec::new());
            }
            segs.iter().map(|&(c0, len)| g.col_range_mask(&cd, g.i64c(c0 as i64), len, s)).collect()
        };
        let put_row = |g: &mut Self,
                       row: IntValue<'ctx>,
                       masked: bool,
                       dummy: Option<PointerValue<'ctx>>,
                       masks: &[ColMask<'ctx>]| {
            let r = g.b.build_int_unsigned_div(row, g.i64c(cols as i64), "").map_err(be)?;
            let (off, row_ok) = g.row_at(a, r)?;
            if long && (!masked || masked_moves) {
                let w = super::tile::width(tc);
                let put = |g: &mut Self| {
                    g.segment_loop(cols, tc, |g, c0| {
                        let x = g.load_vec(src, tc, g.add_dyn(row, c0)?, w)?;
                        let at = g.add_dyn(off, c0)?;
                        if !masked {
                            return g.store_vec(a.ptr, s, at, x);
                        }
                        let p = g.raw_ptr(a, at)?;
                        let m = g.col_range_mask(&cd, c0, w, s)?;
                        g.masked_store(x, p, s, g.lane_mask(m.lanes)?)
                    })
                };
                return if masked { g.guarded(row_ok, put) } else { put(g) };
            }
            if masked && masked_moves {
                // A row outside the array's row range is skipped behind a branch.
                return g.guarded(row_ok, |g| {
                    for (&(c0, len), m) in segs.iter().zip(masks) {
                        let t = g.add_off(row, c0)?;
                        let x = g.load_vec(src, tc, t, len)?;
                        let at = g.add_off(off, c0)?;
                        let p = g.raw_ptr(a, at)?;
                        let Some(um) = um_ptr else {
                            if segs.len() > PREFIX_STORE_SEGMENTS {
                                // A long row: one masked store per segment (the branches
                                // below, per segment, took seconds to compile for 4096).
                                g.masked_store(x, p, s, g.lane_mask(m.lanes)?)?;
                                continue;
                            }
                            // Plain stores where the columns inside are the whole segment or
                            // a prefix of it: masked stores are microcoded on AMD before Zen 4
                            // (about 12 cycles each on Zen 3, against 1; potrs 512 x 92 f32 on
                            // one thread 20.4 -> 19.7 ms).
                            g.branches(
                                m.whole,
                                |g| g.store_vec(a.ptr, s, at, x),
                                |g| {
                                    g.branches(
                                        m.from_0,
                                        |g| g.store_prefix(a, at, x, m.hi),
                                        |g| g.masked_store(x, p, s, g.lane_mask(m.lanes)?),
                                    )
                                },
                            )?;
                            continue;
                        };
                        let u = g.load_vec(um, Scalar::Bool, t, len)?.into_vector_value();
                        let mask = g.lane_mask(m.lanes)?.into_vector_value();
                        let mask = g.b.build_and(mask, u, "").map_err(be)?.into();
                        g.masked_store(x, p, s, mask)?;
                    }
                    Ok(())
                });
            }
            if (masked || !a.contiguous) && cols > super::strided::STRIDED_UNROLL {
                let guard = masked.then_some(row_ok).zip(dummy);
                return g.strided_store_row(a, (off, row, cols), src, guard, um_ptr);
            }
            for &(c0, len) in &segs {
                let t = g.add_off(row, c0)?;
                let x = g.load_vec(src, tc, t, len)?;
                // The user's mask for these columns, if any.
                let um = match um_ptr {
                    Some(p) => Some(g.load_vec(p, Scalar::Bool, t, len)?.into_vector_value()),
                    None => None,
                };
                if a.contiguous && !masked {
                    let p = g.add_off(off, c0)?;
                    g.store_vec(a.ptr, s, p, x)?;
                } else {
                    let mut mask = if masked { Some(g.col_mask(&cd, c0, len, row_ok)?) } else { None };
                    if let (Some(m), Some(u)) = (mask, um) {
                        mask = Some(g.b.build_and(m.into_vector_value(), u, "").map_err(be)?.into());
                    }
                    for j in 0..len {
                        let o = g.b.build_int_mul(g.i64c((c0 + j) as i64), cd.stride, "").map_err(be)?;
                        let o = g.b.build_int_add(off, o, "").map_err(be)?;
                        let mut p = g.raw_ptr(a, o)?;
                        if let (Some(m), Some(d)) = (mask, dummy) {
                            let ok = g.lane(m, j)?.into_int_value();
                            p = g.b.build_select(ok, p, d, "").map_err(be)?.into_pointer_value();
                        }
                        let e = g.lane(x, j)?;
                        g.put(p, s, e, false)?;
                    }
                }
            }
            Ok(())
        };
        if user_mask.is_some() {
            // Every element is checked: no unmasked path.
            let d = self.dummy(s)?;
            let masks = col_masks(self)?;
            return self.each_row(0, rows, cols, tc, |g, row| put_row(g, row, true, Some(d), &masks));
        }
        self.branches(
            inside,
            |g| g.each_row(0, rows, cols, tc, |g, row| put_row(g, row, false, None, &[])),
            |g| {
                let d = g.dummy(s)?;
                let masks = col_masks(g)?;
                g.each_row(0, rows, cols, tc, |g, row| put_row(g, row, true, Some(d), &masks))
            },
        )
    }

    /// Adds a tile to the array atomically, element by element, where in bounds.
    fn atomic_tile(&mut self, a: &Access<'ctx>, v: Value) -> Result<(), CodegenError> {
        let src = self.tile(v)?;
        let (_, cols) = access_shape(a, self.f.ty(v));
        let s = a.elem;
        let (_, cd) = Self::tile_dims(a);
        let n = self.f.ty(v).tile_len();
        let (lo, hi) = (self.i64c(0), self.i64c(n as i64));
        self.dyn_loop(lo, hi, |g, e| {
            let c = g.i64c(cols as i64);
            let r = g.b.build_int_unsigned_div(e, c, "").map_err(be)?;
            let j = g.b.build_int_unsigned_rem(e, c, "").map_err(be)?;
            let (off, row_ok) = g.row_at(a, r)?;
            let o = g.b.build_int_mul(j, cd.stride, "").map_err(be)?;
            let o = g.b.build_int_add(off, o, "").map_err(be)?;
            let ci = g.b.build_int_add(cd.start, j, "").map_err(be)?;
            let col_ok = g.b.build_int_compare(IntPredicate::ULT, ci, cd.dim, "").map_err(be)?;
            let ok = g.b.build_and(row_ok, col_ok, "").map_err(be)?;
            // The tile holds the compute type (`f32` for an `f16`/`bf16` array).
            let x = g.load_elem(src, s.compute(), e)?;
            let p = g.raw_ptr(a, o)?;
            g.guarded(ok, |g| g.put(p, s, x, true))
        })
    }
}
