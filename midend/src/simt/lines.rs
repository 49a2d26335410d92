//! SIMT lowering of lines of matrix tiles at a run-time index (`ExtractLine`, `InsertLine`:
//! `t[k, :]` and `t[:, k]`). Row `r` of a row-distributed tile is in slot `r / lanes` of lane
//! `r % lanes`, so with `k` uniform across the lanes:
//!
//! - row `k`: each lane chooses slot `k / lanes` of each column (a select per slot and
//!   column), then every element comes from lane `k % lanes` (one shuffle per element);
//! - column `k`: each lane chooses column `k` of each of its slots (a select per slot and
//!   column), which is the column in its row-distributed form;
//! - writes: a select per register, on `rows[s] == k` (a row) or `c == k` (a column), taking
//!   the new line's replicated (row) or row-distributed (column) elements; a row given in its
//!   distributed form (`dist.rs`) is broadcast one element at a time, just before its selects.
//!
//! The code grows with the registers per lane, not with the tile's elements. A constant `k`
//! picks its registers and source lane directly. Out of range, a read gives zeros and a write
//! changes nothing.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::Scalar;

impl Lower<'_> {
    /// `ExtractLine(d)` and `InsertLine(d)` of the source op `op`.
    pub(super) fn line_op(&mut self, op: &Op, d: u8) -> Result<Lv, SimtError> {
        let Lv::Mat { rows, cols, elem, regs } = self.get(op.args[0])? else {
            return Err(err("a line of a non-matrix"));
        };
        let k = self.scalar(op.args[1])?;
        let known = self.src.body.int_const(op.args[1]);
        let lines = if d == 0 { rows } else { cols };
        let known = known.filter(|c| (0..lines as i64).contains(c));
        let m = Mat { rows, cols, elem, regs };
        match (op.kind.clone(), d) {
            (OpKind::ExtractLine(_), 0) => Ok(self.read_row(&m, k, known)),
            (OpKind::ExtractLine(_), _) => Ok(self.read_column(&m, k, known)),
            (_, 0) => {
                let v = match self.get(op.args[2])? {
                    Lv::Vec { rep, .. } => Line::Rep(rep),
                    Lv::Dist { regs, .. } => Line::Dist(regs),
                    _ => return Err(err("a row of a non-vector")),
                };
                Ok(self.write_row(m, k, known, &v))
            }
            _ => {
                let v = self.get(op.args[2])?;
                let dv = self.dist(&v)?;
                Ok(self.write_column(m, k, known, &dv))
            }
        }
    }

    /// The conditions `k == i` for `i` in `0..n`.
    fn is_index(&mut self, k: Value, n: u32) -> Vec<Value> {
        (0..n)
            .map(|i| {
                let ic = self.i32c(i as i64);
                self.cmp(CmpOp::Eq, k, ic)
            })
            .collect()
    }

    fn read_row(&mut self, m: &Mat, k: Value, known: Option<i64>) -> Lv {
        let (lanes, slots) = (self.lanes, self.slots(m.rows));
        let zero = self.elemc(0.0, m.elem);
        let rep = match known {
            Some(c) => {
                let (slot, src) = (c as u32 / lanes, c as u32 % lanes);
                (0..m.cols).map(|j| self.shuffle(m.regs[(slot * m.cols + j) as usize], src, m.elem)).collect()
            }
            None => {
                let lc = self.i32c(lanes as i64);
                let slot = self.bin(BinOp::Div, k, lc, Scalar::I32);
                let at = self.is_index(slot, slots);
                let src = self.bin(BinOp::Rem, k, lc, Scalar::I32);
                let ok = self.in_range(k, m.rows);
                let z = self.i32c(0);
                let src = self.select(ok, src, z, Scalar::I32);
                (0..m.cols)
                    .map(|j| {
                        let mut x = m.regs[j as usize];
                        for (s, here) in at.iter().enumerate().skip(1) {
                            x = self.select(*here, m.regs[s * m.cols as usize + j as usize], x, m.elem);
                        }
                        let y = self.shuffle_from(x, src, m.elem);
                        self.select(ok, y, zero, m.elem)
                    })
                    .collect()
            }
        };
        Lv::Vec { n: m.cols, elem: m.elem, rep, dist: None }
    }

    fn read_column(&mut self, m: &Mat, k: Value, known: Option<i64>) -> Lv {
        let slots = self.slots(m.rows);
        let dist: Vec<Value> = match known {
            Some(c) => (0..slots).map(|s| m.regs[(s * m.cols) as usize + c as usize]).collect(),
            None => {
                let at = self.is_index(k, m.cols);
                let zero = self.elemc(0.0, m.elem);
                (0..slots as usize)
                    .map(|s| {
                        let row = &m.regs[s * m.cols as usize..(s + 1) * m.cols as usize];
                        at.iter().zip(row).fold(zero, |x, (here, r)| self.select(*here, *r, x, m.elem))
                    })
                    .collect()
            }
        };
        if self.is_dist(m.rows) {
            return Lv::Dist { n: m.rows, elem: m.elem, regs: dist };
        }
        self.vec_from_dist(m.rows, m.elem, dist)
    }

    /// Row `k` of `m` replaced by `line`. A distributed line's elements are broadcast from
    /// their lanes one at a time, each just before the selects that take it, so that no
    /// replicated copy of the row is alive at once.
    fn write_row(&mut self, m: Mat, k: Value, known: Option<i64>, line: &Line) -> Lv {
        let (lanes, slots, cols) = (self.lanes, self.slots(m.rows), m.cols as usize);
        let mut regs = m.regs;
        let ok = self.in_range(k, m.rows);
        let mut heres = Vec::new();
        for s in 0..slots {
            if known.is_some_and(|c| c as u32 / lanes != s) {
                continue;
            }
            let at = self.cmp(CmpOp::Eq, self.rows[s as usize], k);
            heres.push((s as usize, self.bin(BinOp::And, at, ok, Scalar::Bool)));
        }
        for j in 0..cols {
            let x = match line {
                Line::Rep(rep) => rep[j],
                Line::Dist(d) => self.shuffle(d[j / lanes as usize], j as u32 % lanes, m.elem),
            };
            for (s, here) in &heres {
                let r = &mut regs[s * cols + j];
                *r = self.select(*here, x, *r, m.elem);
            }
        }
        Lv::Mat { rows: m.rows, cols: m.cols, elem: m.elem, regs }
    }

    fn write_column(&mut self, m: Mat, k: Value, known: Option<i64>, dist: &[Value]) -> Lv {
        let (slots, cols) = (self.slots(m.rows) as usize, m.cols as usize);
        let mut regs = m.regs;
        match known {
            Some(c) => (0..slots).for_each(|s| regs[s * cols + c as usize] = dist[s]),
            None => {
                let at = self.is_index(k, m.cols);
                for s in 0..slots {
                    for (j, here) in at.iter().enumerate() {
                        let r = regs[s * cols + j];
                        regs[s * cols + j] = self.select(*here, dist[s], r, m.elem);
                    }
                }
            }
        }
        Lv::Mat { rows: m.rows, cols: m.cols, elem: m.elem, regs }
    }
}

/// A line written into a matrix tile: replicated (every lane holds every element) or
/// distributed over the lanes (`dist.rs`).
enum Line {
    Rep(Vec<Value>),
    Dist(Vec<Value>),
}

/// A row-distributed matrix tile's registers (`Lv::Mat`'s fields).
struct Mat {
    rows: u32,
    cols: u32,
    elem: Scalar,
    regs: Vec<Value>,
}
