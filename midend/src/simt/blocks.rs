//! SIMT lowering of blocks of tiles (`ExtractBlock`, `InsertBlock`: `t[a:b, c:d]` as a value
//! and as an assignment target) and of `Broadcast` (a vector or a row repeated down a tile's
//! rows, a column across its columns: register choices, and one shuffle per column to spread
//! a `tile<1, N>` from lane 0). Columns and vector elements are registers of every lane, so
//! they are chosen statically; rows move between lanes when the row offset is not a multiple
//! of the lane count: one shuffle per register, whose sending lane picks which of its two
//! candidate registers to send (so a block costs one select and one shuffle per element).

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::Scalar;

impl Lower<'_> {
    /// `(lane + d) mod lanes`, for `0 < d < lanes`.
    fn lane_plus(&mut self, d: u32) -> Value {
        let dv = self.i32c(d as i64);
        let up = self.bin(BinOp::Add, self.lane, dv, Scalar::I32);
        let n = self.i32c(self.lanes as i64);
        let wraps = self.cmp(CmpOp::Ge, up, n);
        let down = self.bin(BinOp::Sub, up, n, Scalar::I32);
        self.select(wraps, down, up, Scalar::I32)
    }

    /// Register `slot * cols + c` of a row-distributed tile, or `zero` past its slots (a row
    /// past the tile's extent, whose value is never read).
    fn reg_or(regs: &[Value], slot: i64, cols: u32, c: u32, zero: Value) -> Value {
        if slot < 0 {
            return zero;
        }
        regs.get(slot as usize * cols as usize + c as usize).copied().unwrap_or(zero)
    }

    /// `ExtractBlock(at)`: the block of `t` at offsets `at` with shape `shape`.
    pub(super) fn extract_block(&mut self, at: &[u32], t: Lv, shape: &[u32]) -> Result<Lv, SimtError> {
        match t {
            Lv::Vec { elem, rep, .. } => {
                let (o, n) = (at[0] as usize, shape[0] as usize);
                Ok(Lv::Vec { n: shape[0], elem, rep: rep[o..o + n].to_vec(), dist: None })
            }
            Lv::Mat { cols, elem, regs, .. } => {
                let (r0, c0, nr, nc) = (at[0], at[1], shape[0], shape[1]);
                let (q, m) = (r0 / self.lanes, r0 % self.lanes);
                let zero = self.elemc(0.0, elem);
                // Lane l takes row l + r0 + s * lanes from lane (l + m) mod lanes, which holds
                // it in slot s + q when it is lane m or above, else in slot s + q + 1.
                let (src, high) = if m == 0 {
                    (None, None)
                } else {
                    let src = self.lane_plus(m);
                    let mv = self.i32c(m as i64);
                    (Some(src), Some(self.cmp(CmpOp::Ge, self.lane, mv)))
                };
                let mut out = Vec::new();
                for s in 0..self.slots(nr) {
                    for c in c0..c0 + nc {
                        let a = Self::reg_or(&regs, (s + q) as i64, cols, c, zero);
                        let x = match (src, high) {
                            (Some(src), Some(high)) => {
                                let b = Self::reg_or(&regs, (s + q + 1) as i64, cols, c, zero);
                                let x = self.select(high, a, b, elem);
                                self.shuffle_from(x, src, elem)
                            }
                            _ => a,
                        };
                        out.push(x);
                    }
                }
                Ok(Lv::Mat { rows: nr, cols: nc, elem, regs: out })
            }
            _ => Err(err("a block of a non-tile")),
        }
    }

    /// `InsertBlock(at)`: `t` with the block at offsets `at` replaced by `b`.
    pub(super) fn insert_block(&mut self, at: &[u32], t: Lv, b: Lv) -> Result<Lv, SimtError> {
        match (t, b) {
            (Lv::Vec { n, elem, mut rep, .. }, Lv::Vec { rep: brep, .. }) => {
                let o = at[0] as usize;
                rep[o..o + brep.len()].copy_from_slice(&brep);
                Ok(Lv::Vec { n, elem, rep, dist: None })
            }
            (Lv::Mat { rows, cols, elem, mut regs }, Lv::Mat { rows: nr, cols: nc, regs: bregs, .. }) => {
                let (r0, c0) = (at[0], at[1]);
                let (q, m) = (r0 / self.lanes, r0 % self.lanes);
                let zero = self.elemc(0.0, elem);
                // Lane l's row l + s * lanes is block row l + s * lanes - r0, on lane
                // (l - m) mod lanes; that lane p holds it in slot s - q when p + m < lanes,
                // else in slot s - q - 1.
                let (src, low) = if m == 0 {
                    (None, None)
                } else {
                    let src = self.lane_plus(self.lanes - m);
                    let lim = self.i32c((self.lanes - m) as i64);
                    (Some(src), Some(self.cmp(CmpOp::Lt, self.lane, lim)))
                };
                let (lo, hi) = (self.i32c(r0 as i64), self.i32c((r0 + nr) as i64));
                for s in r0 / self.lanes..=(r0 + nr - 1) / self.lanes {
                    if s >= self.slots(rows) {
                        break;
                    }
                    let row = self.rows[s as usize];
                    let ge = self.cmp(CmpOp::Ge, row, lo);
                    let lt = self.cmp(CmpOp::Lt, row, hi);
                    let inside = self.bin(BinOp::And, ge, lt, Scalar::Bool);
                    for c in 0..nc {
                        let a = Self::reg_or(&bregs, s as i64 - q as i64, nc, c, zero);
                        let x = match (src, low) {
                            (Some(src), Some(low)) => {
                                let b = Self::reg_or(&bregs, s as i64 - q as i64 - 1, nc, c, zero);
                                let x = self.select(low, a, b, elem);
                                self.shuffle_from(x, src, elem)
                            }
                            _ => a,
                        };
                        let k = (s * cols + c0 + c) as usize;
                        regs[k] = self.select(inside, x, regs[k], elem);
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs })
            }
            _ => Err(err("a block of a non-tile, or of another rank")),
        }
    }

    /// `Broadcast`: `t` repeated to `shape`.
    pub(super) fn broadcast(&mut self, t: Lv, shape: &[u32]) -> Result<Lv, SimtError> {
        let pick = |n: u32, i: u32| if n == 1 { 0 } else { i as usize };
        match (t, shape) {
            (Lv::Vec { n: sn, elem, rep, .. }, &[n]) => {
                let rep = (0..n).map(|i| rep[pick(sn, i)]).collect();
                Ok(Lv::Vec { n, elem, rep, dist: None })
            }
            (Lv::Vec { n: sn, elem, rep, .. }, &[rows, cols]) => {
                let regs = (0..self.slots(rows) * cols).map(|k| rep[pick(sn, k % cols)]).collect();
                Ok(Lv::Mat { rows, cols, elem, regs })
            }
            (Lv::Mat { rows: sr, cols: sc, elem, regs: src }, &[rows, cols]) => {
                // A single row lives in slot 0 of lane 0: each column is broadcast from there.
                let line: Vec<Value> = if sr == rows {
                    Vec::new()
                } else {
                    (0..sc).map(|c| self.shuffle(src[c as usize], 0, elem)).collect()
                };
                let mut regs = Vec::new();
                for s in 0..self.slots(rows) {
                    for c in 0..cols {
                        regs.push(if sr == rows { src[(s * sc) as usize + pick(sc, c)] } else { line[pick(sc, c)] });
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs })
            }
            _ => Err(err("a broadcast to a shape of lower rank")),
        }
    }
}
