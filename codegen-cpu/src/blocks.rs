//! Blocks of tiles, broadcasts and lines on the CPU (`ExtractBlock`, `InsertBlock`,
//! `Broadcast`, `ExtractLine`, `InsertLine`): a tile is row-major, so a block is `rows` runs of
//! `cols` contiguous elements, a broadcast repeats a row run (or, for a column, splats each
//! row's element across the row), and a line at a run-time index is one contiguous run (a row)
//! or one element per row (a column); all are copied run by run (Cranelift here, LLVM in
//! `llvm/tile.rs`, both from the same [`plan`] and [`line`]).

use crate::lower::{cl_type, Lower};
use crate::memory::flags;
use crate::tile::Operand;
use crate::CodegenError;
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_module::Module as ClModule;
use tilec_midend::{Function, Op, OpKind, Scalar, Type, Value};

/// Blocks of at most this many rows are copied by unrolled code, larger ones in a loop.
const UNROLL_ROWS: u32 = 16;

/// The runs a block operation copies, in elements: `rows` runs of `cols` elements, from
/// `src_off + r * src_stride` to `dst_off + r * dst_stride` for `r` in `0..rows`; with
/// `splat`, each run is the one element at the source repeated (a column broadcast).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlockCopy {
    pub(crate) rows: u32,
    pub(crate) cols: u32,
    pub(crate) src_off: u32,
    pub(crate) src_stride: u32,
    pub(crate) dst_off: u32,
    pub(crate) dst_stride: u32,
    pub(crate) splat: bool,
}

/// What a block or broadcast op does on the CPU: copy `prefill` (a tile) into the result,
/// then copy the runs from the tile `src` into the result.
pub(crate) struct Plan {
    pub(crate) prefill: Option<Value>,
    pub(crate) src: Value,
    pub(crate) copies: Vec<BlockCopy>,
}

/// Where the lines of a matrix tile are: line `k` (of `lines`) is `len` elements, `stride`
/// apart, from element `k * step` of the tile.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub(crate) lines: u32,
    pub(crate) len: u32,
    pub(crate) stride: u32,
    pub(crate) step: u32,
}

/// The lines of a `rows x cols` tile along dimension `d` of `ExtractLine(d)`/`InsertLine(d)`
/// (0: rows, 1: columns).
pub(crate) fn line(rows: u32, cols: u32, d: u8) -> Line {
    if d == 0 {
        Line { lines: rows, len: cols, stride: 1, step: cols }
    } else {
        Line { lines: cols, len: rows, stride: cols, step: 1 }
    }
}

/// `(rows, cols)` of a tile, a 1-D tile being one row.
fn rows_cols(t: &Type) -> Option<(u32, u32)> {
    match t {
        Type::Tile { shape, .. } if shape.len() == 1 => Some((1, shape[0])),
        Type::Tile { shape, .. } if shape.len() == 2 => Some((shape[0], shape[1])),
        _ => None,
    }
}

