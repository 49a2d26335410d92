//! SIMT lowering of `Reshape` through shared memory, as GPU kernels change layouts: every lane
//! stores the elements it holds into a shared array at their row-major positions, a barrier,
//! then every lane loads the elements of its registers in the new shape's layout, and a second
//! barrier (so that the next reshape, or this one in the next loop iteration, does not overwrite
//! elements still being read). Every reshape of an element type uses one shared array, sized
//! for the largest and allocated at entry. The code grows with the tile (one element per
//! position), the registers per lane with the layouts only.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::{Scalar, Type};

impl Lower<'_> {
    /// `Reshape` of the source op `op`, through the element type's scratch array (allocated at
    /// entry, `Lower::scratch`).
    pub(super) fn reshape(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let (Type::Tile { elem, .. }, Type::Tile { shape, .. }) =
            (self.src.ty(op.args[0]).clone(), self.src.ty(op.results[0]).clone())
        else {
            return Err(err("reshape of a non-tile"));
        };
        let a = *self.scratch.get(&elem).ok_or_else(|| err("a reshape without its scratch array"))?;
        let t = self.get(op.args[0])?;
        self.spill(a, &t);
        self.emit(OpKind::Barrier, vec![], vec![]);
        let out = self.fill_from(a, elem, &shape);
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(out)
    }

    /// This lane's masked row-major positions (index -1, out of bounds, for padding rows) of
    /// the `rows x cols` row-distributed registers, in register order: element `[r][j]` at
    /// `r * cols + j`, or at `j * rows + r` when `transposed` (its position in the transpose).
    pub(super) fn mat_positions(&mut self, rows: u32, cols: u32, transposed: bool) -> Vec<Value> {
        let mut out = Vec::new();
        for s in 0..self.slots(rows) {
            let real = self.row_lt(s, rows as i64);
            let r = self.rows[s as usize];
            let first = if transposed {
                None
            } else {
                let cc = self.i32c(cols as i64);
                Some(self.bin(BinOp::Mul, r, cc, Scalar::I32))
            };
            for j in 0..cols {
                let i = match first {
                    Some(first) => {
                        let jc = self.i32c(j as i64);
                        self.bin(BinOp::Add, first, jc, Scalar::I32)
                    }
                    None => {
                        let jc = self.i32c((j * rows) as i64);
                        self.bin(BinOp::Add, jc, r, Scalar::I32)
                    }
                };
                out.push(self.masked(real, i));
            }
        }
        out
    }

    /// This lane's masked positions of the `n` elements of a distributed vector.
    fn dist_positions(&mut self, n: u32) -> Vec<Value> {
        (0..self.slots(n))
            .map(|s| {
                let real = self.row_lt(s, n as i64);
                self.masked(real, self.rows[s as usize])
            })
            .collect()
    }

    /// `a[i] = x` (one element of a 1-D shared array).
    pub(super) fn put(&mut self, a: Value, i: Value, x: Value) {
        self.emit(OpKind::Store(vec![Index::At]), vec![a, i, x], vec![]);
    }

    /// `a[i]` (one element of a 1-D shared array of `elem`).
    pub(super) fn get_at(&mut self, a: Value, i: Value, elem: Scalar) -> Value {
        self.emit1(OpKind::Load(vec![Index::At]), vec![a, i], Type::Scalar(elem))
    }

    /// Stores each element of `t` that this lane holds at its row-major position in `a`.
    pub(super) fn spill(&mut self, a: Value, t: &Lv) {
        let (positions, regs) = match t {
            Lv::Mat { rows, cols, regs, .. } => (self.mat_positions(*rows, *cols, false), regs),
            Lv::Dist { n, regs, .. } => (self.dist_positions(*n), regs),
            Lv::Vec { rep, .. } => {
                // Element i is stored by lane i % lanes.
                let positions = (0..rep.len())
                    .map(|i| {
                        let owner = self.i32c(i as i64 % self.lanes as i64);
                        let mine = self.cmp(CmpOp::Eq, self.lane, owner);
                        let ic = self.i32c(i as i64);
                        self.masked(mine, ic)
                    })
                    .collect();
                (positions, rep)
            }
            Lv::Scalar(_) | Lv::Array(_) => return,
        };
        for (i, x) in positions.into_iter().zip(regs) {
            self.put(a, i, *x);
        }
    }

    /// The tile of `shape` whose row-major elements are `a`'s, in its canonical layout.
    fn fill_from(&mut self, a: Value, elem: Scalar, shape: &[u32]) -> Lv {
        let load = |l: &mut Self, positions: Vec<Value>| -> Vec<Value> {
            positions.into_iter().map(|i| l.get_at(a, i, elem)).collect()
        };
        match *shape {
            [rows, cols] => {
                let p = self.mat_positions(rows, cols, false);
                Lv::Mat { rows, cols, elem, regs: load(self, p) }
            }
            [n] if self.is_dist(n) => {
                let p = self.dist_positions(n);
                Lv::Dist { n, elem, regs: load(self, p) }
            }
            [n] => {
                // Every lane loads every element.
                let p = (0..n).map(|i| self.i32c(i as i64)).collect();
                Lv::Vec { n, elem, rep: load(self, p), dist: None }
            }
            _ => Lv::Vec { n: 0, elem, rep: Vec::new(), dist: None },
        }
    }
}
