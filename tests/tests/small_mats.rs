//! Small matrices and vectors (language §3.6) on the CPU target, both code generators, against
//! plain f64 references (`tilec_tests`: LU with partial pivoting for inverses and
//! determinants, cyclic Jacobi for eigenvalues and singular values) and by the residuals
//! that define each factorization: `inverse`, `determinant`, `svd`, `sym_eig` and
//! `polar_decompose` at orders 1 to 4 (and `inverse`/`determinant` at 5, 6 and 12), on
//! random, graded, near-singular, rank-deficient, repeated-eigenvalue, identity and zero
//! matrices, in f32 and f64; one matrix per program; and the constructs around them (loops,
//! run-time entry indices, rows and columns, `where`, `fn`s, `+=`). Both code generators give
//! the same bits.
//!
//! The bounds are those docs/language.md §3.6 states: with `eps` the type's machine epsilon
//! and `n` the order, residuals at most `4 n eps ||A||` (Frobenius norms), orthogonality
//! `||Q^T Q - I|| <= 4 n eps`; inverses and determinants within `4 n cond(A) eps` relative.

use std::collections::HashMap;
use tilec::{render_diagnostics, ErrorFormat, SourceSet, Target};
use tilec_midend::Scalar;
use tilec_runtime::{ArgValue, HostArray};
use tilec_tests::{eigvalsh_f64, getrf_f64, getrs_f64, singular_values_f64, symmetric_from_lower, Rng};

const FLOATS: [Scalar; 2] = [Scalar::F32, Scalar::F64];

fn eps(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    }
}

fn source() -> SourceSet {
    SourceSet::with_stdlib("small_mats.tile", include_str!("cases/small_mats.tile"))
}

fn arr(elem: Scalar, data: &[f64], shape: &[usize]) -> ArgValue {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    ArgValue::Array(HostArray::from_f64_as(elem, data, &shape).expect("host array"))
}

/// Runs `kernel` on every CPU code generator with `inputs` and `outputs` (name, shape; zeroed
/// unless also an input), checks that they agree bit for bit, and returns the outputs.
fn run(
    kernel: &str,
    elem: Scalar,
    inputs: &[(&str, &[f64], Vec<usize>)],
    outputs: &[(&str, Vec<usize>)],
) -> HashMap<String, Vec<f64>> {
    let src = source();
    let mut results: Vec<HashMap<String, Vec<f64>>> = Vec::new();
    for backend in tilec_tests::cpu_backends() {
        let mut args = HashMap::new();
        for (n, d, s) in inputs {
            args.insert(n.to_string(), arr(elem, d, s));
        }
        for (n, s) in outputs {
            args.entry(n.to_string()).or_insert_with(|| arr(elem, &vec![0.0; s.iter().product()], s));
        }
        let bound =
            tilec_tests::run_on(Target::Cpu(backend), &src, kernel, args, &HashMap::new()).unwrap_or_else(|e| {
                panic!("{kernel}: {}", render_diagnostics(&e.diagnostics, &src, ErrorFormat::Human, false))
            });
        results
            .push(outputs.iter().map(|(n, _)| (n.to_string(), bound.array(n).expect("output").to_f64_vec())).collect());
    }
    for other in &results[1..] {
        for (n, _) in outputs {
            let (a, b) = (&results[0][*n], &other[*n]);
            let same = a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
            assert!(same, "{kernel} {elem:?}: `{n}` differs between the CPU code generators");
        }
    }
    results.remove(0)
}