/// The plan of an `ExtractBlock`, an `InsertBlock` or a `Broadcast` of `f` (`None` for other
/// ops).
pub(crate) fn plan(f: &Function, op: &Op) -> Option<Plan> {
    let (t, r) = (f.ty(op.args[0]), f.ty(*op.results.first()?));
    match &op.kind {
        OpKind::ExtractBlock(at) | OpKind::InsertBlock(at) => {
            let insert = matches!(op.kind, OpKind::InsertBlock(_));
            let b = if insert { f.ty(*op.args.get(1)?) } else { r };
            let ((_, tc), (br, bc)) = (rows_cols(t)?, rows_cols(b)?);
            let (r0, c0) = if at.len() == 1 { (0, at[0]) } else { (at[0], at[1]) };
            let (inner, outer) = (0, r0 * tc + c0);
            let (src_off, src_stride, dst_off, dst_stride) =
                if insert { (inner, bc, outer, tc) } else { (outer, tc, inner, bc) };
            let copies = vec![BlockCopy { rows: br, cols: bc, src_off, src_stride, dst_off, dst_stride, splat: false }];
            let (prefill, src) = if insert { (Some(op.args[0]), op.args[1]) } else { (None, op.args[0]) };
            Some(Plan { prefill, src, copies })
        }
        OpKind::Broadcast => {
            // The operand as rows x cols of the result's rank: a 1-D operand is one row.
            let ((sr, sc), (rr, rc)) = (rows_cols(t)?, rows_cols(r)?);
            let src_stride = if sr == 1 { 0 } else { sc };
            // Every row of the result is a run: the operand's row, or its only row, or (a column
            // or one element, `sc == 1`) the row's element repeated.
            let splat = sc != rc;
            let copies =
                vec![BlockCopy { rows: rr, cols: rc, src_off: 0, src_stride, dst_off: 0, dst_stride: rc, splat }];
            Some(Plan { prefill: None, src: op.args[0], copies })
        }
        _ => None,
    }
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// `ExtractBlock` and `InsertBlock`: the result holds the tile (an insert) and the runs
    /// are copied.
    pub(crate) fn block_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let Some(p) = plan(self.f, op) else {
            return Err(crate::err("a block or broadcast of a non-tile"));
        };
        if let Some(t) = p.prefill {
            self.copy_tile_to_result(t, op.results[0]);
        }
        let src = self.tile_addr(p.src);
        let dst = self.tile_addr(op.results[0]);
        let elem = self.f.ty(op.results[0]).elem();
        for k in p.copies {
            self.copy_runs(src, dst, k, elem);
        }
        Ok(())
    }

    /// `ExtractLine(d)` (zeros when the index is out of range) and `InsertLine(d)` (the tile,
    /// then the line written where the index is in range): one run of the line copied.
    pub(crate) fn line_op(&mut self, op: &Op, d: u8) -> Result<(), CodegenError> {
        let insert = matches!(op.kind, OpKind::InsertLine(_));
        let ty = self.f.ty(op.args[0]).clone();
        let (s, (rows, cols)) = (ty.elem(), ty.rows_cols());
        let l = line(rows, cols, d);
        if insert {
            self.copy_tile_to_result(op.args[0], op.results[0]);
        }
        let (tile, vals) = if insert {
            (self.tile_addr(op.results[0]), self.tile_addr(op.args[2]))
        } else {
            (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]))
        };
        let k = self.val(op.args[1]);
        let k = self.b.ins().sextend(types::I64, k);
        let ok = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, k, l.lines as i64);
        let (yes, no, done) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(ok, yes, &[], no, &[]);
        self.b.switch_to_block(yes);
        let off = self.b.ins().imul_imm_s(k, (l.step * s.bytes()) as i64);
        let at = self.b.ins().iadd(tile, off);
        let (src, dst) = if insert { (vals, at) } else { (at, vals) };
        let (src_stride, dst_stride) = if insert { (1, l.stride) } else { (l.stride, 1) };
        let run = BlockCopy { rows: l.len, cols: 1, src_off: 0, src_stride, dst_off: 0, dst_stride, splat: false };
        let run = if l.stride == 1 { BlockCopy { rows: 1, cols: l.len, ..run } } else { run };
        self.copy_runs(src, dst, run, s);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(no);
        if !insert {
            let z = self.zero(s);
            self.elementwise(l.len, s, &[Operand::Scalar(z)], vals, true, &mut |_, a| Ok(a[0]))?;
        }
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// The address of the row of `extract_line.0` op `op` (an unformed row of a chain,
    /// `chains.rs`): the row in its tile, or for an index out of range the op's own slot,
    /// zeroed.
    pub(crate) fn row_operand(&mut self, op: &Op) -> ir::Value {
        let (s, (rows, cols)) = (self.f.ty(op.args[0]).elem(), self.f.ty(op.args[0]).rows_cols());
        let tile = self.tile_addr(op.args[0]);
        let k = self.val(op.args[1]);
        let k = self.b.ins().sextend(types::I64, k);
        let ok = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, k, rows as i64);
        let (yes, no, done) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        let addr = self.b.append_block_param(done, types::I64);
        self.b.ins().brif(ok, yes, &[], no, &[]);
        self.b.switch_to_block(yes);
        let off = self.b.ins().imul_imm_s(k, (cols * s.bytes()) as i64);
        let at = self.b.ins().iadd(tile, off);
        self.b.ins().jump(done, &[at.into()]);
        self.b.switch_to_block(no);
        let own = self.tile_addr(op.results[0]);
        self.zero_bytes(own, cols * s.bytes());
        self.b.ins().jump(done, &[own.into()]);
        self.b.switch_to_block(done);
        addr
    }

    /// One run of `k` from `s` to `d` (addresses of its first elements).
    fn copy_run_of(&mut self, d: ir::Value, s: ir::Value, k: BlockCopy, elem: Scalar) {
        if !k.splat {
            self.copy_bytes(d, s, k.cols * elem.bytes());
            return;
        }
        let ty = cl_type(elem);
        let x = self.b.ins().load(ty, flags(), s, 0);
        let (es, mut c) = (elem.bytes() as i32, 0u32);
        if let Some(vt) = crate::tile::vec_ty(elem) {
            let lanes = vt.lane_count();
            let v = self.b.ins().splat(vt, x);
            while c + lanes <= k.cols {
                self.b.ins().store(flags(), v, d, c as i32 * es);
                c += lanes;
            }
        }
        for j in c..k.cols {
            self.b.ins().store(flags(), x, d, j as i32 * es);
        }
    }

    /// The runs of `k` from the tile at `src` to the tile at `dst`.
    fn copy_runs(&mut self, src: ir::Value, dst: ir::Value, k: BlockCopy, elem: Scalar) {
        let es = elem.bytes() as i64;
        if k.rows <= UNROLL_ROWS {
            for r in 0..k.rows as i64 {
                let s = self.b.ins().iadd_imm_s(src, (k.src_off as i64 + r * k.src_stride as i64) * es);
                let d = self.b.ins().iadd_imm_s(dst, (k.dst_off as i64 + r * k.dst_stride as i64) * es);
                self.copy_run_of(d, s, k, elem);
            }
            return;
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
            l.copy_run_of(d, s, k, elem);
        });
    }
}
