//! Blocks of tiles on the CPU (`ExtractBlock`, `InsertBlock`): a tile is row-major, so a block
//! is `rows` runs of `cols` contiguous elements, copied run by run (Cranelift here, LLVM in
//! `llvm/tile.rs`, both from [`BlockCopy`]).

use crate::lower::Lower;
use crate::CodegenError;
use cranelift_codegen::ir::{types, InstBuilder};
use cranelift_module::Module as ClModule;
use tilec_midend::{Op, OpKind, Type};

/// Blocks of at most this many rows are copied by unrolled code, larger ones in a loop.
const UNROLL_ROWS: u32 = 16;

/// The runs a block operation copies, in elements: `rows` runs of `cols` elements, from
/// `src_off + r * src_stride` to `dst_off + r * dst_stride` for `r` in `0..rows`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockCopy {
    pub(crate) rows: u32,
    pub(crate) cols: u32,
    pub(crate) src_off: u32,
    pub(crate) src_stride: u32,
    pub(crate) dst_off: u32,
    pub(crate) dst_stride: u32,
}

impl BlockCopy {
    /// The copy of an `ExtractBlock` (from the tile to the block) or an `InsertBlock` (from
    /// the block into the result, which already holds the tile), from the op's types.
    pub(crate) fn of(op: &Op, tile: &Type, block: &Type) -> Option<BlockCopy> {
        let (at, insert) = match &op.kind {
            OpKind::ExtractBlock(at) => (at, false),
            OpKind::InsertBlock(at) => (at, true),
            _ => return None,
        };
        // A 1-D tile is one row.
        let ((_, tc), (br, bc), (r0, c0)) = match (tile, block) {
            (Type::Tile { shape: t, .. }, Type::Tile { shape: b, .. }) if t.len() == 1 => {
                ((1, t[0]), (1, b[0]), (0, at[0]))
            }
            (Type::Tile { shape: t, .. }, Type::Tile { shape: b, .. }) => ((t[0], t[1]), (b[0], b[1]), (at[0], at[1])),
            _ => return None,
        };
        let (inner, outer) = (0, r0 * tc + c0);
        let (src_off, src_stride, dst_off, dst_stride) =
            if insert { (inner, bc, outer, tc) } else { (outer, tc, inner, bc) };
        Some(BlockCopy { rows: br, cols: bc, src_off, src_stride, dst_off, dst_stride })
    }
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// `ExtractBlock` and `InsertBlock`: the result holds the tile (an insert) and the runs
    /// are copied.
    pub(crate) fn block_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let tile = self.f.ty(op.args[0]).clone();
        let insert = matches!(op.kind, OpKind::InsertBlock(_));
        let block = if insert { self.f.ty(op.args[1]).clone() } else { self.f.ty(op.results[0]).clone() };
        let Some(k) = BlockCopy::of(op, &tile, &block) else {
            return Err(crate::err("a block of a non-tile"));
        };
        let src = if insert {
            self.copy_tile_to_result(op.args[0], op.results[0]);
            self.tile_addr(op.args[1])
        } else {
            self.tile_addr(op.args[0])
        };
        let dst = self.tile_addr(op.results[0]);
        let es = tile.elem().bytes() as i64;
        let run = k.cols * tile.elem().bytes();
        if k.rows <= UNROLL_ROWS {
            for r in 0..k.rows as i64 {
                let s = self.b.ins().iadd_imm_s(src, (k.src_off as i64 + r * k.src_stride as i64) * es);
                let d = self.b.ins().iadd_imm_s(dst, (k.dst_off as i64 + r * k.dst_stride as i64) * es);
                self.copy_bytes(d, s, run);
            }
            return Ok(());
        }
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, k.rows as i64);
        self.dyn_loop(lo, hi, |l, r| {
            let so = l.b.ins().imul_imm_s(r, k.src_stride as i64 * es);
            let so = l.b.ins().iadd_imm_s(so, k.src_off as i64 * es);
            let s = l.b.ins().iadd(src, so);
            let dof = l.b.ins().imul_imm_s(r, k.dst_stride as i64 * es);
            let dof = l.b.ins().iadd_imm_s(dof, k.dst_off as i64 * es);
            let d = l.b.ins().iadd(dst, dof);
            l.copy_bytes(d, s, run);
        });
        Ok(())
    }
}