fn frob(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn mul(a: &[f64], b: &[f64], n: usize) -> Vec<f64> {
    tilec_tests::matmul_f64(n, n, n, a, b)
}

fn tr(a: &[f64], n: usize) -> Vec<f64> {
    tilec_tests::transpose_f64(a, n, n)
}

fn diag(d: &[f64]) -> Vec<f64> {
    let n = d.len();
    (0..n * n).map(|k| if k / n == k % n { d[k / n] } else { 0.0 }).collect()
}

fn sub(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

fn eye(n: usize) -> Vec<f64> {
    diag(&vec![1.0; n])
}

/// `(inverse, determinant)` in f64 by LU with partial pivoting.
fn inv_det_f64(a: &[f64], n: usize) -> (Vec<f64>, f64) {
    let (lu, piv, _) = getrf_f64(a, n);
    let mut det = 1.0;
    for i in 0..n {
        det *= lu[i * n + i];
        if piv[i] != i as i32 {
            det = -det;
        }
    }
    (getrs_f64(&lu, &piv, n, &eye(n), n), det)
}

fn det_f64(a: &[f64], n: usize) -> f64 {
    inv_det_f64(a, n).1
}

/// `m` f32-representable `n x n` matrices of every kind the tests cover: random, random and
/// well conditioned (`+ n I`), graded (`D1 R D2`, scales down to 1e-4), rank-deficient (two
/// equal columns), symmetric with a repeated eigenvalue, identity, zero, and a diagonal one
/// with a negative entry (`det < 0`); `invertible[k]` tells which are safely invertible.
fn matrices(n: usize, m: usize, seed: u64) -> (Vec<f64>, Vec<bool>) {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut invertible = Vec::new();
    for k in 0..m {
        let r = rng.vec(n * n, -1.0, 1.0);
        let (a, inv): (Vec<f64>, bool) = match k % 8 {
            0 => (r, false),
            1 => ((0..n * n).map(|e| r[e] + if e / n == e % n { n as f64 } else { 0.0 }).collect(), true),
            2 => {
                let s = |i: usize| [1.0, 1e-2, 1e-4, 1e-1][i % 4];
                ((0..n * n).map(|e| s(e / n) * (r[e] + if e / n == e % n { 2.0 } else { 0.0 })).collect(), true)
            }
            3 if n > 1 => ((0..n * n).map(|e| if e % n == n - 1 { r[e - (n - 1)] } else { r[e] }).collect(), false),
            4 => {
                // Q diag(1, 1, 2, ..) Q^T from the Givens rotation of the first two axes by r[0].
                let (c, s) = (r[0].cos(), r[0].sin());
                let mut q = eye(n);
                if n > 1 {
                    q[0] = c;
                    q[1] = -s;
                    q[n] = s;
                    q[n + 1] = c;
                }
                let d: Vec<f64> = (0..n).map(|i| if i < 2 { 1.0 } else { 2.0 }).collect();
                (mul(&mul(&q, &diag(&d), n), &tr(&q, n), n), true)
            }
            5 => (eye(n), true),
            6 => (vec![0.0; n * n], false),
            _ => {
                let d: Vec<f64> = (0..n).map(|i| if i == n / 2 { -1.5 } else { 0.5 + i as f64 }).collect();
                (diag(&d), true)
            }
        };
        out.extend(a.iter().map(|x| *x as f32 as f64));
        invertible.push(inv);
    }
    (out, invertible)
}

/// The factorizations at order `n` on `m` matrices (a partial last tile of 16).
fn check_mat_fns(n: usize, elem: Scalar) {
    let m = 37;
    let (a, invertible) = matrices(n, m, 11 + n as u64);
    let sq = vec![m, n, n];
    let o = run(
        "mat_fns",
        elem,
        &[("A", &a, sq.clone())],
        &[
            ("Inv", sq.clone()),
            ("Det", vec![m]),
            ("U", sq.clone()),
            ("S", vec![m, n]),
            ("V", sq.clone()),
            ("W", vec![m, n]),
            ("Q", sq.clone()),
            ("R", sq.clone()),
            ("H", sq.clone()),
        ],
    );
    let e = eps(elem);
    let bound = 4.0 * n as f64 * e;
    let nn = n * n;
    for k in 0..m {
        let what = format!("n = {n}, {elem:?}, matrix {k} (kind {})", k % 8);
        let ak = &a[k * nn..(k + 1) * nn];
        let na = frob(ak).max(f64::MIN_POSITIVE);
        let part = |name: &str, len: usize| o[name][k * len..(k + 1) * len].to_vec();
        // inverse and determinant
        if invertible[k] {
            let (inv_ref, det_ref) = inv_det_f64(ak, n);
            let cond = na * frob(&inv_ref);
            let tol = 4.0 * n as f64 * cond * e;
            let inv = part("Inv", nn);
            let err = frob(&sub(&inv, &inv_ref)) / frob(&inv_ref);
            assert!(err <= tol, "{what}: inverse error {err:e} > {tol:e}");
            let det = o["Det"][k];
            let err = (det - det_ref).abs() / det_ref.abs();
            assert!(err <= tol, "{what}: determinant {det} vs {det_ref}: {err:e} > {tol:e}");
        }
        // svd: A = U diag(S) V^T, U and V rotations, |S| descending and the singular values
        let (u, s, v) = (part("U", nn), part("S", n), part("V", nn));
        let res = frob(&sub(ak, &mul(&mul(&u, &diag(&s), n), &tr(&v, n), n))) / na;
        assert!(res <= bound, "{what}: svd residual {res:e} > {bound:e}");
        for (name, q) in [("U", &u), ("V", &v)] {
            let orth = frob(&sub(&mul(&tr(q, n), q, n), &eye(n)));
            assert!(orth <= bound, "{what}: {name}^T {name} - I = {orth:e} > {bound:e}");
            let d = det_f64(q, n);
            assert!((d - 1.0).abs() <= bound, "{what}: det({name}) = {d}");
        }
        let sref = singular_values_f64(ak, n, n);
        for i in 0..n {
            let err = (s[i].abs() - sref[i]).abs();
            assert!(
                err <= bound * sref[0].max(f64::MIN_POSITIVE),
                "{what}: singular value {i}: {} vs {}",
                s[i],
                sref[i]
            );
        }
        let det_ref = det_f64(ak, n);
        if det_ref.abs() > 1e-3 * na.powi(n as i32) {
            assert_eq!(
                s[n - 1] < 0.0,
                det_ref < 0.0,
                "{what}: the sign of S[n-1] ({}) is that of det(A) ({det_ref})",
                s[n - 1]
            );
        }
        // sym_eig of the lower triangle: A = Q diag(w) Q^T, w ascending
        let sym = symmetric_from_lower(ak, n);
        let nsym = frob(&sym).max(f64::MIN_POSITIVE);
        let (w, q) = (part("W", n), part("Q", nn));
        let res = frob(&sub(&sym, &mul(&mul(&q, &diag(&w), n), &tr(&q, n), n))) / nsym;
        assert!(res <= bound, "{what}: sym_eig residual {res:e} > {bound:e}");
        let orth = frob(&sub(&mul(&tr(&q, n), &q, n), &eye(n)));
        assert!(orth <= bound, "{what}: Q^T Q - I = {orth:e}");
        let wref = eigvalsh_f64(ak, n);
        for i in 0..n {
            assert!((w[i] - wref[i]).abs() <= bound * nsym, "{what}: eigenvalue {i}: {} vs {}", w[i], wref[i]);
        }
        // polar: A = R H, R a rotation, H symmetric
        let (r, h) = (part("R", nn), part("H", nn));
        let res = frob(&sub(ak, &mul(&r, &h, n))) / na;
        assert!(res <= bound, "{what}: polar residual {res:e} > {bound:e}");
        let orth = frob(&sub(&mul(&tr(&r, n), &r, n), &eye(n)));
        assert!(orth <= bound && (det_f64(&r, n) - 1.0).abs() <= bound, "{what}: R is not a rotation ({orth:e})");
        let asym = frob(&sub(&h, &tr(&h, n))) / na;
        assert!(asym <= bound, "{what}: H - H^T = {asym:e}");
    }
}

#[test]
fn factorizations_of_orders_1_to_4_match_f64() {
    for elem in FLOATS {
        for n in 1..=4 {
            check_mat_fns(n, elem);
        }
    }
}

#[test]
fn gauss_jordan_inverse_and_determinant_of_orders_5_6_and_12() {
    for elem in FLOATS {
        for n in [5, 6, 12] {
            let m = 19;
            let (a, invertible) = matrices(n, m, 100 + n as u64);
            let sq = vec![m, n, n];
            let o = run("inv_det", elem, &[("A", &a, sq.clone())], &[("Inv", sq.clone()), ("Det", vec![m])]);
            let nn = n * n;
            for k in (0..m).filter(|&k| invertible[k]) {
                let ak = &a[k * nn..(k + 1) * nn];
                let (inv_ref, det_ref) = inv_det_f64(ak, n);
                let tol = 4.0 * n as f64 * frob(ak) * frob(&inv_ref) * eps(elem);
                let err = frob(&sub(&o["Inv"][k * nn..(k + 1) * nn], &inv_ref)) / frob(&inv_ref);
                assert!(err <= tol, "n = {n}, {elem:?}, matrix {k}: inverse error {err:e} > {tol:e}");
                let err = (o["Det"][k] - det_ref).abs() / det_ref.abs();
                assert!(err <= tol, "n = {n}, {elem:?}, matrix {k}: determinant error {err:e}");
            }
        }
    }
}

#[test]
fn one_matrix_per_program() {
    for elem in FLOATS {
        let m = 9;
        let (mut a, _) = matrices(3, m, 7);
        // Invertible everywhere: + 3 I.
        for k in 0..m {
            for i in 0..3 {
                a[k * 9 + i * 4] += 3.0;
            }
        }
        let x = Rng::new(8).vec(m * 3, -1.0, 1.0);
        let o = run(
            "one_each",
            elem,
            &[("A", &a, vec![m, 3, 3]), ("X", &x, vec![m, 3])],
            &[("Y", vec![m, 3]), ("Z", vec![m, 3, 3])],
        );
        let tol = 1e3 * eps(elem);
        for k in 0..m {
            let (ak, xk) = (&a[k * 9..k * 9 + 9], &x[k * 3..k * 3 + 3]);
            let (inv, _) = inv_det_f64(ak, 3);
            let mut y: Vec<f64> = (0..3).map(|i| (0..3).map(|j| inv[i * 3 + j] * xk[j]).sum()).collect();
            let r0 = &ak[0..3];
            let cross = [xk[1] * r0[2] - xk[2] * r0[1], xk[2] * r0[0] - xk[0] * r0[2], xk[0] * r0[1] - xk[1] * r0[0]];
            for i in 0..3 {
                y[i] += cross[i];
            }
            y[0] += xk.iter().map(|v| v * v).sum::<f64>();
            let trace = ak[0] + ak[4] + ak[8];
            let nrm = frob(ak);
            let mta = mul(&tr(ak, 3), ak, 3);
            let z: Vec<f64> = (0..9)
                .map(|e| mta[e] + xk[e / 3] * xk[e % 3] - if e / 3 == e % 3 { trace } else { 0.0 } + nrm)
                .collect();
            let got_y = &o["Y"][k * 3..k * 3 + 3];
            let got_z = &o["Z"][k * 9..k * 9 + 9];
            assert!(frob(&sub(got_y, &y)) <= tol * frob(&y), "matrix {k} {elem:?}: Y {got_y:?} vs {y:?}");
            assert!(frob(&sub(got_z, &z)) <= tol * frob(&z), "matrix {k} {elem:?}: Z {got_z:?} vs {z:?}");
        }
    }
}

#[test]
fn loops_entries_rows_where_fns_and_compound_stores() {
    for elem in FLOATS {
        let m = 21;
        let a = Rng::new(5).vec(m * 9, -1.0, 1.0).iter().map(|x| *x as f32 as f64).collect::<Vec<_>>();
        let out0 = Rng::new(6).vec(m * 9, -1.0, 1.0).iter().map(|x| *x as f32 as f64).collect::<Vec<_>>();
        let o = run(
            "constructs",
            elem,
            &[("A", &a, vec![m, 3, 3]), ("Out", &out0, vec![m, 3, 3])],
            &[("Out", vec![m, 3, 3]), ("Nrm", vec![m]), ("X", vec![m, 3])],
        );
        let tol = 8.0 * eps(elem);
        for k in 0..m {
            let f = &a[k * 9..k * 9 + 9];
            // G = F^T + diag(1, 2, 3), rows 0 and 2 exchanged, negated where F[0, 0] < 0.
            let mut g: Vec<f64> = (0..9)
                .map(|e| f[(e % 3) * 3 + e / 3] + if e / 3 == e % 3 { (e / 3 + 1) as f64 } else { 0.0 })
                .collect();
            for j in 0..3 {
                g.swap(j, 6 + j);
            }
            if f[0] < 0.0 {
                g.iter_mut().for_each(|x| *x = -*x);
            }
            for e in 0..9 {
                let want = out0[k * 9 + e] + g[e];
                let got = o["Out"][k * 9 + e];
                assert!((got - want).abs() <= tol * 8.0, "matrix {k} {elem:?}: Out[{e}] = {got}, want {want}");
            }
            let nrm = frob(f);
            assert!((o["Nrm"][k] - nrm).abs() <= tol * nrm, "matrix {k}: norm");
            for i in 0..3 {
                let want = f[i * 3] + 2.0 * f[i * 3 + 1] + 3.0 * f[i * 3 + 2];
                assert!((o["X"][k * 3 + i] - want).abs() <= tol * 8.0, "matrix {k}: X[{i}]");
            }
        }
    }
}

/// `abs`, `sqrt`, `rsqrt`, `exp`, `min` and `max` apply to every entry of small matrices (with
/// a scalar, or a single matrix repeated over a tile of them), against f64.
#[test]
fn math_functions_apply_entry_by_entry() {
    for elem in FLOATS {
        let m = 21;
        let a: Vec<f64> = Rng::new(9).vec(m * 9, -2.0, 2.0).iter().map(|x| *x as f32 as f64).collect();
        let o = run("entrywise", elem, &[("A", &a, vec![m, 3, 3])], &[("E", vec![m, 3, 3])]);
        for (k, x) in a.iter().enumerate() {
            let want = x.abs().sqrt() + x.clamp(-0.5, 0.5) - (x.abs() + 1.0).sqrt().recip() * x.min(0.0).exp();
            let got = o["E"][k];
            assert!(
                (got - want).abs() <= 16.0 * eps(elem) * want.abs().max(1.0),
                "{elem:?} entry {k}: {got} vs {want}"
            );
        }
    }
}
