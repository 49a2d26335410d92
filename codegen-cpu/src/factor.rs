//! Cholesky factorization and triangular solves of register tiles on the CPU, with 128-bit
//! vectors along tile rows.
//!
//! Both give the same bits as the textbook scalar loops that `docs/language.md` §9 specifies
//! (the same products, differences and divisions on every element, in the same order: a
//! product and then a difference, never fused, so that the bits are the LLVM backend's and the
//! SIMT lowering's); only the storage order changes so that the inner operations run on
//! contiguous rows:
//! - `cholesky` is the right-looking unblocked Cholesky of Golub & Van Loan, *Matrix
//!   Computations* (4th ed.), Alg. 4.2.1, with pivots clamped below by `eps`, run on `U = L^T`
//!   (the lower triangle copied to the upper one of a scratch tile): the column below a pivot
//!   becomes a row, and the trailing update `U[k, i] -= U[j, k] * U[j, i]` is a vector
//!   multiply and subtraction along row `k`.
//! - `trsm` is forward or backward substitution (ibid., Alg. 3.1.1 and 3.1.2) vectorised over
//!   the right-hand sides: a left solve `op(A) X = B` updates whole rows of `X`; a right solve
//!   `X op(A) = B` is the left solve `op(A)^T X^T = B^T` on a transposed scratch copy of `X`.
//!
//! Cholesky factorizations of small f32 tiles and transposes of tiles of at most 256 elements
//! are unrolled completely (constant offsets, no branches; see [`unrolled`]); the rest are loops.

use crate::ix::Ix;
use crate::lower::{cl_type, Lower};
use crate::memory::flags;
use crate::tile::vec_ty;
use crate::{err, CodegenError};
use cranelift_codegen::ir::{self, types, InstBuilder};
use cranelift_frontend::Variable;
use cranelift_module::Module as ClModule;
use tilec_midend::{BinOp, Op, Scalar, Trsm};

/// Largest order of a Cholesky factorization that is unrolled completely.
const UNROLL_N: u32 = 16;

/// Whether a Cholesky factorization of order `n` over rows of `vectors` 128-bit vectors is
/// unrolled completely: up to 16 x 16 f32 tiles (measured on the stdlib's potrf_batched,
/// 4096 x 16 x 16 and x 92 x 92: 1.5x and 1.2x faster than loops). Wider rows (f64) stay
/// loops, which keeps each kernel instance's compile time within tens of milliseconds. The
/// triangular solves are always loops: unrolled, they made potrf, trsm and potrs 1.15-1.2x
/// slower (their code no longer fits the instruction cache next to the rest of the kernel).
fn unrolled(n: u32, vectors: u32) -> bool {
    n <= UNROLL_N && n * vectors <= UNROLL_N * 4
}

/// Most vector accumulators one substitution keeps in registers (of the 16 XMM registers).
const GROUP: u32 = 8;

