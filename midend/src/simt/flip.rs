//! SIMT lowering of `Flip` (a tile reversed along an axis). A replicated vector and the
//! columns of a row-distributed matrix are reversed by renaming registers. Reversing the rows
//! (or a distributed long vector, a matrix of one column)
//! moves every row to another lane: destination row `r` (slot `r / lanes` of lane
//! `r % lanes`) is source row `R - 1 - r`, which lives in lane `(R - 1 - r) % lanes`, in one
//! of at most two slots for all lanes of a destination slot; each of those slots is shuffled
//! from that lane and the lane keeps the one its row needs. The code grows with the registers
//! per lane (two shuffles each at most), not with the tile.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::Scalar;

impl Lower<'_> {
    /// `Flip(axis)` of the lowered tile `t`.
    pub(super) fn flip(&mut self, axis: u8, t: Lv) -> Result<Lv, SimtError> {
        match t {
            Lv::Vec { n, elem, mut rep, .. } => {
                rep.reverse();
                Ok(Lv::Vec { n, elem, rep, dist: None })
            }
            Lv::Mat { rows, cols, elem, regs } if axis == 1 => {
                let regs = regs.chunks(cols as usize).flat_map(|row| row.iter().rev().copied()).collect();
                Ok(Lv::Mat { rows, cols, elem, regs })
            }
            Lv::Mat { rows, cols, elem, regs } => Ok(self.flip_rows(rows, cols, elem, &regs)),
            // A distributed vector is a one-column matrix: its rows reversed.
            Lv::Dist { n, elem, regs } => match self.flip_rows(n, 1, elem, &regs) {
                Lv::Mat { regs, .. } => Ok(Lv::Dist { n, elem, regs }),
                _ => Err(err("flip of a distributed vector")),
            },
            _ => Err(err("flip of a non-tile")),
        }
    }

    fn flip_rows(&mut self, rows: u32, cols: u32, elem: Scalar, regs: &[Value]) -> Lv {
        let lanes = self.lanes;
        let mut out = Vec::with_capacity(regs.len());
        for s in 0..self.slots(rows) {
            // The source row of this lane's row in slot `s` (0 for padding rows).
            let last = self.i32c(rows as i64 - 1);
            let src = self.bin(BinOp::Sub, last, self.rows[s as usize], Scalar::I32);
            let zero = self.i32c(0);
            let below = self.cmp(CmpOp::Lt, src, zero);
            let src = self.select(below, zero, src, Scalar::I32);
            let lc = self.i32c(lanes as i64);
            let from = self.bin(BinOp::Rem, src, lc, Scalar::I32);
            let slot = self.bin(BinOp::Div, src, lc, Scalar::I32);
            // The source slots of the real rows of slot `s`.
            let hi = (rows - 1 - s * lanes) / lanes;
            let lo = rows.saturating_sub((s + 1) * lanes) / lanes;
            let here: Vec<(u32, Value)> = (lo..=hi)
                .map(|c| {
                    let cc = self.i32c(c as i64);
                    (c, self.cmp(CmpOp::Eq, slot, cc))
                })
                .collect();
            for j in 0..cols {
                let mut x: Option<Value> = None;
                for (c, at) in &here {
                    let y = self.shuffle_from(regs[(c * cols + j) as usize], from, elem);
                    x = Some(match x {
                        None => y,
                        Some(x) => self.select(*at, y, x, elem),
                    });
                }
                out.push(x.expect("a source slot"));
            }
        }
        Lv::Mat { rows, cols, elem, regs: out }
    }
}
