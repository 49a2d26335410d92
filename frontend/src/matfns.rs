//! The functions of small matrices and vectors (language §3.6): `transpose`, `outer`, `dot`,
//! `cross`, `norm`, `trace`, `determinant`, `inverse`, `sym_eig`, `svd` and
//! `polar_decompose`. Each is written out on the entries (straight-line code: every choice a
//! select, never a branch), so that it runs per lane on GPUs, vectorizes over a tile of
//! matrices on the CPU, and gives the same bits on every target.
//!
//! Sources: the 4x4 cofactor inverse is the Laplace expansion by complementary 2x2 minors;
//! beyond 4x4, Gauss-Jordan elimination with partial pivoting (Golub and Van Loan, Matrix
//! Computations, 4th ed., §3.4); `sym_eig` is the cyclic Jacobi method with the rotation of
//! their Algorithm 8.5.1 (`symSchur2`); `svd` is one-sided (Hestenes) Jacobi, whose rotations
//! make the columns of `A V` orthogonal (their §8.6.3; Demmel and Veselić, "Jacobi's method is
//! more accurate than QR", SIAM J. Matrix Anal. Appl. 13(4), 1992), followed by a Givens QR of
//! `A V` that gives `U` as a rotation, as in McAdams et al., "Computing the singular value
//! decomposition of 3x3 matrices with minimal branching and elementary floating point
//! operations" (UW-Madison TR1690, 2011).

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use crate::mats::{mat_dims, outer_shape};
use tilec_grammar::ast::{Expr, Ident};
use tilec_grammar::span::Span;
use tilec_midend::{BinOp, CmpOp, Scalar, UnOp, Value};

/// The built-in functions of small matrices that `calls.rs` sends here.
pub(crate) const MAT_FNS: &[&str] =
    &["dot", "cross", "norm", "trace", "determinant", "inverse", "sym_eig", "svd", "polar_decompose"];

/// The largest order of `sym_eig`, `svd` and `polar_decompose`.
const MAX_EIG_ORDER: u32 = 4;

/// Jacobi sweeps for order `n`: enough to converge from any start (measured on random,
/// graded, rank-deficient and repeated-eigenvalue matrices: 3 sweeps (`f32`) and 4 (`f64`)
/// at order 3, one more at order 4), with one sweep to spare.
fn sweeps(n: u32, elem: Scalar) -> u32 {
    match (n, elem) {
        (0..=2, _) => 2,
        (_, Scalar::F64) => n + 3,
        _ => n + 2,
    }
}

/// Entry-level arithmetic of one call: every op at the call's span, constants of `elem`.
struct E<'b, 'c, 's> {
    b: &'b mut FnBuilder<'c, 's>,
    elem: Scalar,
    span: Span,
}

