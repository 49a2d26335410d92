//! Tiles read in place from their arrays (`Gen::direct`: a product's or solve's operand, a
//! transpose's, an element-wise op's): the pending load reached where the reader is, the view
//! (`Strided`) the reader takes of the array where the tile lies inside it, and the copy with
//! the load's bounds rules where it does not.

use super::memory::Access;
use super::tile::shape;
use super::{be, err, Gen};
use crate::CodegenError;
use inkwell::values::{IntValue, PointerValue};
use tilec_midend::{OpKind, Value};

/// A tile load that its product or solve reads in place (`Gen::pending_load`): element `[r, c]` is at
/// `ptr[base + r * row_stride + c]` when `inside`.
pub(crate) struct PendingLoad<'ctx> {
    pub(crate) ptr: PointerValue<'ctx>,
    pub(crate) base: IntValue<'ctx>,
    pub(crate) row_stride: IntValue<'ctx>,
    /// Whether every element of the tile lies inside the array (an `i1`).
    pub(crate) inside: IntValue<'ctx>,
    rows: u32,
    cols: u32,
    access: Access<'ctx>,
    /// The tile whose values the elements outside keep (a `load_into`), else zero.
    old: Option<Value>,
}

/// Where a product's micro-kernel or a solve reads a tile: element `[i, j]` at `ptr[base + i *
/// row + j * col]` (`i64` element offsets and strides).
#[derive(Clone, Copy)]
pub(crate) struct Strided<'ctx> {
    pub(crate) ptr: PointerValue<'ctx>,
    base: IntValue<'ctx>,
    row: IntValue<'ctx>,
    pub(crate) col: IntValue<'ctx>,
}

impl<'ctx> Strided<'ctx> {
    /// A row-major tile of `cols` columns, read transposed when `t`.
    pub(crate) fn tile(g: &Gen<'ctx, '_>, ptr: PointerValue<'ctx>, cols: u32, t: bool) -> Self {
        let (one, w) = (g.i64c(1), g.i64c(cols as i64));
        let (row, col) = if t { (one, w) } else { (w, one) };
        Strided { ptr, base: g.i64c(0), row, col }
    }

    /// A tile read in place from its array, transposed when `t`.
    pub(crate) fn array(g: &Gen<'ctx, '_>, p: &PendingLoad<'ctx>, t: bool) -> Self {
        let one = g.i64c(1);
        let (row, col) = if t { (one, p.row_stride) } else { (p.row_stride, one) };
        Strided { ptr: p.ptr, base: p.base, row, col }
    }

    /// The element offset of `[i, 0]` plus `plus` columns.
    pub(crate) fn at(
        &self,
        g: &Gen<'ctx, '_>,
        i: IntValue<'ctx>,
        plus: IntValue<'ctx>,
    ) -> Result<IntValue<'ctx>, CodegenError> {
        let o = g.b.build_int_mul(i, self.row, "").map_err(be)?;
        let o = g.b.build_int_add(self.base, o, "").map_err(be)?;
        let c = g.b.build_int_mul(plus, self.col, "").map_err(be)?;
        g.b.build_int_add(o, c, "").map_err(be)
    }

    /// `x` where `cond` (an `i1`) holds, else `y`. A stride the two share stays what it is
    /// (a constant 1 column stride lets `map_vectors` read whole vectors).
    pub(crate) fn select(g: &Gen<'ctx, '_>, cond: IntValue<'ctx>, x: Self, y: Self) -> Result<Self, CodegenError> {
        let int = |a: IntValue<'ctx>, b: IntValue<'ctx>| -> Result<IntValue<'ctx>, CodegenError> {
            if a == b {
                return Ok(a);
            }
            Ok(g.b.build_select(cond, a, b, "").map_err(be)?.into_int_value())
        };
        Ok(Strided {
            ptr: g.b.build_select(cond, x.ptr, y.ptr, "").map_err(be)?.into_pointer_value(),
            base: int(x.base, y.base)?,
            row: int(x.row, y.row)?,
            col: int(x.col, y.col)?,
        })
    }
}

