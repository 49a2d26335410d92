//! Several programs per warp. A SIMT form of `lanes < 32` lanes runs `32 / lanes` programs
//! in one warp (one CUDA block of 32 threads), each in its own *segment* of `lanes`
//! consecutive threads: a 16x16 tile occupies 16 lanes, and the warp's other 16 run the next
//! program instead of padding rows. Within its segment a program sees the lane ids
//! `0..lanes`; its shuffles read its own segment only (`shfl.sync` with the segment's member
//! mask and width, as CUDA's `__shfl_sync(mask, v, src, width)`), and its barriers are
//! `bar.warp.sync` of the segment, which also orders the segment's memory accesses (PTX ISA,
//! `bar.warp.sync`). So the programs of a warp never wait for each other, and a program
//! whose id is past the grid returns at entry. Each program has its own copy of every shared
//! array (`memory.rs`): the scratch arrays of staged products and reshapes. Kernels that
//! declare shared arrays keep 32 lanes (one program per block; `lower_for_warp`).

use super::{be, Gen};
use crate::PtxError;
use inkwell::values::IntValue;
use inkwell::IntPredicate;

/// Threads per CUDA block: one warp.
pub(crate) const WARP: u32 = 32;

/// This thread's program segment, computed once at entry.
#[derive(Clone, Copy)]
pub(crate) struct Segment<'ctx> {
    /// The lane id within the segment (`tid.x % lanes`).
    pub(crate) lane: IntValue<'ctx>,
    /// The program id on grid axis 0: `(ctaid.x + chunk offset) * (32 / lanes) + tid.x / lanes`.
    pub(crate) program: IntValue<'ctx>,
    /// The member mask of the segment's threads, for shuffles and warp barriers.
    pub(crate) mask: IntValue<'ctx>,
    /// The segment's index in the warp (`tid.x / lanes`): which copy of the shared arrays.
    pub(crate) index: IntValue<'ctx>,
}

impl<'ctx> Gen<'ctx, '_> {
    /// For a SIMT form of fewer than 32 lanes: this thread's segment, with a return at entry
    /// for a program past the end of grid axis 0 (params word 0). `None` at 32 lanes.
    pub(crate) fn segment(&mut self) -> Result<Option<Segment<'ctx>>, PtxError> {
        let lanes = self.k.lanes;
        if lanes >= WARP {
            return Ok(None);
        }
        let i32t = self.cx.i32_type();
        let c = |v: u32| i32t.const_int(v as u64, false);
        let tid = self.call("llvm.nvvm.read.ptx.sreg.tid.x", i32t.into(), &[])?.into_int_value();
        let block = self.call("llvm.nvvm.read.ptx.sreg.ctaid.x", i32t.into(), &[])?.into_int_value();
        let offset = self.param_word(3)?.into_int_value();
        let shift = c(lanes.trailing_zeros());
        let sub = self.b.build_right_shift(tid, shift, false, "").map_err(be)?;
        let lane = self.b.build_and(tid, c(lanes - 1), "").map_err(be)?;
        let first = self.b.build_int_add(block, offset, "").map_err(be)?;
        let first = self.b.build_int_mul(first, c(WARP / lanes), "").map_err(be)?;
        let program = self.b.build_int_add(first, sub, "").map_err(be)?;
        let ones = c((1u32 << lanes) - 1);
        let low = self.b.build_int_mul(sub, c(lanes), "").map_err(be)?;
        let mask = self.b.build_left_shift(ones, low, "").map_err(be)?;
        let count = self.param_word(0)?.into_int_value();
        let past = self.b.build_int_compare(IntPredicate::UGE, program, count, "").map_err(be)?;
        let (exit, run) = (self.cx.append_basic_block(self.f, "past_grid"), self.cx.append_basic_block(self.f, "run"));
        self.b.build_conditional_branch(past, exit, run).map_err(be)?;
        self.b.position_at_end(exit);
        self.b.build_return(None).map_err(be)?;
        self.b.position_at_end(run);
        Ok(Some(Segment { lane, program, mask, index: sub }))
    }

    /// The `c` operand of `shfl.sync.idx`: the clamp lane and the segment mask of `lanes`-wide
    /// segments (`((32 - lanes) << 8) | 0x1f`).
    pub(crate) fn shuffle_clamp(&self) -> u32 {
        ((WARP - self.k.lanes.min(WARP)) << 8) | 0x1f
    }
}
