//! Rows of array accesses moved element by element in a loop over their columns: strided
//! rows longer than [`STRIDED_UNROLL`] elements, and the partial rows of types without masked
//! moves, whose unrolled code would grow with the row (`memory.rs` calls these).

use super::memory::{Access, SliceDim};
use super::{be, Gen};
use crate::CodegenError;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;
use tilec_midend::Scalar;

/// Longest row of a strided access (or of a partial access of a type without masked moves)
/// moved by unrolled code; longer rows are moved in a loop over their elements.
pub(super) const STRIDED_UNROLL: u32 = 16;

impl<'ctx> Gen<'ctx, '_> {
    /// Loads the `cols` elements of one row of an access element by element, in a loop over
    /// the columns (`at`: the row's first element in the array, its first element in the tile,
    /// `cols`) into the tile `dst`: for strided rows and the partial rows of types without
    /// masked loads, whose code would otherwise grow with the row (a 64x64 strided copy took
    /// 68 s to compile unrolled). With `guard` (the row's bound check and a harmless address),
    /// an element outside the array is not read and takes `old`'s element, or zero.
    pub(super) fn strided_load_row(
        &mut self,
        a: &Access<'ctx>,
        (off, row, cols): (IntValue<'ctx>, IntValue<'ctx>, u32),
        dst: PointerValue<'ctx>,
        guard: Option<(IntValue<'ctx>, PointerValue<'ctx>)>,
        old: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        let (s, tc) = (a.elem, a.elem.compute());
        let (_, cd) = Self::tile_dims(a);
        let (lo, hi) = (self.i64c(0), self.i64c(cols as i64));
        self.dyn_loop(lo, hi, |g, j| {
            let (p, t, ok) = g.strided_elem(a, &cd, off, row, j, guard)?;
            let x = g.load_at(p, s, 0)?;
            let x = match ok {
                Some(ok) => {
                    let keep = match old {
                        Some(o) => g.load_elem(o, tc, t)?,
                        None => g.constant(tc, 0.0),
                    };
                    g.b.build_select(ok, x, keep, "").map_err(be)?
                }
                None => x,
            };
            g.store_elem(dst, tc, t, x)
        })
    }

    /// Stores one row of the tile `src` to an access element by element, in a loop over the
    /// columns (as [`Self::strided_load_row`]); with `guard`, elements outside the array, or
    /// where the user's mask `um` is false, are not written.
    pub(super) fn strided_store_row(
        &mut self,
        a: &Access<'ctx>,
        (off, row, cols): (IntValue<'ctx>, IntValue<'ctx>, u32),
        src: PointerValue<'ctx>,
        guard: Option<(IntValue<'ctx>, PointerValue<'ctx>)>,
        um: Option<PointerValue<'ctx>>,
    ) -> Result<(), CodegenError> {
        let (s, tc) = (a.elem, a.elem.compute());
        let (_, cd) = Self::tile_dims(a);
        let (lo, hi) = (self.i64c(0), self.i64c(cols as i64));
        self.dyn_loop(lo, hi, |g, j| {
            let guard = match (guard, um) {
                (Some((row_ok, d)), Some(m)) => {
                    let t = g.b.build_int_add(row, j, "").map_err(be)?;
                    let u = g.load_elem(m, Scalar::Bool, t)?.into_int_value();
                    Some((g.b.build_and(row_ok, u, "").map_err(be)?, d))
                }
                (g, _) => g,
            };
            let (p, t, _) = g.strided_elem(a, &cd, off, row, j, guard)?;
            let x = g.load_elem(src, tc, t)?;
            g.put(p, s, x, false)
        })
    }

    /// Element `j` of a row moved by [`Self::strided_load_row`] or [`Self::strided_store_row`]:
    /// its address in the array (the harmless one where `guard` says it is outside), its
    /// offset in the tile, and whether it is inside (with `guard`).
    #[allow(clippy::type_complexity)]
    fn strided_elem(
        &self,
        a: &Access<'ctx>,
        cd: &SliceDim<'ctx>,
        off: IntValue<'ctx>,
        row: IntValue<'ctx>,
        j: IntValue<'ctx>,
        guard: Option<(IntValue<'ctx>, PointerValue<'ctx>)>,
    ) -> Result<(PointerValue<'ctx>, IntValue<'ctx>, Option<IntValue<'ctx>>), CodegenError> {
        let b = &self.b;
        let o = b.build_int_mul(j, cd.stride, "").map_err(be)?;
        let o = b.build_int_add(off, o, "").map_err(be)?;
        let t = b.build_int_add(row, j, "").map_err(be)?;
        let p = self.raw_ptr(a, o)?;
        let Some((row_ok, dummy)) = guard else { return Ok((p, t, None)) };
        let ci = b.build_int_add(cd.start, j, "").map_err(be)?;
        let col_ok = b.build_int_compare(IntPredicate::ULT, ci, cd.dim, "").map_err(be)?;
        let ok = b.build_and(row_ok, col_ok, "").map_err(be)?;
        let p = b.build_select(ok, p, dummy, "").map_err(be)?.into_pointer_value();
        Ok((p, t, Some(ok)))
    }
}
