//! The in-register factorizations of the LLVM CPU backend, on tile rows as vectors, with the
//! operations (and so the bits) of the SIMT lowering (`midend/src/simt/linalg.rs`):
//! - Cholesky: right-looking on U = L^T (row `j` of U is column `j` of L): pivot
//!   `max(u[j][j], eps)`, `d = sqrt(pivot)`, row `j` divided by `d`, then
//!   `u[k] -= u[j] * u[j][k]` for the rows after it; L = U^T with its upper triangle zeroed
//!   (Golub & Van Loan, Matrix Computations, 4th ed., Algorithm 4.2.2, by rows).
//! - Triangular solves: substitution over the rows of X for left solves, over the rows of
//!   X^T for right solves (`X T = B` is `T^T X^T = B^T`), each row a vector operation.

use super::tile::segments;
use super::tile::shape;
use super::views::Strided;
use super::{be, Gen, V};
use crate::CodegenError;
use inkwell::types::VectorType;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;
use tilec_midend::{BinOp, Op, Scalar, Trsm, UnOp};

/// Largest tile extent the factorizations unroll with rows as single vectors; larger tiles
/// (up to 128 x 128) run the same operations in loops over rows in memory.
const MAX_N: u32 = 64;

/// A triangular solve's right-hand side `b` (`br x bc`, or a vector of `bc` when `vector`),
/// its result tile `dst`, and the order `n` of its triangular tile.
#[derive(Clone, Copy)]
struct Solve<'ctx> {
    kind: Trsm,
    s: Scalar,
    b: PointerValue<'ctx>,
    dst: PointerValue<'ctx>,
    n: u32,
    br: u32,
    bc: u32,
    vector: bool,
}

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
        let src = self.tile(op.args[0])?;
        let eps = self.val(op.args[1])?;
        let dst = self.new_tile(op.results[0])?;
        if n > MAX_N {
            return self.cholesky_mem(src, dst, n, eps, s);
        }
        // U = A^T (by blocks through memory where it can: potrf 512 x 92 f32 on one Zen 3
        // thread, with the solves' transposes, 5.8 -> 5.4 ms).
        let mut u = self.transposed_rows_of(src, s, n, n)?;
        // Row j of U at a time (left-looking): the finished rows before it subtracted in
        // order, then its pivot. Row j meets the operations of the right-looking form above in
        // the same order (the same bits), and only the row being finished is written.
        for j in 0..n as usize {
            let mut row = u[j];
            for &uk in &u[..j] {
                let ukj = self.lane(uk, j as u32)?;
                row = self.sub_scaled(s, row, uk, ukj, n)?;
            }
            let piv = self.lane(row, j as u32)?;
            let piv = self.bin(BinOp::Max, s, piv, eps)?;
            let d = self.unary(UnOp::Sqrt, s, piv)?;
            row = self.splat_div(s, row, d, n)?;
            u[j] = self.with_lane(row, j as u32, d)?;
        }
        // L = U^T with zeros above the diagonal: row j of U keeps its lanes from j on.
        let zero = self.splat(self.constant(s, 0.0), n)?;
        let bt = self.cx.bool_type();
        for (j, row) in u.iter_mut().enumerate() {
            let mask: Vec<_> = (0..n as usize).map(|c| bt.const_int((c >= j) as u64, false)).collect();
            *row = self.b.build_select(VectorType::const_vector(&mask), *row, zero, "").map_err(be)?;
        }
        self.put_rows_transposed(dst, s, n, &u)
    }

    /// A triangular solve. A triangular tile whose load is pending (`Gen::direct`: a tile
    /// loaded for this solve alone) is read through a pointer: into its array where it lies
    /// inside it, else into a copy made behind a branch with the load's bounds rules. Each
    /// coefficient is then a scalar load that the splat takes from memory (x86: `vbroadcastss
    /// m32`), where a coefficient taken from a tile row in registers costs two shuffles. The
    /// same values, so the same bits. One pinned Zen 3 thread, 512 x 92 f32: potrs 3.5-6%
    /// faster, trsm_right_lower_t 3%. (Two solve bodies, one per case, made
    /// trsm_right_lower_t 1-2% slower: twice the code of an unrolled solve.)
    pub(crate) fn trsm(&mut self, op: &Op, kind: Trsm, s: Scalar) -> Result<(), CodegenError> {
        let (n, _) = shape(self.f.ty(op.args[0]));
        let bty = self.f.ty(op.args[1]).clone();
        let (br, bc) = shape(&bty);
        let vector = matches!(&bty, tilec_midend::Type::Tile { shape, .. } if shape.len() == 1);
        let (b, dst) = (self.tile(op.args[1])?, self.new_tile(op.results[0])?);
        let sv = Solve { kind, s, b, dst, n, br, bc, vector };
        let unrolled = n <= MAX_N && br <= MAX_N && bc <= MAX_N;
        let pending = self.pending_load(op.args[0])?;
        if let (Some(p), true) = (&pending, unrolled) {
            // One solve body reading the coefficients through a pointer: the array's where the
            // tile lies inside it, else a copy made (behind a branch) with the load's rules.
            let copy = self.alloca(s, n * n)?;
            let outside = self.b.build_not(p.inside, "").map_err(be)?;
            // Filled through a tile of its own and copied: filling `copy` itself, whose
            // address the solve takes, made potrs 2% slower.
            self.guarded(outside, |g| {
                let c = g.copy_pending(p)?;
                g.copy(copy, c, n * n * s.bytes())
            })?;
            let (in_array, in_copy) = (Strided::array(self, p, false), Strided::tile(self, copy, n, false));
            let view = Strided::select(self, p.inside, in_array, in_copy)?;
            // T[p][q] with T = op(A).
            let t = |g: &Self, pp: usize, q: usize| -> Result<V<'ctx>, CodegenError> {
                let (r, c) = if kind.trans { (q, pp) } else { (pp, q) };
                g.load_elem(view.ptr, s, view.at(g, g.i64c(r as i64), g.i64c(c as i64))?)
            };
            return self.trsm_unrolled(&sv, &t);
        }
        let a = match &pending {
            Some(p) => self.copy_pending(p)?,
            None => self.tile(op.args[0])?,
        };
        if !unrolled {
            return self.trsm_mem(&sv, a);
        }
        let arows = self.rows_of(a, s, n, n)?;
        // T[p][q] with T = op(A), from the rows of `a`.
        let t = |g: &Self, p: usize, q: usize| {
            let (r, c) = if kind.trans { (q, p) } else { (p, q) };
            g.lane(arows[r], c as u32)
        };
        self.trsm_unrolled(&sv, &t)
    }

    /// The unrolled solve (`b`'s rows in registers) with the coefficients `t(p, q)` of
    /// T = op(A).
    fn trsm_unrolled(
        &mut self,
        sv: &Solve<'ctx>,
        t: &dyn Fn(&Self, usize, usize) -> Result<V<'ctx>, CodegenError>,
    ) -> Result<(), CodegenError> {
        let Solve { kind, s, b, dst, n, br, bc, vector } = *sv;
        let t_lower = kind.lower != kind.trans;
        let forward = kind.left == t_lower;
        let order: Vec<usize> = if forward { (0..n as usize).collect() } else { (0..n as usize).rev().collect() };
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
        if kind.left {
            let mut x = self.rows_of(b, s, br, bc)?;
            // T X = B, row i of X at a time: the rows finished before it subtracted in the
            // order, then the division. Each row meets the operations of the right-looking
            // form (finish row i, subtract it from every later row) in the same order, so the
            // bits are the same; but only the row being finished is written, where the
            // right-looking form rewrites every later row at each step (spilled and reloaded
            // when X has more rows than the machine has vector registers).
            for (step, &i) in order.iter().enumerate() {
                let mut acc = x[i];
                for &k in &order[..step] {
                    acc = self.sub_scaled(s, acc, x[k], t(self, i, k)?, bc)?;
                }
                if !kind.unit {
                    acc = self.splat_div(s, acc, t(self, i, i)?, bc)?;
                }
                x[i] = acc;
            }
            return self.put_rows(dst, s, bc, &x);
        }
        // X T = B on the rows of X^T: x^T[i] = (b^T[i] - sum_k x^T[k] T[k][i]) / T[i][i].
        let mut xt = self.transposed_rows_of(b, s, br, bc)?;
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
        self.put_rows_transposed(dst, s, br, &xt)
    }
    /// `row(d) = f(row(d), row(x))` over the segments of the rows of `n` elements at element
    /// offsets `d` and `x` of `t`.
    fn row_update(
        &self,
        t: PointerValue<'ctx>,
        s: Scalar,
        n: u32,
        d: IntValue<'ctx>,
        x: Option<IntValue<'ctx>>,
        f: impl Fn(&Self, V<'ctx>, Option<V<'ctx>>, u32) -> Result<V<'ctx>, CodegenError>,
    ) -> Result<(), CodegenError> {
        for (c0, len) in segments(n, s) {
            let dof = self.add_off(d, c0)?;
            let dv = self.load_vec(t, s, dof, len)?;
            let xv = match x {
                Some(x) => Some(self.load_vec(t, s, self.add_off(x, c0)?, len)?),
                None => None,
            };
            let y = f(self, dv, xv, len)?;
            self.store_vec(t, s, dof, y)?;
        }
        Ok(())
    }

    /// The lanes of a row segment `c0..c0 + len` whose column `c` satisfies `c pred x`.
    fn column_mask(
        &mut self,
        c0: u32,
        len: u32,
        pred: IntPredicate,
        x: IntValue<'ctx>,
    ) -> Result<inkwell::values::VectorValue<'ctx>, CodegenError> {
        let i64t = self.cx.i64_type();
        let iota: Vec<_> = (0..len).map(|c| i64t.const_int((c0 + c) as u64, false)).collect();
        let iota = VectorType::const_vector(&iota);
        let xv = self.splat(x.into(), len)?.into_vector_value();
        self.b.build_int_compare(pred, iota, xv, "").map_err(be)
    }

    fn mul_n(&self, a: IntValue<'ctx>, n: u32) -> Result<IntValue<'ctx>, CodegenError> {
        self.b.build_int_mul(a, self.i64c(n as i64), "").map_err(be)
    }

    /// LU without pivoting (`OpKind::Lu`) on the rows in memory: for each step `k`, the column
    /// below the pivot divided by it, then `row(i) -= l * row(k)` in the columns after `k`
    /// (the product, then the difference, as the SIMT lowering), each row a vector operation
    /// whose lanes up to `k` keep their values.
    pub(crate) fn lu(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        let (n, _) = shape(self.f.ty(op.args[0]));
        let src = self.tile(op.args[0])?;
        let a = self.new_tile(op.results[0])?;
        self.copy(a, src, n * n * s.bytes())?;
        let (lo, hi) = (self.i64c(0), self.i64c(n as i64));
        self.dyn_loop(lo, hi, |g, k| {
            let krow = g.mul_n(k, n)?;
            let piv = g.load_elem(a, s, g.b.build_int_add(krow, k, "").map_err(be)?)?;
            let k1 = g.b.build_int_add(k, g.i64c(1), "").map_err(be)?;
            g.dyn_loop(k1, g.i64c(n as i64), |g, i| {
                let irow = g.mul_n(i, n)?;
                let ik = g.b.build_int_add(irow, k, "").map_err(be)?;
                let m = g.bin(BinOp::Div, s, g.load_elem(a, s, ik)?, piv)?;
                g.store_elem(a, s, ik, m)?;
                for (c0, len) in segments(n, s) {
                    let after = g.column_mask(c0, len, IntPredicate::UGT, k)?;
                    let (io, ko) = (g.add_off(irow, c0)?, g.add_off(krow, c0)?);
                    let (row, urow) = (g.load_vec(a, s, io, len)?, g.load_vec(a, s, ko, len)?);
                    let y = g.sub_scaled(s, row, urow, m, len)?;
                    let y = g.b.build_select(after, y, row, "").map_err(be)?;
                    g.store_vec(a, s, io, y)?;
                }
                Ok(())
            })
        })
    }

    /// Cholesky of an `n x n` tile above [`MAX_N`]: the operations of `cholesky`, in loops over
    /// the rows of U = L^T in memory.
    fn cholesky_mem(
        &mut self,
        src: PointerValue<'ctx>,
        dst: PointerValue<'ctx>,
        n: u32,
        eps: V<'ctx>,
        s: Scalar,
    ) -> Result<(), CodegenError> {
        let u = self.alloca(s, n * n)?;
        self.transpose_mem(src, u, n, n, s)?;
        let (lo, hi) = (self.i64c(0), self.i64c(n as i64));
        self.dyn_loop(lo, hi, |g, j| {
            let jrow = g.mul_n(j, n)?;
            let jj = g.b.build_int_add(jrow, j, "").map_err(be)?;
            let piv = g.load_elem(u, s, jj)?;
            let piv = g.bin(BinOp::Max, s, piv, eps)?;
            let d = g.unary(UnOp::Sqrt, s, piv)?;
            g.row_update(u, s, n, jrow, None, |g, row, _, len| g.splat_div(s, row, d, len))?;
            g.store_elem(u, s, jj, d)?;
            let k0 = g.b.build_int_add(j, g.i64c(1), "").map_err(be)?;
            g.dyn_loop(k0, g.i64c(n as i64), |g, k| {
                let jk = g.b.build_int_add(jrow, k, "").map_err(be)?;
                let lkj = g.load_elem(u, s, jk)?;
                let krow = g.mul_n(k, n)?;
                g.row_update(u, s, n, krow, Some(jrow), |g, row, uj, len| {
                    g.sub_scaled(s, row, uj.expect("row j"), lkj, len)
                })
            })
        })?;
        self.transpose_mem(u, dst, n, n, s)?;
        // Zero the strict upper triangle: row i keeps the columns c <= i.
        self.dyn_loop(lo, hi, |g, i| {
            let irow = g.mul_n(i, n)?;
            for (c0, len) in segments(n, s) {
                let keep = g.column_mask(c0, len, IntPredicate::ULE, i)?;
                let off = g.add_off(irow, c0)?;
                let row = g.load_vec(dst, s, off, len)?;
                let zero = g.splat(g.constant(s, 0.0), len)?;
                let y = g.b.build_select(keep, row, zero, "").map_err(be)?;
                g.store_vec(dst, s, off, y)?;
            }
            Ok(())
        })
    }

    /// Triangular solves with tiles above [`MAX_N`] (with the tile `a`): the operations of
    /// `trsm`, in loops over rows in memory (`order[step]` is `step` forward, `n - 1 - step`
    /// backward).
    fn trsm_mem(&mut self, sv: &Solve<'ctx>, a: PointerValue<'ctx>) -> Result<(), CodegenError> {
        let Solve { kind, s, b, dst, n, br, bc, vector } = *sv;
        let t_lower = kind.lower != kind.trans;
        let forward = kind.left == t_lower;
        let ord = move |g: &Self, step: IntValue<'ctx>| -> Result<IntValue<'ctx>, CodegenError> {
            if forward {
                Ok(step)
            } else {
                g.b.build_int_sub(g.i64c(n as i64 - 1), step, "").map_err(be)
            }
        };
        // T[p][q] with T = op(A).
        let t = move |g: &Self, p: IntValue<'ctx>, q: IntValue<'ctx>| -> Result<V<'ctx>, CodegenError> {
            let (r, c) = if kind.trans { (q, p) } else { (p, q) };
            let off = g.b.build_int_add(g.mul_n(r, n)?, c, "").map_err(be)?;
            g.load_elem(a, s, off)
        };
        let (lo, hi) = (self.i64c(0), self.i64c(n as i64));
        if vector || kind.left {
            self.copy(dst, b, br * bc * s.bytes())?;
            // Rows of X (a vector: rows of one element).
            let cols = if vector { 1 } else { bc };
            return self.dyn_loop(lo, hi, |g, step| {
                let i = ord(g, step)?;
                let irow = g.mul_n(i, cols)?;
                if !kind.unit {
                    let tii = t(g, i, i)?;
                    g.row_update(dst, s, cols, irow, None, |g, row, _, len| g.splat_div(s, row, tii, len))?;
                }
                let next = g.b.build_int_add(step, g.i64c(1), "").map_err(be)?;
                g.dyn_loop(next, g.i64c(n as i64), |g, st2| {
                    let r = ord(g, st2)?;
                    let tri = t(g, r, i)?;
                    let rrow = g.mul_n(r, cols)?;
                    g.row_update(dst, s, cols, rrow, Some(irow), |g, row, xi, len| {
                        g.sub_scaled(s, row, xi.expect("row i"), tri, len)
                    })
                })
            });
        }
        // X T = B on the rows of X^T, in place: x^T[i] -= x^T[k] T[k][i] for the k before i.
        let xt = self.alloca(s, br * bc)?;
        self.transpose_mem(b, xt, br, bc, s)?;
        self.dyn_loop(lo, hi, |g, step| {
            let i = ord(g, step)?;
            let irow = g.mul_n(i, br)?;
            g.dyn_loop(g.i64c(0), step, |g, st2| {
                let k = ord(g, st2)?;
                let tki = t(g, k, i)?;
                let krow = g.mul_n(k, br)?;
                g.row_update(xt, s, br, irow, Some(krow), |g, row, xk, len| {
                    g.sub_scaled(s, row, xk.expect("row k"), tki, len)
                })
            })?;
            if !kind.unit {
                let tii = t(g, i, i)?;
                g.row_update(xt, s, br, irow, None, |g, row, _, len| g.splat_div(s, row, tii, len))?;
            }
            Ok(())
        })?;
        self.transpose_mem(xt, dst, bc, br, s)
    }
}
