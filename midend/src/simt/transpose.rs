//! SIMT lowering of `Transpose` on row-distributed tiles.
//!
//! With a power-of-two lane count `L`, the tile is cut into `B x B` blocks (`B = L`, or the
//! next power of two above both extents when the whole tile fits in fewer lanes), padded
//! with zeros past the tile's columns. Each block is transposed in registers by the
//! butterfly ("xor") exchange: for each bit `d = 1, 2, .., B/2`, lane `l` trades with lane
//! `l ^ d` the registers whose index bit `d` differs from the lane's, so after every bit has
//! been exchanged, register `j` of lane `l` holds the block's element `(j, l)`. That is
//! `log2(B) * B / 2` shuffles and `3` selects per shuffle per block, against one shuffle and
//! one select per element for a broadcast of every element (`R * C` shuffles, the form kept
//! for other lane counts and for thin tiles, where it takes fewer shuffles). It is the recursive block-swap transpose of Warren, Hacker's
//! Delight, 2nd ed., §7-3 ("Transposing a Bit Matrix"), with lanes for rows and registers
//! for columns.
//!
//! A transpose that is only stored needs no shuffles at all ([`stored_transposes`]): its
//! store (`ops.rs`) stores the tile with the slice dimensions' roles swapped, so the lane
//! that holds row `j` of the tile stores it as column `j` of the block (potrs's
//! `X[..] = transpose(t)`: `potrs_batched` 4096 x 92 x 92 f32 on an H200, 2.29 -> 1.91 ms).
//! Loads were fused the same way too, a product's right operand `transpose(A[..])` loaded
//! transposed, and left out: potrf and potrs gained 5% and 11%, but trsm lost 22% (128 -> 156
//! registers per lane, 16 -> 12 warps per SM; bench/README.md).

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::Scalar;
use std::collections::HashMap;

/// The `transpose(t)` results of a function used only as the value of a 2-D tile `Store`,
/// each with its `t`: stored transposed by that store, with no shuffles.
pub(super) fn stored_transposes(f: &Function) -> HashMap<Value, Value> {
    let mut uses = HashMap::new();
    f.body.count_uses(&mut uses);
    let mut transposes = HashMap::new();
    find_transposes(&f.body, &mut transposes);
    let mut out = HashMap::new();
    find_stores(&f.body, &uses, &transposes, &mut out);
    out
}

fn find_transposes(r: &Region, out: &mut HashMap<Value, Value>) {
    for op in &r.ops {
        for reg in &op.regions {
            find_transposes(reg, out);
        }
        if op.kind == OpKind::Transpose {
            out.insert(op.results[0], op.args[0]);
        }
    }
}

fn find_stores(
    r: &Region,
    uses: &HashMap<Value, usize>,
    transposes: &HashMap<Value, Value>,
    out: &mut HashMap<Value, Value>,
) {
    for op in &r.ops {
        for reg in &op.regions {
            find_stores(reg, uses, transposes, out);
        }
        let OpKind::Store(kinds) = &op.kind else {
            continue;
        };
        let v = op.args[1 + kinds.len()];
        let two_slices = kinds.iter().filter(|k| matches!(k, Index::Slice(_))).count() == 2;
        if let (Some(t), true, Some(1)) = (transposes.get(&v), two_slices, uses.get(&v)) {
            out.insert(v, *t);
        }
    }
}

impl Lower<'_> {
    /// `transpose(t)` of a `tile<T, R, C>`: a `tile<T, C, R>`.
    pub(super) fn transpose(&mut self, t: Lv) -> Result<Lv, SimtError> {
        let Lv::Mat { rows, cols, elem, regs } = t else {
            return Err(err("transpose of a non-matrix"));
        };
        let lanes = self.lanes;
        let b = if rows.max(cols) < lanes { rows.max(cols).next_power_of_two() } else { lanes };
        // Shuffles of each form: the butterfly's grow with its padded blocks, so thin tiles
        // (a row or a column) are cheaper to broadcast.
        let exchanges = self.slots(rows) * cols.div_ceil(b) * b.trailing_zeros() * b / 2;
        if !lanes.is_power_of_two() || exchanges >= rows * cols {
            return Ok(self.transpose_broadcast(rows, cols, elem, &regs));
        }
        let zero = self.elemc(0.0, elem);
        let out_slots = self.slots(cols);
        let mut out = vec![zero; (out_slots * rows) as usize];
        // In-block register `j` of block (bi, bj) is column `bj * b + j` of row slot `bi`
        // (b == lanes whenever there is more than one slot or block column).
        for bi in 0..self.slots(rows) {
            for bj in 0..cols.div_ceil(b) {
                let mut blk: Vec<Value> = (0..b)
                    .map(|j| {
                        let c = bj * b + j;
                        if c < cols {
                            regs[(bi * cols + c) as usize]
                        } else {
                            zero
                        }
                    })
                    .collect();
                let mut bit = 0;
                while (1 << bit) < b {
                    self.exchange(&mut blk, bit, elem);
                    bit += 1;
                }
                // Lane l now holds row `bj * b + l` of the result, its columns `bi * b + j`.
                for (j, x) in blk.into_iter().enumerate() {
                    let c = bi * b + j as u32;
                    if c < rows {
                        out[(bj * rows + c) as usize] = x;
                    }
                }
            }
        }
        Ok(Lv::Mat { rows: cols, cols: rows, elem, regs: out })
    }

    /// One butterfly step on bit `2^bit`: registers `p` and `p | d` (`p` without bit `d`) of
    /// lane `l` and of its partner `l ^ d` swap the off-diagonal pair, so that element
    /// `(l, j)` moves to `(l ^ d, j ^ d)` where bit `d` of `l` and of `j` differ. The lane
    /// with the bit clear sends `p | d` and receives into it; its partner sends `p` and
    /// receives into it.
    fn exchange(&mut self, blk: &mut [Value], bit: usize, elem: Scalar) {
        let d = 1usize << bit;
        let low = self.low_bits[bit];
        let partner = self.partners[bit];
        for p in (0..blk.len()).filter(|p| p & d == 0) {
            let (x, y) = (blk[p], blk[p | d]);
            let send = self.select(low, y, x, elem);
            let got = self.shuffle_from(send, partner, elem);
            blk[p] = self.select(low, x, got, elem);
            blk[p | d] = self.select(low, got, y, elem);
        }
    }

    /// Transpose by broadcasting every element from its lane (`R * C` shuffles), each kept
    /// by the lane whose row it lands in: for lane counts that are not powers of two.
    fn transpose_broadcast(&mut self, rows: u32, cols: u32, elem: Scalar, regs: &[Value]) -> Lv {
        let zero = self.elemc(0.0, elem);
        let out_slots = self.slots(cols);
        let mut out = vec![zero; (out_slots * rows) as usize];
        for c in 0..rows {
            for j in 0..cols {
                let x = self.shuffle(regs[((c / self.lanes) * cols + j) as usize], c % self.lanes, elem);
                let jc = self.i32c(j as i64);
                for s in 0..out_slots {
                    let here = self.cmp(CmpOp::Eq, self.rows[s as usize], jc);
                    let k = (s * rows + c) as usize;
                    out[k] = self.select(here, x, out[k], elem);
                }
            }
        }
        Lv::Mat { rows: cols, cols: rows, elem, regs: out }
    }
}