/// The `cols` triangular systems held in the columns of the `n x cols` row-major matrix at `x`
/// (solved in place): with `U[i][k]` the coefficient of unknown `k` in equation `i`, an
/// element of the `n x n` tile at `a` chosen by `kind`, `x[i] = (x[i] - sum_k U[i][k] x[k]) /
/// U[i][i]` over the unknowns already solved, `k` increasing.
#[derive(Clone, Copy)]
struct Systems {
    a: ir::Value,
    x: ir::Value,
    n: u32,
    cols: u32,
    kind: Trsm,
    s: Scalar,
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// Copies the `rows x cols` row-major matrix at `src` transposed to `dst` (`cols x rows`):
    /// by 4 x 4 (f32, i32) or 2 x 2 (f64, i64) blocks of vector unpacks when both extents are
    /// whole blocks, else element by element.
    pub(crate) fn transpose_tile(&mut self, src: ir::Value, dst: ir::Value, (rows, cols): (u32, u32), s: Scalar) {
        let unroll = rows * cols <= UNROLL_N * UNROLL_N;
        let lanes = 16 / s.bytes();
        if s != Scalar::Bool && rows % lanes == 0 && cols % lanes == 0 {
            let (br, bc) = ((rows / lanes) as i64, (cols / lanes) as i64);
            self.ix_loop(Ix::C(0), Ix::C(br), unroll, |l, bi| {
                l.ix_loop(Ix::C(0), Ix::C(bc), unroll, |l, bj| {
                    // Rows bi*lanes.. of src at column bj*lanes, to rows bj*lanes.. of dst at
                    // column bi*lanes.
                    let from = l.ix_affine(bi, lanes as i64 * cols as i64, 0);
                    let c0 = l.ix_affine(bj, lanes as i64, 0);
                    let from = l.ix_add(from, c0);
                    let to = l.ix_affine(bj, lanes as i64 * rows as i64, 0);
                    let r0 = l.ix_affine(bi, lanes as i64, 0);
                    let to = l.ix_add(to, r0);
                    let (fa, fo) = l.ix_addr(src, from, s);
                    let (ta, to) = l.ix_addr(dst, to, s);
                    let rowv: Vec<ir::Value> = (0..lanes)
                        .map(|r| l.b.ins().load(types::I8X16, flags(), fa, fo + (r * cols * 16 / lanes) as i32))
                        .collect();
                    let colv = l.transpose_block(&rowv);
                    for (c, v) in colv.into_iter().enumerate() {
                        l.b.ins().store(flags(), v, ta, to + (c as u32 * rows * 16 / lanes) as i32);
                    }
                });
            });
            return;
        }
        self.ix_loop(Ix::C(0), Ix::C(rows as i64), unroll, |l, i| {
            l.ix_loop(Ix::C(0), Ix::C(cols as i64), unroll, |l, j| {
                l.copy_transposed((src, cols), (dst, rows), i, j, s);
            });
        });
    }

    /// `dst[j][i] = src[i][j]`, for row-major matrices with rows of `src_cols` and `dst_cols`
    /// elements.
    fn copy_transposed(
        &mut self,
        (src, src_cols): (ir::Value, u32),
        (dst, dst_cols): (ir::Value, u32),
        i: Ix,
        j: Ix,
        s: Scalar,
    ) {
        let from = self.ix_affine(i, src_cols as i64, 0);
        let from = self.ix_add(from, j);
        let to = self.ix_affine(j, dst_cols as i64, 0);
        let to = self.ix_add(to, i);
        let (fa, fo) = self.ix_addr(src, from, s);
        let (ta, to) = self.ix_addr(dst, to, s);
        let v = self.ld(s, fa, fo);
        self.st(v, ta, to);
    }

