//! SIMT lowering of `Reshape` through shared memory, as GPU kernels change layouts: every lane
//! stores the elements it holds into a shared array at their row-major positions, a barrier,
//! then every lane loads the elements of its registers in the new shape's layout, and a second
//! barrier (so that the next reshape, or this one in the next loop iteration, does not overwrite
//! elements still being read). The code and the shared memory grow with the tile (one element
//! per position), the registers per lane with the layouts only.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::{Scalar, Type};

impl Lower<'_> {
    /// `Reshape` of the source op `op`; `shared` counts the scratch array's bytes.
    pub(super) fn reshape(&mut self, op: &Op, shared: &mut u32) -> Result<Lv, SimtError> {
        let (Type::Tile { elem, .. }, Type::Tile { shape, .. }) =
            (self.src.ty(op.args[0]).clone(), self.src.ty(op.results[0]).clone())
        else {
            return Err(err("reshape of a non-tile"));
        };
        let n: u32 = shape.iter().product();
        *shared += n * elem.bytes();
        let ty = Type::Array { elem, rank: 1, mutable: true };
        let a = self.emit1(OpKind::AllocShared(vec![n]), vec![], ty);
        let t = self.get(op.args[0])?;
        self.spill(a, &t);
        self.emit(OpKind::Barrier, vec![], vec![]);
        let out = self.fill_from(a, elem, &shape);
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(out)
    }

    /// `a[i] = x` where `keep` (index -1, out of bounds, elsewhere).
    fn put(&mut self, a: Value, i: Value, keep: Option<Value>, x: Value) {
        let i = match keep {
            Some(k) => {
                let m1 = self.i32c(-1);
                self.select(k, i, m1, Scalar::I32)
            }
            None => i,
        };
        self.emit(OpKind::Store(vec![Index::At]), vec![a, i, x], vec![]);
    }

    /// `a[i]` where `keep` (0 elsewhere: out of bounds).
    fn get_at(&mut self, a: Value, i: Value, keep: Option<Value>, elem: Scalar) -> Value {
        let i = match keep {
            Some(k) => {
                let m1 = self.i32c(-1);
                self.select(k, i, m1, Scalar::I32)
            }
            None => i,
        };
        self.emit1(OpKind::Load(vec![Index::At]), vec![a, i], Type::Scalar(elem))
    }

    /// Stores each element of `t` that this lane holds at its row-major position in `a`.
    fn spill(&mut self, a: Value, t: &Lv) {
        match t {
            Lv::Mat { rows, cols, regs, .. } => {
                for s in 0..self.slots(*rows) {
                    let real = self.row_lt(s, *rows as i64);
                    let cc = self.i32c(*cols as i64);
                    let first = self.bin(BinOp::Mul, self.rows[s as usize], cc, Scalar::I32);
                    for j in 0..*cols {
                        let jc = self.i32c(j as i64);
                        let i = self.bin(BinOp::Add, first, jc, Scalar::I32);
                        self.put(a, i, Some(real), regs[(s * cols + j) as usize]);
                    }
                }
            }
            Lv::Vec { rep, .. } => {
                // Element i is stored by lane i % lanes.
                for (i, x) in rep.iter().enumerate() {
                    let owner = self.i32c(i as i64 % self.lanes as i64);
                    let mine = self.cmp(CmpOp::Eq, self.lane, owner);
                    let ic = self.i32c(i as i64);
                    self.put(a, ic, Some(mine), *x);
                }
            }
            Lv::Dist { n, regs, .. } => {
                for (s, x) in regs.iter().enumerate() {
                    let real = self.row_lt(s as u32, *n as i64);
                    let i = self.rows[s];
                    self.put(a, i, Some(real), *x);
                }
            }
            Lv::Scalar(_) | Lv::Array(_) => {}
        }
    }

    /// The tile of `shape` whose row-major elements are `a`'s, in its canonical layout.
    fn fill_from(&mut self, a: Value, elem: Scalar, shape: &[u32]) -> Lv {
        match shape {
            [rows, cols] => {
                let mut regs = Vec::new();
                for s in 0..self.slots(*rows) {
                    let real = self.row_lt(s, *rows as i64);
                    let cc = self.i32c(*cols as i64);
                    let first = self.bin(BinOp::Mul, self.rows[s as usize], cc, Scalar::I32);
                    for j in 0..*cols {
                        let jc = self.i32c(j as i64);
                        let i = self.bin(BinOp::Add, first, jc, Scalar::I32);
                        regs.push(self.get_at(a, i, Some(real), elem));
                    }
                }
                Lv::Mat { rows: *rows, cols: *cols, elem, regs }
            }
            [n] if super::dist::is_dist(*n) => {
                let regs = (0..self.slots(*n))
                    .map(|s| {
                        let real = self.row_lt(s, *n as i64);
                        let i = self.rows[s as usize];
                        self.get_at(a, i, Some(real), elem)
                    })
                    .collect();
                Lv::Dist { n: *n, elem, regs }
            }
            [n] => {
                let rep = (0..*n)
                    .map(|i| {
                        let ic = self.i32c(i as i64);
                        self.get_at(a, ic, None, elem)
                    })
                    .collect();
                Lv::Vec { n: *n, elem, rep, dist: None }
            }
            _ => Lv::Vec { n: 0, elem, rep: Vec::new(), dist: None },
        }
    }
}