impl E<'_, '_, '_> {
    fn bin(&mut self, k: BinOp, a: Value, c: Value) -> Value {
        self.b.e_bin(k, a, c, self.span)
    }
    fn add(&mut self, a: Value, c: Value) -> Value {
        self.bin(BinOp::Add, a, c)
    }
    fn sub(&mut self, a: Value, c: Value) -> Value {
        self.bin(BinOp::Sub, a, c)
    }
    fn mul(&mut self, a: Value, c: Value) -> Value {
        self.bin(BinOp::Mul, a, c)
    }
    fn div(&mut self, a: Value, c: Value) -> Value {
        self.bin(BinOp::Div, a, c)
    }
    fn neg(&mut self, a: Value) -> Value {
        self.b.e_un(UnOp::Neg, a, self.span)
    }
    fn abs(&mut self, a: Value) -> Value {
        self.b.e_un(UnOp::Abs, a, self.span)
    }
    fn sqrt(&mut self, a: Value) -> Value {
        self.b.e_un(UnOp::Sqrt, a, self.span)
    }
    fn k(&mut self, x: f64) -> Value {
        self.b.e_const(x, self.elem, self.span)
    }
    fn cmp(&mut self, k: CmpOp, a: Value, c: Value) -> Value {
        self.b.e_cmp(k, a, c, self.span)
    }
    fn sel(&mut self, c: Value, a: Value, d: Value) -> Value {
        self.b.e_select(c, a, d, self.span)
    }
    /// `a*b - c*d`.
    fn det2(&mut self, a: Value, b: Value, c: Value, d: Value) -> Value {
        let x = self.mul(a, b);
        let y = self.mul(c, d);
        self.sub(x, y)
    }
    /// The sum of `terms` in order.
    fn sum(&mut self, terms: &[Value]) -> Value {
        let mut acc = terms[0];
        for t in &terms[1..] {
            acc = self.add(acc, *t);
        }
        acc
    }
    /// `sum(a[i] * b[i])`, in order.
    fn dot(&mut self, a: &[Value], c: &[Value]) -> Value {
        let prods: Vec<Value> = a.iter().zip(c).map(|(x, y)| self.mul(*x, *y)).collect();
        self.sum(&prods)
    }
    /// Exchanges `a` and `b` where `c` holds.
    fn swap_if(&mut self, c: Value, a: &mut Value, b: &mut Value) {
        let (x, y) = (*a, *b);
        *a = self.sel(c, y, x);
        *b = self.sel(c, x, y);
    }

    /// The Jacobi rotation `(c, s)` that annihilates the off-diagonal entry of the symmetric
    /// 2x2 matrix `[[app, apq], [apq, aqq]]` (Golub and Van Loan, Algorithm 8.5.1): `t =
    /// sign(tau) / (|tau| + sqrt(1 + tau^2))` with `tau = (aqq - app) / (2 apq)`, `c = 1 /
    /// sqrt(1 + t^2)`, `s = t c`; the identity when `apq` is zero.
    fn jacobi_rotation(&mut self, app: Value, apq: Value, aqq: Value) -> (Value, Value) {
        let (zero, one, two) = (self.k(0.0), self.k(1.0), self.k(2.0));
        let none = self.cmp(CmpOp::Eq, apq, zero);
        let twice = self.mul(two, apq);
        let den = self.sel(none, one, twice);
        let diff = self.sub(aqq, app);
        let tau = self.div(diff, den);
        let pos = self.cmp(CmpOp::Ge, tau, zero);
        let m1 = self.k(-1.0);
        let sign = self.sel(pos, one, m1);
        let tt = self.mul(tau, tau);
        let r = self.add(one, tt);
        let r = self.sqrt(r);
        let at = self.abs(tau);
        let d = self.add(at, r);
        let t = self.div(sign, d);
        let t = self.sel(none, zero, t);
        let tt = self.mul(t, t);
        let r = self.add(one, tt);
        let r = self.sqrt(r);
        let c = self.div(one, r);
        let s = self.mul(t, c);
        (c, s)
    }

    /// Rotates columns `p` and `q` of the row-major `rows x n` matrix `m`: `(m_p, m_q) <-
    /// (c m_p - s m_q, s m_p + c m_q)`.
    fn rotate_cols(&mut self, m: &mut [Value], n: usize, p: usize, q: usize, c: Value, s: Value) {
        let pairs: Vec<(usize, usize)> = (0..m.len() / n).map(|r| (r * n + p, r * n + q)).collect();
        self.rotate(m, &pairs, c, s);
    }

    /// Rotates rows `p` and `q` of the row-major `n x n` matrix `m` as `rotate_cols` does
    /// columns.
    fn rotate_rows(&mut self, m: &mut [Value], n: usize, p: usize, q: usize, c: Value, s: Value) {
        let pairs: Vec<(usize, usize)> = (0..n).map(|k| (p * n + k, q * n + k)).collect();
        self.rotate(m, &pairs, c, s);
    }

    /// `(m[a], m[b]) <- (c m[a] - s m[b], s m[a] + c m[b])` for every pair `(a, b)`.
    fn rotate(&mut self, m: &mut [Value], pairs: &[(usize, usize)], c: Value, s: Value) {
        for &(a, b) in pairs {
            let (x, y) = (m[a], m[b]);
            let cx = self.mul(c, x);
            let sy = self.mul(s, y);
            let sx = self.mul(s, x);
            let cy = self.mul(c, y);
            m[a] = self.sub(cx, sy);
            m[b] = self.add(sx, cy);
        }
    }

    /// Column `j` of the row-major `n x n` matrix `m`.
    fn col(m: &[Value], n: usize, j: usize) -> Vec<Value> {
        (0..n).map(|i| m[i * n + j]).collect()
    }

    fn determinant(&mut self, a: &[Value], n: usize) -> Value {
        let m = |i: usize, j: usize| a[i * n + j];
        match n {
            1 => a[0],
            2 => self.det2(a[0], a[3], a[1], a[2]),
            3 => {
                let c0 = self.det2(m(1, 1), m(2, 2), m(1, 2), m(2, 1));
                let c1 = self.det2(m(1, 0), m(2, 2), m(1, 2), m(2, 0));
                let c2 = self.det2(m(1, 0), m(2, 1), m(1, 1), m(2, 0));
                let t0 = self.mul(m(0, 0), c0);
                let t1 = self.mul(m(0, 1), c1);
                let t2 = self.mul(m(0, 2), c2);
                let d = self.sub(t0, t1);
                self.add(d, t2)
            }
            4 => self.minors4(a).0,
            _ => self.gauss_jordan(a, n, false).0,
        }
    }

    /// The 2x2 minors of rows 0-1 (`s`) and rows 2-3 (`c`) of a 4x4 matrix and its
    /// determinant: `(det, s, c)`.
    fn minors4(&mut self, a: &[Value]) -> (Value, [Value; 6], [Value; 6]) {
        let m = |i: usize, j: usize| a[i * 4 + j];
        let mut s = [a[0]; 6];
        let mut c = [a[0]; 6];
        let pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)];
        for (k, (x, y)) in pairs.iter().enumerate() {
            s[k] = self.det2(m(0, *x), m(1, *y), m(1, *x), m(0, *y));
            c[k] = self.det2(m(2, *x), m(3, *y), m(3, *x), m(2, *y));
        }
        // det = s01 c23 - s02 c13 + s03 c12 + s12 c03 - s13 c02 + s23 c01
        let t: Vec<Value> = (0..6).map(|k| self.mul(s[k], c[5 - k])).collect();
        let d = self.sub(t[0], t[1]);
        let d = self.add(d, t[2]);
        let d = self.add(d, t[3]);
        let d = self.sub(d, t[4]);
        let d = self.add(d, t[5]);
        (d, s, c)
    }

    /// `sum(sign_k * m(i_k, j_k) * x_k)` for three terms.
    fn cof3(&mut self, terms: [(f64, Value, Value); 3]) -> Value {
        let mut acc: Option<Value> = None;
        for (sg, x, y) in terms {
            let p = self.mul(x, y);
            acc = Some(match (acc, sg > 0.0) {
                (None, true) => p,
                (None, false) => self.neg(p),
                (Some(a), true) => self.add(a, p),
                (Some(a), false) => self.sub(a, p),
            });
        }
        acc.expect("three terms")
    }

    fn inverse(&mut self, a: &[Value], n: usize) -> Vec<Value> {
        let m = |i: usize, j: usize| a[i * n + j];
        match n {
            1 => {
                let one = self.k(1.0);
                vec![self.div(one, a[0])]
            }
            2 => {
                let d = self.determinant(a, 2);
                let (b, c) = (self.neg(a[1]), self.neg(a[2]));
                [a[3], b, c, a[0]].iter().map(|x| self.div(*x, d)).collect()
            }
            3 => {
                // The adjugate: inv[i][j] = cofactor(j, i) / det.
                let mut cof = [a[0]; 9];
                for i in 0..3 {
                    for j in 0..3 {
                        let (r0, r1) = ([1, 0, 0][i], [2, 2, 1][i]);
                        let (c0, c1) = ([1, 0, 0][j], [2, 2, 1][j]);
                        let d = self.det2(m(r0, c0), m(r1, c1), m(r0, c1), m(r1, c0));
                        cof[i * 3 + j] = if (i + j) % 2 == 1 { self.neg(d) } else { d };
                    }
                }
                let t: Vec<Value> = (0..3).map(|j| self.mul(m(0, j), cof[j])).collect();
                let d = self.sum(&t);
                (0..9).map(|k| self.div(cof[(k % 3) * 3 + k / 3], d)).collect()
            }
            4 => {
                let (d, s, c) = self.minors4(a);
                let p = |sg: f64, i: usize, j: usize, x: Value| (sg, m(i, j), x);
                #[rustfmt::skip]
                let rows: [[(f64, Value, Value); 3]; 16] = [
                    [p(1.0, 1, 1, c[5]), p(-1.0, 1, 2, c[4]), p(1.0, 1, 3, c[3])],
                    [p(-1.0, 0, 1, c[5]), p(1.0, 0, 2, c[4]), p(-1.0, 0, 3, c[3])],
                    [p(1.0, 3, 1, s[5]), p(-1.0, 3, 2, s[4]), p(1.0, 3, 3, s[3])],
                    [p(-1.0, 2, 1, s[5]), p(1.0, 2, 2, s[4]), p(-1.0, 2, 3, s[3])],
                    [p(-1.0, 1, 0, c[5]), p(1.0, 1, 2, c[2]), p(-1.0, 1, 3, c[1])],
                    [p(1.0, 0, 0, c[5]), p(-1.0, 0, 2, c[2]), p(1.0, 0, 3, c[1])],
                    [p(-1.0, 3, 0, s[5]), p(1.0, 3, 2, s[2]), p(-1.0, 3, 3, s[1])],
                    [p(1.0, 2, 0, s[5]), p(-1.0, 2, 2, s[2]), p(1.0, 2, 3, s[1])],
                    [p(1.0, 1, 0, c[4]), p(-1.0, 1, 1, c[2]), p(1.0, 1, 3, c[0])],
                    [p(-1.0, 0, 0, c[4]), p(1.0, 0, 1, c[2]), p(-1.0, 0, 3, c[0])],
                    [p(1.0, 3, 0, s[4]), p(-1.0, 3, 1, s[2]), p(1.0, 3, 3, s[0])],
                    [p(-1.0, 2, 0, s[4]), p(1.0, 2, 1, s[2]), p(-1.0, 2, 3, s[0])],
                    [p(-1.0, 1, 0, c[3]), p(1.0, 1, 1, c[1]), p(-1.0, 1, 2, c[0])],
                    [p(1.0, 0, 0, c[3]), p(-1.0, 0, 1, c[1]), p(1.0, 0, 2, c[0])],
                    [p(-1.0, 3, 0, s[3]), p(1.0, 3, 1, s[1]), p(-1.0, 3, 2, s[0])],
                    [p(1.0, 2, 0, s[3]), p(-1.0, 2, 1, s[1]), p(1.0, 2, 2, s[0])],
                ];
                rows.into_iter()
                    .map(|t| {
                        let x = self.cof3(t);
                        self.div(x, d)
                    })
                    .collect()
            }
            _ => self.gauss_jordan(a, n, true).1,
        }
    }

    /// Gauss-Jordan elimination with partial pivoting on `[a | I]` (row-major `n x n`):
    /// `(det(a), a^-1)` (the inverse only when `want_inverse`). The pivot of column `k` is
    /// brought to row `k` by exchanging rows where a later row's entry is larger in magnitude,
    /// each exchange a select, so that the code has no branches.
    fn gauss_jordan(&mut self, a: &[Value], n: usize, want_inverse: bool) -> (Value, Vec<Value>) {
        let mut a = a.to_vec();
        let (zero, one) = (self.k(0.0), self.k(1.0));
        let mut x: Vec<Value> =
            if want_inverse { (0..n * n).map(|e| if e / n == e % n { one } else { zero }).collect() } else { vec![] };
        let mut sign = one;
        let mut det = one;
        let xn = if want_inverse { n } else { 0 };
        for k in 0..n {
            for i in k + 1..n {
                let (ak, ai) = (self.abs(a[k * n + k]), self.abs(a[i * n + k]));
                let bigger = self.cmp(CmpOp::Gt, ai, ak);
                for j in k..n {
                    let (mut p, mut q) = (a[k * n + j], a[i * n + j]);
                    self.swap_if(bigger, &mut p, &mut q);
                    a[k * n + j] = p;
                    a[i * n + j] = q;
                }
                for j in 0..xn {
                    let (mut p, mut q) = (x[k * n + j], x[i * n + j]);
                    self.swap_if(bigger, &mut p, &mut q);
                    x[k * n + j] = p;
                    x[i * n + j] = q;
                }
                let flipped = self.neg(sign);
                sign = self.sel(bigger, flipped, sign);
            }
            let pivot = a[k * n + k];
            det = self.mul(det, pivot);
            for j in k + 1..n {
                a[k * n + j] = self.div(a[k * n + j], pivot);
            }
            for j in 0..xn {
                x[k * n + j] = self.div(x[k * n + j], pivot);
            }
            let rows: Vec<usize> =
                if want_inverse { (0..n).filter(|&i| i != k).collect() } else { (k + 1..n).collect() };
            for i in rows {
                let f = a[i * n + k];
                for j in k + 1..n {
                    let p = self.mul(f, a[k * n + j]);
                    a[i * n + j] = self.sub(a[i * n + j], p);
                }
                for j in 0..xn {
                    let p = self.mul(f, x[k * n + j]);
                    x[i * n + j] = self.sub(x[i * n + j], p);
                }
            }
        }
        (self.mul(det, sign), x)
    }

    /// Sorts `keys` (descending when `desc`) with a bubble network of compare-exchanges,
    /// exchanging the columns of the row-major `n x n` matrices `cols` with them; the second
    /// column of each exchange is negated, so that a rotation stays one.
    fn sort_with_columns(&mut self, keys: &mut [Value], cols: &mut [&mut Vec<Value>], n: usize, desc: bool) {
        for pass in 0..n {
            for i in 0..n - 1 - pass {
                let j = i + 1;
                let out =
                    if desc { self.cmp(CmpOp::Lt, keys[i], keys[j]) } else { self.cmp(CmpOp::Gt, keys[i], keys[j]) };
                let (mut p, mut q) = (keys[i], keys[j]);
                self.swap_if(out, &mut p, &mut q);
                keys[i] = p;
                keys[j] = q;
                for m in cols.iter_mut() {
                    for r in 0..n {
                        let (x, y) = (m[r * n + i], m[r * n + j]);
                        let ny = self.neg(x);
                        m[r * n + i] = self.sel(out, y, x);
                        m[r * n + j] = self.sel(out, ny, y);
                    }
                }
            }
        }
    }

    /// The eigenvalues (ascending) and eigenvectors (columns of a rotation) of the symmetric
    /// `n x n` matrix `a` (its lower triangle is read): cyclic Jacobi.
    fn sym_eig(&mut self, a: &[Value], n: usize) -> (Vec<Value>, Vec<Value>) {
        let mut m = a.to_vec();
        for i in 0..n {
            for j in i + 1..n {
                m[i * n + j] = m[j * n + i];
            }
        }
        let (zero, one) = (self.k(0.0), self.k(1.0));
        let mut v: Vec<Value> = (0..n * n).map(|e| if e / n == e % n { one } else { zero }).collect();
        for _ in 0..sweeps(n as u32, self.elem) {
            for p in 0..n {
                for q in p + 1..n {
                    let (c, s) = self.jacobi_rotation(m[p * n + p], m[p * n + q], m[q * n + q]);
                    self.rotate_cols(&mut m, n, p, q, c, s);
                    self.rotate_rows(&mut m, n, p, q, c, s);
                    self.rotate_cols(&mut v, n, p, q, c, s);
                }
            }
        }
        let mut w: Vec<Value> = (0..n).map(|i| m[i * n + i]).collect();
        self.sort_with_columns(&mut w, &mut [&mut v], n, false);
        (w, v)
    }

    /// `a = U diag(S) V^T` with `U` and `V` rotations (determinant 1) and `|S|` descending;
    /// the last entry of `S` is negative when `det(a) < 0` (the convention of MPM codes).
    /// One-sided Jacobi on the columns of `B = a V`, then a Givens QR of `B`.
    fn svd(&mut self, a: &[Value], n: usize) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
        let mut b = a.to_vec();
        let (zero, one) = (self.k(0.0), self.k(1.0));
        let ident: Vec<Value> = (0..n * n).map(|e| if e / n == e % n { one } else { zero }).collect();
        let mut v = ident.clone();
        for _ in 0..sweeps(n as u32, self.elem) {
            for p in 0..n {
                for q in p + 1..n {
                    let (bp, bq) = (Self::col(&b, n, p), Self::col(&b, n, q));
                    let alpha = self.dot(&bp, &bp);
                    let beta = self.dot(&bq, &bq);
                    let gamma = self.dot(&bp, &bq);
                    let (c, s) = self.jacobi_rotation(alpha, gamma, beta);
                    self.rotate_cols(&mut b, n, p, q, c, s);
                    self.rotate_cols(&mut v, n, p, q, c, s);
                }
            }
        }
        let mut norms: Vec<Value> = (0..n)
            .map(|j| {
                let c = Self::col(&b, n, j);
                self.dot(&c, &c)
            })
            .collect();
        self.sort_with_columns(&mut norms, &mut [&mut b, &mut v], n, true);
        // Givens QR of B: rows p, q rotated so that B[q][p] becomes 0; U = G1^T G2^T ...
        let mut u = ident;
        for p in 0..n {
            for q in p + 1..n {
                let (x, y) = (b[p * n + p], b[q * n + p]);
                let xx = self.mul(x, x);
                let yy = self.mul(y, y);
                let r2 = self.add(xx, yy);
                let r = self.sqrt(r2);
                let none = self.cmp(CmpOp::Eq, r, zero);
                let safe = self.sel(none, one, r);
                let c = self.div(x, safe);
                let c = self.sel(none, one, c);
                let s = self.div(y, safe);
                let s = self.sel(none, zero, s);
                // rows: (b_p, b_q) <- (c b_p + s b_q, -s b_p + c b_q); U's columns alike.
                let ms = self.neg(s);
                self.rotate_rows(&mut b, n, p, q, c, ms);
                self.rotate_cols(&mut u, n, p, q, c, ms);
            }
        }
        let s: Vec<Value> = (0..n).map(|i| b[i * n + i]).collect();
        (u, s, v)
    }
}