    /// The columns of a 4 x 4 block of 32-bit elements, or a 2 x 2 block of 64-bit elements,
    /// given its rows (as `i8x16`): two rounds of interleaving unpacks.
    pub(crate) fn transpose_block(&mut self, rows: &[ir::Value]) -> Vec<ir::Value> {
        // Byte masks of `shuffle(a, b)` (bytes 0-15 of a, 16-31 of b): x86's punpck{l,h}dq
        // and punpck{l,h}qdq.
        const LO32: [u8; 16] = [0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23];
        const HI32: [u8; 16] = [8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31];
        const LO64: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23];
        const HI64: [u8; 16] = [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31];
        let shuf = |l: &mut Self, a: ir::Value, b: ir::Value, m: [u8; 16]| {
            let imm = l.b.func.dfg.immediates.push(ir::ConstantData::from(m.as_slice()));
            l.b.ins().shuffle(a, b, imm)
        };
        if rows.len() == 2 {
            return vec![shuf(self, rows[0], rows[1], LO64), shuf(self, rows[0], rows[1], HI64)];
        }
        let t0 = shuf(self, rows[0], rows[1], LO32);
        let t1 = shuf(self, rows[2], rows[3], LO32);
        let t2 = shuf(self, rows[0], rows[1], HI32);
        let t3 = shuf(self, rows[2], rows[3], HI32);
        vec![shuf(self, t0, t1, LO64), shuf(self, t0, t1, HI64), shuf(self, t2, t3, LO64), shuf(self, t2, t3, HI64)]
    }

    /// In-place LU without pivoting of an `n x n` tile (`OpKind::Lu`), in loops: for each
    /// step `k`, the column below the pivot divided by it, then each later row updated
    /// `a[i, j] -= l * a[k, j]` for `j > k` (the product, then the difference: the bits of the
    /// SIMT lowering and of the LLVM backend).
    pub(crate) fn lu(&mut self, op: &Op, s: Scalar) {
        let n = self.f.ty(op.args[0]).rows_cols().0 as i64;
        self.copy_tile_to_result(op.args[0], op.results[0]);
        let a = self.tile_addr(op.results[0]);
        let es = s.bytes() as i64;
        let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, n));
        self.dyn_loop(lo, hi, |l, k| {
            let krow = l.b.ins().imul_imm_s(k, n * es);
            let krow = l.b.ins().iadd(a, krow);
            let kk = l.b.ins().imul_imm_s(k, es);
            let pk = l.b.ins().iadd(krow, kk);
            let piv = l.ld(s, pk, 0);
            let k1 = l.b.ins().iadd_imm_s(k, 1);
            let hi = l.b.ins().iconst(types::I64, n);
            l.dyn_loop(k1, hi, |l, i| {
                let irow = l.b.ins().imul_imm_s(i, n * es);
                let irow = l.b.ins().iadd(a, irow);
                let pik = l.b.ins().iadd(irow, kk);
                let x = l.ld(s, pik, 0);
                let m = l.bin(BinOp::Div, s, x, piv);
                l.st(m, pik, 0);
                let hi = l.b.ins().iconst(types::I64, n);
                l.dyn_loop(k1, hi, |l, j| {
                    let jo = l.b.ins().imul_imm_s(j, es);
                    let (pij, pkj) = (l.b.ins().iadd(irow, jo), l.b.ins().iadd(krow, jo));
                    let (x, u) = (l.ld(s, pij, 0), l.ld(s, pkj, 0));
                    let p = l.bin(BinOp::Mul, s, m, u);
                    let y = l.bin(BinOp::Sub, s, x, p);
                    l.st(y, pij, 0);
                });
            });
        });
    }

    /// In-place Cholesky of an `n x n` tile (lower factor; upper triangle zeroed).
    pub(crate) fn cholesky(&mut self, op: &Op, s: Scalar) -> Result<(), CodegenError> {
        self.copy_tile_to_result(op.args[0], op.results[0]);
        let (n, _) = self.f.ty(op.results[0]).rows_cols();
        let p = self.tile_addr(op.results[0]);
        let eps = self.val(op.args[1]);
        let vt = vec_ty(s).ok_or_else(|| err("cholesky of a non-float tile"))?;
        let (esz, lanes) = (s.bytes(), 16 / s.bytes());
        // U's rows are padded to whole vectors; the padding and U's strict lower triangle take
        // part in the vector operations but never reach the factor (zeroed first so that no
        // stale bits, such as denormals, slow them down).
        let nv = n.div_ceil(lanes);
        let ns = (nv * lanes) as i64;
        let u = self.scratch(n * ns as u32 * esz);
        self.zero_bytes(u, n * ns as u32 * esz);
        let unroll = unrolled(n, nv);
        let (zero, nn) = (Ix::C(0), Ix::C(n as i64));
        // U[j, i] = a[i, j] for i >= j.
        self.ix_loop(zero, nn, unroll, |l, i| {
            let i1 = l.ix_affine(i, 1, 1);
            l.ix_loop(zero, i1, unroll, |l, j| l.copy_transposed((p, n), (u, ns as u32), i, j, s));
        });
        self.ix_loop(zero, nn, unroll, |l, j| {
            // Pivot: clamp below by eps, then the square root.
            let jj = l.ix_affine(j, ns + 1, 0);
            let (ja, jo) = l.ix_addr(u, jj, s);
            let ujj = l.ld(s, ja, jo);
            let ujj = l.bin(BinOp::Max, s, ujj, eps);
            let d = l.b.ins().sqrt(ujj);
            // Row j right of the pivot (whole vectors from the one holding column j + 1; the
            // pivot itself is stored after them).
            let dv = l.b.ins().splat(vt, d);
            let j1 = l.ix_affine(j, 1, 1);
            let v0 = l.ix_div_pow2(j1, lanes as i64);
            let row_j = l.ix_affine(j, ns, 0);
            l.ix_loop(v0, Ix::C(nv as i64), unroll, |l, v| {
                let e = l.ix_affine(v, lanes as i64, 0);
                let e = l.ix_add(row_j, e);
                let (a, o) = l.ix_addr(u, e, s);
                let x = l.b.ins().load(vt, flags(), a, o);
                let y = l.b.ins().fdiv(x, dv);
                l.b.ins().store(flags(), y, a, o);
            });
            l.st(d, ja, jo);
            // Trailing update, row k > j: U[k, i] -= U[j, k] * U[j, i] for i >= k.
            l.ix_loop(j1, nn, unroll, |l, k| {
                let jk = l.ix_add(row_j, k);
                let (a, o) = l.ix_addr(u, jk, s);
                let c = l.ld(s, a, o);
                let cv = l.b.ins().splat(vt, c);
                let row_k = l.ix_affine(k, ns, 0);
                let v0 = l.ix_div_pow2(k, lanes as i64);
                l.ix_loop(v0, Ix::C(nv as i64), unroll, |l, v| {
                    let e = l.ix_affine(v, lanes as i64, 0);
                    let ej = l.ix_add(row_j, e);
                    let ek = l.ix_add(row_k, e);
                    let (aj, oj) = l.ix_addr(u, ej, s);
                    let (ak, ok) = l.ix_addr(u, ek, s);
                    let xj = l.b.ins().load(vt, flags(), aj, oj);
                    let xk = l.b.ins().load(vt, flags(), ak, ok);
                    // The product, then the difference (not fused): the bits of the LLVM
                    // backend and of the SIMT lowering.
                    let p = l.b.ins().fmul(cv, xj);
                    let r = l.b.ins().fsub(xk, p);
                    l.b.ins().store(flags(), r, ak, ok);
                });
            });
        });
        // a[i, j] = U[j, i] for i >= j, then the strict upper triangle is zeroed.
        self.ix_loop(zero, nn, unroll, |l, i| {
            let i1 = l.ix_affine(i, 1, 1);
            l.ix_loop(zero, i1, unroll, |l, j| l.copy_transposed((u, ns as u32), (p, n), j, i, s));
        });
        let z = self.zero(s);
        for i in 0..n {
            for k in i + 1..n {
                self.st(z, p, ((i * n + k) * esz) as i32);
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
        if kind.left {
            // The systems are the columns of X (n x bc).
            self.substitute(Systems { a, x, n, cols: bc, kind, s })
        } else {
            // X (br x n) op(A) = B is op(A)^T X^T = B^T: the systems are the columns of X^T.
            let xt = self.scratch(n * br * s.bytes());
            self.transpose_tile(x, xt, (br, n), s);
            self.substitute(Systems { a, x: xt, n, cols: br, kind, s })?;
            self.transpose_tile(xt, x, (n, br), s);
            Ok(())
        }
    }

    /// Solves the systems of `sys` in place. Whole vectors of columns go through
    /// `substitute_columns` in groups; the columns past the last whole vector are solved one at
    /// a time.
    fn substitute(&mut self, sys: Systems) -> Result<(), CodegenError> {
        let s = sys.s;
        let vt = vec_ty(s).ok_or_else(|| err("triangular solve of a non-float tile"))?;
        let lanes = 16 / s.bytes();
        let nv = sys.cols / lanes;
        let mut g0 = 0;
        while g0 < nv {
            let g = GROUP.min(nv - g0);
            self.substitute_columns(sys, (g0 * lanes, g, Some(vt)));
            g0 += g;
        }
        for c in nv * lanes..sys.cols {
            self.substitute_columns(sys, (c, 1, None));
        }
        Ok(())
    }

    /// Substitution on `count` vectors of columns of `sys.x` from column `c0` (`vt: None`: one
    /// scalar column), with the accumulators of each unknown in registers.
    fn substitute_columns(&mut self, sys: Systems, (c0, count, vt): (u32, u32, Option<ir::Type>)) {
        let Systems { a, x, n, cols, kind, s } = sys;
        let ty = vt.unwrap_or(cl_type(s));
        let step_bytes = (vt.map_or(1, |_| 16 / s.bytes()) * s.bytes()) as i32;
        let nn = n as i64;
        // The triangular factor T = op(A) is lower exactly when A is lower and not transposed,
        // or upper and transposed. A left solve with lower T runs forward; so does a right one
        // with upper T (whose transposed system is lower).
        let t_lower = kind.lower != kind.trans;
        let forward = kind.left == t_lower;
        // The element of `a` holding the coefficient of unknown k in equation i.
        let coef = |l: &mut Self, i: Ix, k: Ix| -> (ir::Value, i32) {
            let (r, c) = if kind.left { (i, k) } else { (k, i) };
            let (r, c) = if kind.trans { (c, r) } else { (r, c) };
            let e = l.ix_affine(r, nn, 0);
            let e = l.ix_add(e, c);
            l.ix_addr(a, e, s)
        };
        let cell = |l: &mut Self, row: Ix, v: u32| -> (ir::Value, i32) {
            let e = l.ix_affine(row, cols as i64, c0 as i64);
            let (p, o) = l.ix_addr(x, e, s);
            (p, o + v as i32 * step_bytes)
        };
        self.ix_loop(Ix::C(0), Ix::C(nn), false, |l, step| {
            let i = if forward { step } else { l.ix_affine(step, -1, nn - 1) };
            let accs: Vec<Variable> = (0..count)
                .map(|v| {
                    let (p, o) = cell(l, i, v);
                    let init = l.b.ins().load(ty, flags(), p, o);
                    let var = l.b.declare_var(ty);
                    l.b.def_var(var, init);
                    var
                })
                .collect();
            // The unknowns solved before, in the order they were solved: `k = 0 .. i` forward,
            // `k = n-1` down to `i+1` backward (the documented order: the same bits as LLVM).
            l.ix_loop(Ix::C(0), step, false, |l, j| {
                let k = if forward { j } else { l.ix_affine(j, -1, nn - 1) };
                let (ta, to) = coef(l, i, k);
                let t = l.ld(s, ta, to);
                let t = if vt.is_some() { l.b.ins().splat(ty, t) } else { t };
                for (v, var) in accs.iter().enumerate() {
                    let (p, o) = cell(l, k, v as u32);
                    let xk = l.b.ins().load(ty, flags(), p, o);
                    let cur = l.b.use_var(*var);
                    // The product, then the difference, as in `cholesky`.
                    let prod = l.b.ins().fmul(t, xk);
                    let nxt = l.b.ins().fsub(cur, prod);
                    l.b.def_var(*var, nxt);
                }
            });
            let d = if kind.unit {
                None
            } else {
                let (da, dof) = coef(l, i, i);
                let d = l.ld(s, da, dof);
                Some(if vt.is_some() { l.b.ins().splat(ty, d) } else { d })
            };
            for (v, var) in accs.iter().enumerate() {
                let mut xi = l.b.use_var(*var);
                if let Some(d) = d {
                    xi = l.b.ins().fdiv(xi, d);
                }
                let (p, o) = cell(l, i, v as u32);
                l.b.ins().store(flags(), xi, p, o);
            }
        });
    }
}
