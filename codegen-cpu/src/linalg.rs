//! Dense linear algebra on register tiles in the CPU backend: matrix products with a
//! register-blocked micro-kernel, Cholesky factorization and triangular solves.
//!
//! Algorithms: the matmul micro-kernel keeps a 4 x (2 vectors) block of the result in
//! registers across the whole `k` loop (the BLIS micro-kernel idea: Van Zee & van de Geijn,
//! "BLIS: A Framework for Rapidly Instantiating BLAS Functionality", ACM TOMS 2015).
//! `cholesky` is the right-looking unblocked Cholesky of Golub & Van Loan, *Matrix
//! Computations* (4th ed.), Alg. 4.2.1, with pivots clamped below by `eps`; `trsm` is
//! forward or backward substitution (ibid., Alg. 3.1.1 and 3.1.2) by rows or by columns.

use crate::lower::{cl_type, Lower};
use crate::memory::flags;
use crate::CodegenError;
use cranelift_codegen::ir::{self, types, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::Module as ClModule;
use tilec_midend::{BinOp, Op, Scalar, Trsm, Type};

/// Rows of the result block kept in registers by the matmul micro-kernel.
const MR: u32 = 4;
/// Vectors per row of that block.
const NR: u32 = 2;

impl<M: ClModule> Lower<'_, '_, M> {
    /// `a @ b` (`acc`: `c + a @ b` with `c` the first operand), into the result tile.
    pub(crate) fn matmul(&mut self, op: &Op, s: Scalar, acc: bool) -> Result<(), CodegenError> {
        let base = usize::from(acc);
        let (ta, tb) = (self.f.ty(op.args[base]).clone(), self.f.ty(op.args[base + 1]).clone());
        let (m, k) = ta.rows_cols();
        let n = match &tb {
            Type::Tile { shape, .. } if shape.len() == 2 => shape[1],
            _ => 1,
        };
        if acc {
            self.copy_tile_to_result(op.args[0], op.results[0]);
        } else {
            let dst = self.tile_addr(op.results[0]);
            self.zero_bytes(dst, m * n * s.bytes());
        }
        let a = self.tile_addr(op.args[base]);
        let b = self.tile_addr(op.args[base + 1]);
        let c = self.tile_addr(op.results[0]);
        let lanes = 16 / s.bytes();
        let nv = n / lanes;
        // Vector columns in blocks of NR vectors (the last block may be narrower).
        let mut j = 0;
        while j < nv {
            let w = NR.min(nv - j);
            let mut i = 0;
            while i < m {
                let h = MR.min(m - i);
                self.micro_kernel(s, (a, b, c), (m, n, k), (i, j * lanes), (h, w));
                i += h;
            }
            j += w;
        }
        // Columns past the last whole vector: scalar dot products, looping over k.
        for col in nv * lanes..n {
            for row in 0..m {
                let cell = ((row * n + col) * s.bytes()) as i32;
                let init = self.ld(s, c, cell);
                let var = self.b.declare_var(cl_type(s));
                self.b.def_var(var, init);
                let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, k as i64));
                self.dyn_loop(lo, hi, |l, kk| {
                    let ai = l.b.ins().iadd_imm_s(kk, (row * k) as i64);
                    let bi = l.b.ins().imul_imm_s(kk, n as i64);
                    let bi = l.b.ins().iadd_imm_s(bi, col as i64);
                    let (aa, ba) = (l.at(a, ai, s), l.at(b, bi, s));
                    let (x, y) = (l.ld(s, aa, 0), l.ld(s, ba, 0));
                    let acc = l.b.use_var(var);
                    let nx = l.fma(x, y, acc);
                    l.b.def_var(var, nx);
                });
                let sum = self.b.use_var(var);
                self.st(sum, c, cell);
            }
        }
        Ok(())
    }

    /// `C[i0..i0+h, j0..j0+w*lanes] += A[i0..i0+h, :] @ B[:, j0..j0+w*lanes]` with the block of C
    /// in `h * w` vector registers across a loop over `k`.
    fn micro_kernel(
        &mut self,
        s: Scalar,
        (a, b, c): (ir::Value, ir::Value, ir::Value),
        (_m, n, k): (u32, u32, u32),
        (i0, j0): (u32, u32),
        (h, w): (u32, u32),
    ) {
        let vt = match s {
            Scalar::F64 => types::F64X2,
            Scalar::I32 | Scalar::U32 => types::I32X4,
            Scalar::I64 => types::I64X2,
            _ => types::F32X4,
        };
        let esz = s.bytes();
        let lanes = 16 / esz;
        let coff = |r: u32, v: u32| (((i0 + r) * n + j0 + v * lanes) * esz) as i32;
        let mut accs: Vec<Variable> = Vec::new();
        for r in 0..h {
            for v in 0..w {
                let var = self.b.declare_var(vt);
                let x = self.b.ins().load(vt, flags(), c, coff(r, v));
                self.b.def_var(var, x);
                accs.push(var);
            }
        }
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, k as i64);
        self.dyn_loop(lo, hi, |l, kk| {
            // B[k, j0 + v*lanes] and A[i0 + r, k].
            let brow = l.b.ins().imul_imm_s(kk, (n * esz) as i64);
            let brow = l.b.ins().iadd(b, brow);
            let bs: Vec<ir::Value> =
                (0..w).map(|v| l.b.ins().load(vt, flags(), brow, ((j0 + v * lanes) * esz) as i32)).collect();
            let acol = l.b.ins().imul_imm_s(kk, esz as i64);
            let acol = l.b.ins().iadd(a, acol);
            for r in 0..h {
                let x = l.b.ins().load(cl_type(s), flags(), acol, ((i0 + r) * k * esz) as i32);
                let xs = l.b.ins().splat(vt, x);
                for (v, bv) in bs.iter().enumerate() {
                    let var = accs[(r * w) as usize + v];
                    let cur = l.b.use_var(var);
                    let nxt = l.fma(xs, *bv, cur);
                    l.b.def_var(var, nxt);
                }
            }
        });
        for r in 0..h {
            for v in 0..w {
                let x = self.b.use_var(accs[(r * w + v) as usize]);
                self.b.ins().store(flags(), x, c, coff(r, v));
            }
        }
    }

    /// In-place Cholesky of an `n x n` tile (lower factor; upper triangle zeroed).
    pub(crate) fn cholesky(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        self.copy_tile_to_result(op.args[0], op.results[0]);
        let (n, _) = self.f.ty(op.results[0]).rows_cols();
        let p = self.tile_addr(op.results[0]);
        let eps = self.val(op.args[1]);
        let nn = n as i64;
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, nn);
        self.dyn_loop(lo, hi, |l, j| {
            // Pivot: clamp below by eps, then the square root.
            let jj = l.b.ins().imul_imm_s(j, nn + 1);
            let ajj_addr = l.at(p, jj, s);
            let ajj = l.ld(s, ajj_addr, 0);
            let ajj = l.bin(BinOp::Max, s, ajj, eps);
            let d = l.b.ins().sqrt(ajj);
            l.st(d, ajj_addr, 0);
            // Column below the pivot.
            let j1 = l.b.ins().iadd_imm_s(j, 1);
            let end = l.b.ins().iconst(types::I64, nn);
            l.dyn_loop(j1, end, |l, i| {
                let ij = l.b.ins().imul_imm_s(i, nn);
                let ij = l.b.ins().iadd(ij, j);
                let a = l.at(p, ij, s);
                let x = l.ld(s, a, 0);
                let y = l.bin(BinOp::Div, s, x, d);
                l.st(y, a, 0);
            });
            // Trailing update of the lower triangle: a[i, k] -= l[i, j] * l[k, j], j < k <= i.
            l.dyn_loop(j1, end, |l, i| {
                let ij = l.b.ins().imul_imm_s(i, nn);
                let ij = l.b.ins().iadd(ij, j);
                let aij = l.at(p, ij, s);
                let lij = l.ld(s, aij, 0);
                let nlij = l.b.ins().fneg(lij);
                let i1 = l.b.ins().iadd_imm_s(i, 1);
                l.dyn_loop(j1, i1, |l, k| {
                    let ik = l.b.ins().imul_imm_s(i, nn);
                    let ik = l.b.ins().iadd(ik, k);
                    let kj = l.b.ins().imul_imm_s(k, nn);
                    let kj = l.b.ins().iadd(kj, j);
                    let aik = l.at(p, ik, s);
                    let akj = l.at(p, kj, s);
                    let x = l.ld(s, aik, 0);
                    let y = l.ld(s, akj, 0);
                    let r = l.fma(nlij, y, x);
                    l.st(r, aik, 0);
                });
            });
        });
        // Zero the strict upper triangle.
        let z = self.zero(s);
        for i in 0..n {
            for k in i + 1..n {
                self.st(z, p, ((i * n + k) * s.bytes()) as i32);
            }
        }
        Ok(())
    }

    /// In-place triangular solve (see `OpKind::Trsm`): the result tile starts as `b`.
    pub(crate) fn trsm(&mut self, op: &Op, kind: Trsm, s: Scalar) -> Result<(), CodegenError> {
        self.copy_tile_to_result(op.args[1], op.results[0]);
        let n = self.f.ty(op.args[0]).rows_cols().0;
        let (br, bc) = self.f.ty(op.results[0]).rows_cols();
        let a = self.tile_addr(op.args[0]);
        let x = self.tile_addr(op.results[0]);
        let nn = n as i64;
        // The triangular factor T = op(A): T[i][j] is A[i][j], or A[j][i] when transposed;
        // T is lower exactly when A is lower and not transposed, or upper and transposed.
        let t_lower = kind.lower != kind.trans;
        // Left: T X = B, solved column by column of X (each column a substitution over its
        // n rows). Right: X T = B, row by row (x T = b for each row x).
        let (systems, sys_stride, elem_stride) = if kind.left { (bc, 1i64, bc as i64) } else { (br, bc as i64, 1i64) };
        // In a left solve with lower T the substitution runs forward (i = 0..n) and reads
        // T[i][k], k < i; in a right solve with lower T it runs backward and reads T[k][i],
        // k > i (the column of T below the diagonal).
        let forward = kind.left == t_lower;
        let lo = self.b.ins().iconst(types::I64, 0);
        let sys_hi = self.b.ins().iconst(types::I64, systems as i64);
        let n_hi = self.b.ins().iconst(types::I64, nn);
        self.dyn_loop(lo, sys_hi, |l, sys| {
            let xbase = l.b.ins().imul_imm_s(sys, sys_stride);
            l.dyn_loop(lo, n_hi, |l, step| {
                // i: the unknown solved at this step.
                let i = if forward {
                    step
                } else {
                    let t = l.b.ins().isub(n_hi, step);
                    l.b.ins().iadd_imm_s(t, -1)
                };
                let xi_idx = l.b.ins().imul_imm_s(i, elem_stride);
                let xi_idx = l.b.ins().iadd(xbase, xi_idx);
                let xi_addr = l.at(x, xi_idx, s);
                let acc0 = l.ld(s, xi_addr, 0);
                let var = l.b.declare_var(cl_type(s));
                l.b.def_var(var, acc0);
                // Earlier unknowns k: 0..i forward, i+1..n backward.
                let (klo, khi) = if forward { (lo, i) } else { (l.b.ins().iadd_imm_s(i, 1), n_hi) };
                l.dyn_loop(klo, khi, |l, kk| {
                    // The coefficient of x_k in equation i: T[i][k] (left) or T[k][i] (right).
                    let (r, c) = if kind.left { (i, kk) } else { (kk, i) };
                    let (r, c) = if kind.trans { (c, r) } else { (r, c) };
                    let t_idx = l.b.ins().imul_imm_s(r, nn);
                    let t_idx = l.b.ins().iadd(t_idx, c);
                    let t_addr = l.at(a, t_idx, s);
                    let t = l.ld(s, t_addr, 0);
                    let xk_idx = l.b.ins().imul_imm_s(kk, elem_stride);
                    let xk_idx = l.b.ins().iadd(xbase, xk_idx);
                    let xk_addr = l.at(x, xk_idx, s);
                    let xk = l.ld(s, xk_addr, 0);
                    let nt = l.b.ins().fneg(t);
                    let cur = l.b.use_var(var);
                    let nxt = l.fma(nt, xk, cur);
                    l.b.def_var(var, nxt);
                });
                let mut xi = l.b.use_var(var);
                if !kind.unit {
                    let d_idx = l.b.ins().imul_imm_s(i, nn + 1);
                    let d_addr = l.at(a, d_idx, s);
                    let d = l.ld(s, d_addr, 0);
                    xi = l.bin(BinOp::Div, s, xi, d);
                }
                l.st(xi, xi_addr, 0);
            });
        });
        Ok(())
    }
}