impl FnBuilder<'_, '_> {
    /// `transpose(m)` of a small matrix.
    pub(crate) fn mat_transpose(&mut self, v: Value, arg: Span, span: Span) -> Ev {
        let t = self.ty(v);
        let (r, c) = match mat_dims(&t) {
            Some([r, c]) => (*r, *c),
            _ => {
                self.error(errors::mat_arg(arg, "transpose", "a matrix", &t));
                return Ev::Err;
            }
        };
        let p = self.entries(v, span);
        let parts = (0..r * c).map(|k| p[((k % r) * c + k / r) as usize]).collect();
        Ev::Val(self.build_mat(t.elem(), &[c, r], parts, span))
    }

    /// `outer(u, v)` of two vectors: the matrix `u v^T`.
    pub(crate) fn mat_outer(&mut self, u: Value, v: Value, span: Span) -> Ev {
        let (tu, tv) = (self.ty(u), self.ty(v));
        let (Some([m]), Some([n])) = (mat_dims(&tu), mat_dims(&tv)) else {
            self.error(errors::mat_operands(span, "`outer`", &tu, Some(&tv)));
            return Ev::Err;
        };
        let (m, n) = (*m, *n);
        if tu.elem() != tv.elem() || !self.shapes_agree(&tu, &tv) {
            self.error(errors::mat_operands(span, "`outer`", &tu, Some(&tv)));
            return Ev::Err;
        }
        let (pu, pv) = (self.entries(u, span), self.entries(v, span));
        let mut parts = Vec::new();
        for x in &pu {
            for y in &pv {
                parts.push(self.e_bin(BinOp::Mul, *x, *y, span));
            }
        }
        Ev::Val(self.build_mat(tu.elem(), &[m, n], parts, span))
    }

