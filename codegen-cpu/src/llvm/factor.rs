//! The in-register factorizations of the LLVM CPU backend, on tile rows as vectors, with the
//! operations (and so the bits) of the SIMT lowering (`midend/src/simt/linalg.rs`):
//! - Cholesky: right-looking on U = L^T (row `j` of U is column `j` of L): pivot
//!   `max(u[j][j], eps)`, `d = sqrt(pivot)`, row `j` divided by `d`, then
//!   `u[k] -= u[j] * u[j][k]` for the rows after it; L = U^T with its upper triangle zeroed
//!   (Golub & Van Loan, Matrix Computations, 4th ed., Algorithm 4.2.2, by rows).
//! - Triangular solves: substitution over the rows of X for left solves, over the rows of
//!   X^T for right solves (`X T = B` is `T^T X^T = B^T`), each row a vector operation.

use super::tile::shape;
use super::{be, err, Gen, V};
use crate::CodegenError;
use inkwell::types::VectorType;
use tilec_midend::{BinOp, Op, Scalar, Trsm, UnOp};

/// Largest tile extent the factorizations handle as single vectors.
const MAX_N: u32 = 64;

impl<'ctx> Gen<'ctx, '_> {
    fn splat_div(&self, s: Scalar, row: V<'ctx>, d: V<'ctx>, n: u32) -> Result<V<'ctx>, CodegenError> {
        let d = self.splat(d, n)?;
        self.bin(BinOp::Div, s, row, d)
    }

    /// `row - other * c` (the product first, as the SIMT lowering).
    fn sub_scaled(&self, s: Scalar, row: V<'ctx>, other: V<'ctx>, c: V<'ctx>, n: u32) -> Result<V<'ctx>, CodegenError> {
        let c = self.splat(c, n)?;
        let p = self.bin(BinOp::Mul, s, other, c)?;
        self.bin(BinOp::Sub, s, row, p)
    }

    pub(crate) fn cholesky(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        let (n, _) = shape(self.f.ty(op.args[0]));
        if n > MAX_N {
            return Err(err(format!(
                "cholesky_ of a {n} x {n} tile (the LLVM backend factors up to {MAX_N} x {MAX_N})"
            )));
        }
        let src = self.tile(op.args[0])?;
        let eps = self.val(op.args[1])?;
        let dst = self.new_tile(op.results[0])?;
        let rows = self.rows_of(src, s, n, n)?;
        let mut u = self.transpose_rows(&rows, s, n)?;
        for j in 0..n as usize {
            let piv = self.lane(u[j], j as u32)?;
            let piv = self.bin(BinOp::Max, s, piv, eps)?;
            let d = self.unary(UnOp::Sqrt, s, piv)?;
            u[j] = self.splat_div(s, u[j], d, n)?;
            u[j] = self.with_lane(u[j], j as u32, d)?;
            for k in j + 1..n as usize {
                let lkj = self.lane(u[j], k as u32)?;
                u[k] = self.sub_scaled(s, u[k], u[j], lkj, n)?;
            }
        }
        let l = self.transpose_rows(&u, s, n)?;
        let zero = self.splat(self.constant(s, 0.0), n)?;
        let bt = self.cx.bool_type();
        let mut out = Vec::new();
        for (i, row) in l.iter().enumerate() {
            let mask: Vec<_> = (0..n as usize).map(|c| bt.const_int((c <= i) as u64, false)).collect();
            let mask = VectorType::const_vector(&mask);
            out.push(self.b.build_select(mask, *row, zero, "").map_err(be)?);
        }
        self.put_rows(dst, s, n, &out)
    }

    pub(crate) fn trsm(&mut self, op: &Op, kind: Trsm, s: Scalar) -> Result<(), CodegenError> {
        let (n, _) = shape(self.f.ty(op.args[0]));
        let bty = self.f.ty(op.args[1]).clone();
        let (br, bc) = shape(&bty);
        if n > MAX_N || br > MAX_N || bc > MAX_N {
            return Err(err(format!("triangular solves up to {MAX_N} x {MAX_N} tiles in the LLVM backend")));
        }
        let (a, b) = (self.tile(op.args[0])?, self.tile(op.args[1])?);
        let dst = self.new_tile(op.results[0])?;
        let arows = self.rows_of(a, s, n, n)?;
        // T[p][q] with T = op(A).
        let t = |g: &Self, p: usize, q: usize| {
            let (r, c) = if kind.trans { (q, p) } else { (p, q) };
            g.lane(arows[r], c as u32)
        };
        let t_lower = kind.lower != kind.trans;
        let forward = kind.left == t_lower;
        let order: Vec<usize> = if forward { (0..n as usize).collect() } else { (0..n as usize).rev().collect() };
        let vector = matches!(&bty, tilec_midend::Type::Tile { shape, .. } if shape.len() == 1);
        if vector {
            // T x = b, element by element.
            let v = self.load_vec(b, s, self.i64c(0), bc)?;
            let mut x: Vec<V<'ctx>> = (0..n).map(|i| self.lane(v, i)).collect::<Result<_, _>>()?;
            for (step, &i) in order.iter().enumerate() {
                let mut acc = x[i];
                for &k in &order[..step] {
                    let p = self.bin(BinOp::Mul, s, t(self, i, k)?, x[k])?;
                    acc = self.bin(BinOp::Sub, s, acc, p)?;
                }
                if !kind.unit {
                    acc = self.bin(BinOp::Div, s, acc, t(self, i, i)?)?;
                }
                x[i] = acc;
            }
            let mut out: V<'ctx> = self.vty(s, bc).get_undef().into();
            for (i, xi) in x.iter().enumerate() {
                out = self.with_lane(out, i as u32, *xi)?;
            }
            return self.store_vec(dst, s, self.i64c(0), out);
        }
        let mut x = self.rows_of(b, s, br, bc)?;
        if kind.left {
            // T X = B: finish row i, then subtract it from the rows after it in the order.
            for (step, &i) in order.iter().enumerate() {
                if !kind.unit {
                    x[i] = self.splat_div(s, x[i], t(self, i, i)?, bc)?;
                }
                for &r in &order[step + 1..] {
                    x[r] = self.sub_scaled(s, x[r], x[i], t(self, r, i)?, bc)?;
                }
            }
            return self.put_rows(dst, s, bc, &x);
        }
        // X T = B on the rows of X^T: x^T[i] = (b^T[i] - sum_k x^T[k] T[k][i]) / T[i][i].
        let mut xt = self.transpose_rows(&x, s, bc)?;
        for (step, &i) in order.iter().enumerate() {
            let mut acc = xt[i];
            for &k in &order[..step] {
                acc = self.sub_scaled(s, acc, xt[k], t(self, k, i)?, br)?;
            }
            if !kind.unit {
                acc = self.splat_div(s, acc, t(self, i, i)?, br)?;
            }
            xt[i] = acc;
        }
        x = self.transpose_rows(&xt, s, br)?;
        self.put_rows(dst, s, bc, &x)
    }
}