impl<'ctx> Gen<'ctx, '_> {
    /// A pending load of `v` (`Gen::direct`) for its product to read in place, from where the
    /// product is: the array's elements and where the tile starts in it, its row stride, and
    /// whether the whole tile lies inside the array (else the product reads `copy_pending`).
    pub(crate) fn pending_load(&mut self, v: Value) -> Result<Option<PendingLoad<'ctx>>, CodegenError> {
        let Some(op) = self.pending.get(&v).cloned() else { return Ok(None) };
        let (kinds, old) = match &op.kind {
            OpKind::Load(kinds) => (kinds, None),
            OpKind::LoadInto(kinds) => (kinds, Some(op.args[0])),
            _ => return Err(err("a pending load is not a load")),
        };
        let base = usize::from(old.is_some());
        let a = self.access(op.args[base], kinds, &op.args[base + 1..])?;
        // No prefetch of the next program's tile here: product operands are read again and
        // again in a program, and the loads of its other tiles bring in the next one's
        // (potrs 512 x 92 f32 on one Zen 3 thread: 24.2 -> 23.7 ms).
        let (rows, cols) = shape(self.f.ty(v));
        let inside = self.all_inside(&a)?;
        // A one-slice load (a `map` operand) is one row.
        let row_stride = match Self::tile_dims(&a) {
            (Some(rd), _) => rd.stride,
            (None, _) => self.i64c(cols as i64),
        };
        Ok(Some(PendingLoad { ptr: a.ptr, base: a.base, row_stride, inside, rows, cols, access: a, old }))
    }

    /// The pending load `p` as a tile, with the load's bounds rules.
    pub(crate) fn copy_pending(&mut self, p: &PendingLoad<'ctx>) -> Result<PointerValue<'ctx>, CodegenError> {
        let dst = self.alloca(p.access.elem.compute(), p.rows * p.cols)?;
        self.fill_pending(p, dst)?;
        Ok(dst)
    }

    /// The tile `v`, if it is a pending load (`Gen::direct`) that an element-wise op reads
    /// (`tilec_midend::fusion::map_loads`), as a view: of its array where the tile lies inside
    /// it, else of a copy made behind a branch with the load's bounds rules. Prefetches what
    /// the load would have (`prefetch_next`).
    pub(crate) fn pending_view(&mut self, v: Value) -> Result<Option<Strided<'ctx>>, CodegenError> {
        let Some(p) = self.pending_load(v)? else { return Ok(None) };
        self.prefetch_pending(&p)?;
        let copy = self.alloca(p.access.elem.compute(), p.rows * p.cols)?;
        let outside = self.b.build_not(p.inside, "").map_err(be)?;
        self.guarded(outside, |g| g.fill_pending(&p, copy))?;
        let (in_array, in_copy) = (Strided::array(self, &p, false), Strided::tile(self, copy, p.cols, false));
        Ok(Some(Strided::select(self, p.inside, in_array, in_copy)?))
    }

    /// Fills the tile storage `dst` with the pending load `p`, with the load's bounds rules.
    pub(crate) fn fill_pending(&mut self, p: &PendingLoad<'ctx>, dst: PointerValue<'ctx>) -> Result<(), CodegenError> {
        let old = p.old.map(|v| self.tile(v)).transpose()?;
        self.fill_tile(&p.access, dst, p.rows, p.cols, old)
    }

    /// `prefetch_next` for a pending load's tile (`Gen::direct`), unless it is a `load_into`,
    /// which `load_tile` prefetched where it was reached.
    pub(crate) fn prefetch_pending(&self, p: &PendingLoad<'ctx>) -> Result<(), CodegenError> {
        if p.old.is_some() {
            return Ok(());
        }
        self.prefetch_next(&p.access, p.rows, p.cols)
    }
}
