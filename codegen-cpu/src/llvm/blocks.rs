//! Blocks of tiles, broadcasts and lines with LLVM (`ExtractBlock`, `InsertBlock`,
//! `Broadcast`, `ExtractLine`, `InsertLine`): the runs that `crate::blocks` plans for both CPU
//! backends, copied with `memcpy` or element by element.

use super::tile::{long_row, segments, shape, width, Operand};
use super::{be, err, Gen};
use crate::CodegenError;
use tilec_midend::{Op, OpKind, Scalar};

/// Most runs of a block copy or broadcast unrolled (the rows of a 64-row tile); more are
/// copied in a loop.
const BLOCK_UNROLL: u32 = 64;

impl<'ctx> Gen<'ctx, '_> {
    /// `ExtractBlock`, `InsertBlock` and `Broadcast`: the runs of `crate::blocks::plan` (after
    /// the tile an insert starts from), each one `memcpy`.
    pub(super) fn block_op(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        let p = crate::blocks::plan(self.f, op).ok_or_else(|| err("a block or broadcast of a non-tile"))?;
        let dst = self.new_tile(op.results[0])?;
        if let Some(t) = p.prefill {
            self.copy(dst, self.tile(t)?, self.f.ty(t).tile_len() * s.bytes())?;
        }
        let src = self.tile(p.src)?;
        let es = s.bytes();
        for k in p.copies {
            let run = self.i64c((k.cols * es) as i64);
            // Up to BLOCK_UNROLL runs unrolled, more in a loop (a sort's network of 256 x 2 blocks made
            // 256 copies per block op, unrolled: seconds of LLVM time).
            self.each_row_unrolled(0, k.rows, 1, s, BLOCK_UNROLL, |g, r| {
                let so = g.b.build_int_mul(r, g.i64c(k.src_stride as i64), "").map_err(be)?;
                let so = g.add_off(so, k.src_off)?;
                let dof = g.b.build_int_mul(r, g.i64c(k.dst_stride as i64), "").map_err(be)?;
                let dof = g.add_off(dof, k.dst_off)?;
                if k.splat {
                    // A column broadcast: the row's element repeated across the run, a vector
                    // per segment (one vector of a long run's length took seconds to compile).
                    let x = g.load_elem(src, s, so)?;
                    if long_row(k.cols, s) {
                        let v = g.splat(x, width(s))?;
                        return g.segment_loop(k.cols, s, |g, c0| g.store_vec(dst, s, g.add_dyn(dof, c0)?, v));
                    }
                    for (c0, len) in segments(k.cols, s) {
                        let v = g.splat(x, len)?;
                        g.store_vec(dst, s, g.add_off(dof, c0)?, v)?;
                    }
                    return Ok(());
                }
                let (sp, dp) = (g.elem_ptr(src, s, so)?, g.elem_ptr(dst, s, dof)?);
                g.b.build_memcpy(dp, es, sp, es, run).map_err(be)?;
                Ok(())
            })?;
        }
        Ok(())
    }

    /// `ExtractLine(d)` (zeros when the index is out of range) and `InsertLine(d)` (the tile,
    /// then the line written where the index is in range): a row is one vector copy, a column
    /// one element per row (`crate::blocks::line`).
    pub(super) fn line_op(&mut self, op: &Op, d: u8, s: Scalar) -> Result<(), CodegenError> {
        let insert = matches!(op.kind, OpKind::InsertLine(_));
        let t = self.f.ty(op.args[0]);
        let (bytes, (rows, cols)) = (t.tile_len() * s.bytes(), shape(t));
        let l = crate::blocks::line(rows, cols, d);
        let src = self.tile(op.args[0])?;
        let line = if insert { self.tile(op.args[2])? } else { self.new_tile(op.results[0])? };
        let tile = if insert { self.new_tile(op.results[0])? } else { src };
        if insert && tile != src {
            self.copy(tile, src, bytes)?;
        }
        if !insert {
            let zero = self.constant(s, 0.0);
            self.elementwise(line, (1, l.len), s, &[Operand::Scalar(zero)], |_, a| Ok(a[0]))?;
        }
        let k = self.wide(self.val(op.args[1])?)?;
        let ok = self.b.build_int_compare(inkwell::IntPredicate::ULT, k, self.i64c(l.lines as i64), "").map_err(be)?;
        self.guarded(ok, |g| {
            let first = g.b.build_int_mul(k, g.i64c(l.step as i64), "").map_err(be)?;
            if l.stride == 1 {
                let (at, run) = (g.elem_ptr(tile, s, first)?, g.i64c((l.len * s.bytes()) as i64));
                let (dp, sp) = if insert { (at, line) } else { (line, at) };
                g.b.build_memcpy(dp, s.bytes(), sp, s.bytes(), run).map_err(be)?;
                return Ok(());
            }
            g.each_row(0, l.len, 1, s, |g, i| {
                let ti = g.b.build_int_mul(i, g.i64c(l.stride as i64), "").map_err(be)?;
                let ti = g.b.build_int_add(ti, first, "").map_err(be)?;
                let (dp, di, sp, si) = if insert { (tile, ti, line, i) } else { (line, i, tile, ti) };
                let x = g.load_elem(sp, s, si)?;
                g.store_elem(dp, s, di, x)
            })
        })
    }
}