    /// A small-matrix built-in of [`MAT_FNS`].
    pub(crate) fn mat_fn(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let name = f.name.as_str();
        let want = if matches!(name, "dot" | "cross") { 2 } else { 1 };
        if args.len() != want {
            self.error(errors::arg_count(e.span, name, want, args.len()));
            return Ev::Err;
        }
        let mut vals = Vec::new();
        for a in args {
            let Some(v) = self.value(a, None) else {
                return Ev::Err;
            };
            vals.push(v);
        }
        let t = self.ty(vals[0]);
        let span = e.span;
        let dims = mat_dims(&t).map(<[u32]>::to_vec);
        let float = t.elem().is_float();
        let square = matches!(dims.as_deref(), Some([r, c]) if r == c);
        let (ok, need) = match name {
            "dot" | "cross" => {
                let t2 = self.ty(vals[1]);
                let vec = matches!(dims.as_deref(), Some([n]) if name == "dot" || *n == 3);
                (vec && mat_dims(&t2) == dims.as_deref() && t2.elem() == t.elem() && self.shapes_agree(&t, &t2), "")
            }
            "norm" => (dims.is_some() && float, "a float matrix or vector"),
            "trace" => (square, "a square matrix"),
            "determinant" | "inverse" => (square && float, "a square float matrix"),
            _ => (
                square && float && dims.as_ref().is_some_and(|d| d[0] <= MAX_EIG_ORDER),
                "a square float matrix of order 1 to 4",
            ),
        };
        if !ok {
            if need.is_empty() {
                let t2 = self.ty(vals[1]);
                let what = if name == "dot" { "`dot`" } else { "`cross` (of two `vec<T, 3>`)" };
                self.error(errors::mat_operands(span, what, &t, Some(&t2)));
            } else {
                self.error(errors::mat_arg(args[0].span, name, need, &t));
            }
            return Ev::Err;
        }
        let dims = dims.expect("checked");
        let n = dims[0] as usize;
        let elem = t.elem();
        let a = self.entries(vals[0], span);
        // Results have the argument's tile shape, also where every entry is a constant (the
        // rotations of a 1x1 `svd`).
        let shape = outer_shape(&t);
        let build =
            |g: &mut Self, dims: &[u32], parts: Vec<Value>| g.build_mat_as(elem, dims, parts, shape.clone(), span);
        let mut x = E { b: self, elem, span };
        match name {
            "dot" => {
                let c = x.b.entries(vals[1], span);
                let d = x.dot(&a, &c);
                Ev::Val(self.entry_value(d, span))
            }
            "cross" => {
                let c = x.b.entries(vals[1], span);
                let parts = vec![
                    x.det2(a[1], c[2], a[2], c[1]),
                    x.det2(a[2], c[0], a[0], c[2]),
                    x.det2(a[0], c[1], a[1], c[0]),
                ];
                Ev::Val(build(self, &[3], parts))
            }
            "norm" => {
                let s = x.dot(&a, &a);
                let r = x.sqrt(s);
                Ev::Val(self.entry_value(r, span))
            }
            "trace" => {
                let d: Vec<Value> = (0..n).map(|i| a[i * n + i]).collect();
                let r = x.sum(&d);
                Ev::Val(self.entry_value(r, span))
            }
            "determinant" => {
                let r = x.determinant(&a, n);
                Ev::Val(self.entry_value(r, span))
            }
            "inverse" => {
                let parts = x.inverse(&a, n);
                Ev::Val(build(self, &dims, parts))
            }
            "sym_eig" => {
                let (w, v) = x.sym_eig(&a, n);
                let w = build(self, &[n as u32], w);
                let v = build(self, &dims, v);
                Ev::Vals(vec![w, v])
            }
            "svd" => {
                let (u, s, v) = x.svd(&a, n);
                let u = build(self, &dims, u);
                let s = build(self, &[n as u32], s);
                let v = build(self, &dims, v);
                Ev::Vals(vec![u, s, v])
            }
            _ => {
                // polar_decompose: a = R P with R = U V^T (a rotation) and P = V diag(S) V^T.
                let (u, s, v) = x.svd(&a, n);
                let mut r = Vec::new();
                let mut p = Vec::new();
                for i in 0..n {
                    for j in 0..n {
                        let ui: Vec<Value> = (0..n).map(|k| u[i * n + k]).collect();
                        let vj: Vec<Value> = (0..n).map(|k| v[j * n + k]).collect();
                        r.push(x.dot(&ui, &vj));
                        let vi: Vec<Value> = (0..n).map(|k| v[i * n + k]).collect();
                        let vis: Vec<Value> = vi.iter().zip(&s).map(|(a, b)| x.mul(*a, *b)).collect();
                        p.push(x.dot(&vis, &vj));
                    }
                }
                let r = build(self, &dims, r);
                let p = build(self, &dims, p);
                Ev::Vals(vec![r, p])
            }
        }
    }
}
