//! SIMT lowering of matrix products, Cholesky and triangular solves on row-distributed
//! tiles. Every cross-lane read is a broadcast (`Shuffle` from one lane to all) of a register
//! with a static index: rows of a matmul's right operand, the diagonal and columns during
//! Cholesky (Quadrants' Tile16x16 scheme), the triangular factor during solves. A matmul's
//! right operand of 64 elements or more is read from shared memory instead (`staged.rs`).

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::Scalar;
use std::collections::HashMap;

impl Lower<'_> {
    /// Broadcast of element `[p][q]` of a row-distributed matrix, memoised in `cache`.
    fn bcast(
        &mut self,
        regs: &[Value],
        cols: u32,
        p: u32,
        q: u32,
        elem: Scalar,
        cache: &mut HashMap<(u32, u32), Value>,
    ) -> Value {
        if let Some(v) = cache.get(&(p, q)) {
            return *v;
        }
        let v = self.shuffle(regs[((p / self.lanes) * cols + q) as usize], p % self.lanes, elem);
        cache.insert((p, q), v);
        v
    }

    /// The accumulator of a product: `c`'s registers, or `len` zeros.
    fn product_init(&mut self, acc: bool, op: &Op, len: u32, elem: Scalar) -> Result<Vec<Value>, SimtError> {
        Ok(match (acc, self.get(op.args[0])?) {
            (true, Lv::Mat { regs, .. }) => regs,
            _ => {
                let z = self.elemc(0.0, elem);
                vec![z; len as usize]
            }
        })
    }

    /// `a @ b` or `c + a @ b`.
    pub(super) fn matmul(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let acc = op.kind == OpKind::MatmulAcc;
        let base = usize::from(acc);
        let (a, b) = (self.get(op.args[base])?, self.get(op.args[base + 1])?);
        let Lv::Mat { rows: m, cols: k, elem, regs: ra } = a else {
            return Err(err("matmul of a non-matrix"));
        };
        let slots = self.slots(m);
        let staged = self.staging.products.get(&op.results[0]).copied();
        match b {
            Lv::Mat { rows, cols, .. } if staged.is_some() => {
                let how = staged.expect("staged");
                // For `b = transpose(t)`, the lowered `b` is `t`, `n x k`.
                let n = if how == super::staged::Rhs::Transposed { rows } else { cols };
                let mut out = self.product_init(acc, op, slots * n, elem)?;
                self.staged_product(how, &b, &ra, &mut out, (k, n), slots, elem)?;
                Ok(Lv::Mat { rows: m, cols: n, elem, regs: out })
            }
            Lv::Mat { cols: n, regs: rb, .. } => {
                let mut out = self.product_init(acc, op, slots * n, elem)?;
                let mut cache = HashMap::new();
                for kk in 0..k {
                    for c in 0..n {
                        let bkc = self.bcast(&rb, n, kk, c, elem, &mut cache);
                        for s in 0..slots {
                            let i = (s * n + c) as usize;
                            out[i] = self.fma(ra[(s * k + kk) as usize], bkc, out[i], elem);
                        }
                    }
                }
                Ok(Lv::Mat { rows: m, cols: n, elem, regs: out })
            }
            Lv::Vec { rep, .. } => {
                let mut dist = match (acc, self.get(op.args[0])?) {
                    (true, v @ Lv::Vec { .. }) => self.dist(&v)?,
                    _ => {
                        let z = self.elemc(0.0, elem);
                        vec![z; slots as usize]
                    }
                };
                for (s, d) in dist.iter_mut().enumerate() {
                    for (kk, bk) in rep.iter().enumerate() {
                        *d = self.fma(ra[s * k as usize + kk], *bk, *d, elem);
                    }
                }
                Ok(self.vec_from_dist(m, elem, dist))
            }
            _ => Err(err("matmul operands")),
        }
    }

    /// In-register Cholesky: for each column j, broadcast the pivot, scale the column below
    /// it, broadcast each updated element l[k][j] and update the trailing lower triangle.
    pub(super) fn cholesky(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let Lv::Mat { rows: n, cols, elem, mut regs } = self.get(op.args[0])? else {
            return Err(err("cholesky of a non-matrix"));
        };
        let eps = self.scalar(op.args[1])?;
        let slots = self.slots(n);
        for j in 0..n {
            let piv = self.shuffle(regs[((j / self.lanes) * cols + j) as usize], j % self.lanes, elem);
            let piv = self.bin(BinOp::Max, piv, eps, elem);
            let d = self.emit1(OpKind::Un(UnOp::Sqrt), vec![piv], crate::types::Type::Scalar(elem));
            let jc = self.i32c(j as i64);
            for s in 0..slots {
                let r = self.rows[s as usize];
                let is_j = self.cmp(CmpOp::Eq, r, jc);
                let below = self.cmp(CmpOp::Gt, r, jc);
                let i = (s * cols + j) as usize;
                let scaled = self.bin(BinOp::Div, regs[i], d, elem);
                let x = self.select(below, scaled, regs[i], elem);
                regs[i] = self.select(is_j, d, x, elem);
            }
            for k in j + 1..n {
                let lkj = self.shuffle(regs[((k / self.lanes) * cols + j) as usize], k % self.lanes, elem);
                let kc = self.i32c(k as i64);
                for s in 0..slots {
                    let r = self.rows[s as usize];
                    // a[r][k] -= l[r][j] * l[k][j] for j < k <= r.
                    let on = self.cmp(CmpOp::Ge, r, kc);
                    let i = (s * cols + k) as usize;
                    let p = self.bin(BinOp::Mul, regs[(s * cols + j) as usize], lkj, elem);
                    let y = self.bin(BinOp::Sub, regs[i], p, elem);
                    regs[i] = self.select(on, y, regs[i], elem);
                }
            }
        }
        // Zero the strict upper triangle.
        let zero = self.elemc(0.0, elem);
        for s in 0..slots {
            for c in 0..cols {
                let cc = self.i32c(c as i64);
                let upper = self.cmp(CmpOp::Lt, self.rows[s as usize], cc);
                let i = (s * cols + c) as usize;
                regs[i] = self.select(upper, zero, regs[i], elem);
            }
        }
        Ok(Lv::Mat { rows: n, cols, elem, regs })
    }

    /// In-register LU without pivoting: for each step k, broadcast the pivot and scale the
    /// column below it on every lane (rows below k), then for each later column j broadcast
    /// `u[k][j]` from row k's lane and update the rows below k (the product, then the
    /// difference, as the CPU backends).
    pub(super) fn lu(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let Lv::Mat { rows: n, cols, elem, mut regs } = self.get(op.args[0])? else {
            return Err(err("lu of a non-matrix"));
        };
        let slots = self.slots(n);
        for k in 0..n {
            let kbase = (k / self.lanes) * cols;
            let piv = self.shuffle(regs[(kbase + k) as usize], k % self.lanes, elem);
            let kc = self.i32c(k as i64);
            let below: Vec<Value> = (0..slots).map(|s| self.cmp(CmpOp::Gt, self.rows[s as usize], kc)).collect();
            for s in 0..slots {
                let i = (s * cols + k) as usize;
                let l = self.bin(BinOp::Div, regs[i], piv, elem);
                regs[i] = self.select(below[s as usize], l, regs[i], elem);
            }
            for j in k + 1..n {
                let ukj = self.shuffle(regs[(kbase + j) as usize], k % self.lanes, elem);
                for s in 0..slots {
                    let i = (s * cols + j) as usize;
                    let p = self.bin(BinOp::Mul, regs[(s * cols + k) as usize], ukj, elem);
                    let y = self.bin(BinOp::Sub, regs[i], p, elem);
                    regs[i] = self.select(below[s as usize], y, regs[i], elem);
                }
            }
        }
        Ok(Lv::Mat { rows: n, cols, elem, regs })
    }

    /// Triangular solves (see `OpKind::Trsm`), unrolled over the substitution order.
    pub(super) fn trsm(&mut self, kind: Trsm, op: &Op) -> Result<Lv, SimtError> {
        let Lv::Mat { rows: n, cols: an, elem, regs: ra } = self.get(op.args[0])? else {
            return Err(err("trsm with a non-matrix"));
        };
        let b = self.get(op.args[1])?;
        let t_lower = kind.lower != kind.trans;
        let forward = kind.left == t_lower;
        let order: Vec<u32> = if forward { (0..n).collect() } else { (0..n).rev().collect() };
        let mut cache = HashMap::new();
        // T[p][q] (T = op(A)) as a uniform value.
        let mut t = |l: &mut Self, p: u32, q: u32| {
            let (r, c) = if kind.trans { (q, p) } else { (p, q) };
            l.bcast(&ra, an, r, c, elem, &mut cache)
        };
        match b {
            Lv::Mat { rows: m, cols: bc, elem, regs } if !kind.left => {
                // X T = B: every lane solves its own rows; coefficient of x_k in equation i is
                // T[k][i].
                let mut x = regs;
                for (step, &i) in order.iter().enumerate() {
                    let tii = t(self, i, i);
                    for s in 0..self.slots(m) {
                        let mut acc = x[(s * bc + i) as usize];
                        for &k in &order[..step] {
                            let tki = t(self, k, i);
                            let p = self.bin(BinOp::Mul, x[(s * bc + k) as usize], tki, elem);
                            acc = self.bin(BinOp::Sub, acc, p, elem);
                        }
                        if !kind.unit {
                            acc = self.bin(BinOp::Div, acc, tii, elem);
                        }
                        x[(s * bc + i) as usize] = acc;
                    }
                }
                Ok(Lv::Mat { rows: m, cols: bc, elem, regs: x })
            }
            Lv::Mat { rows: m, cols: bc, elem, regs } => {
                // T X = B with the unknown rows spread over lanes: finish row i on its lane,
                // broadcast it, and subtract it from the rows after it in the order.
                let mut x = regs;
                let slots = self.slots(m);
                for (step, &i) in order.iter().enumerate() {
                    let ic = self.i32c(i as i64);
                    if !kind.unit {
                        let tii = t(self, i, i);
                        for s in 0..slots {
                            let mine = self.cmp(CmpOp::Eq, self.rows[s as usize], ic);
                            for c in 0..bc {
                                let k = (s * bc + c) as usize;
                                let q = self.bin(BinOp::Div, x[k], tii, elem);
                                x[k] = self.select(mine, q, x[k], elem);
                            }
                        }
                    }
                    if step + 1 == order.len() {
                        break;
                    }
                    let xi: Vec<Value> = (0..bc)
                        .map(|c| self.shuffle(x[((i / self.lanes) * bc + c) as usize], i % self.lanes, elem))
                        .collect();
                    for s in 0..slots {
                        let r = self.rows[s as usize];
                        // Rows after i in the order: r > i (forward) or r < i (backward).
                        let later = self.cmp(if forward { CmpOp::Gt } else { CmpOp::Lt }, r, ic);
                        // The coefficient T[r][i] for this lane's row r.
                        let coef = if kind.trans {
                            // T[r][i] = A[i][r]: row i of A, picked at column r.
                            let zero = self.elemc(0.0, elem);
                            let mut v = zero;
                            for q in 0..n {
                                let aiq = t(self, q, i);
                                let qc = self.i32c(q as i64);
                                let at = self.cmp(CmpOp::Eq, r, qc);
                                v = self.select(at, aiq, v, elem);
                            }
                            v
                        } else {
                            ra[(s * an + i) as usize]
                        };
                        for c in 0..bc {
                            let k = (s * bc + c) as usize;
                            let p = self.bin(BinOp::Mul, coef, xi[c as usize], elem);
                            let y = self.bin(BinOp::Sub, x[k], p, elem);
                            x[k] = self.select(later, y, x[k], elem);
                        }
                    }
                }
                Ok(Lv::Mat { rows: m, cols: bc, elem, regs: x })
            }
            Lv::Vec { n: len, elem, rep, .. } => {
                // A vector right-hand side: every lane solves the whole system with uniform
                // coefficients.
                let mut x = rep;
                for (step, &i) in order.iter().enumerate() {
                    let mut acc = x[i as usize];
                    for &k in &order[..step] {
                        let tik = t(self, i, k);
                        let p = self.bin(BinOp::Mul, tik, x[k as usize], elem);
                        acc = self.bin(BinOp::Sub, acc, p, elem);
                    }
                    if !kind.unit {
                        let tii = t(self, i, i);
                        acc = self.bin(BinOp::Div, acc, tii, elem);
                    }
                    x[i as usize] = acc;
                }
                Ok(Lv::Vec { n: len, elem, rep: x, dist: None })
            }
            _ => Err(err("trsm right-hand side")),
        }
    }
}
