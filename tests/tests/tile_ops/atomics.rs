//! The atomic read-modify-write family with old values (`atomic_add`, `atomic_xchg`,
//! `atomic_min`, `atomic_max`, `atomic_cas`; language §8) on both CPU backends against a plain
//! reference (`tests/tests/cases/atomics.tile`, three programs): counters, contended tiles
//! through repeated and out-of-range positions on f32/f64, i32, u32 and i64 arrays (float
//! minima and maxima in IEEE 754 totalOrder: -0.0 below 0.0, NaN above every number), old
//! values of rows updated at distinct positions, and a 2-D slice past the array's edge. Exact:
//! values are multiples of 1/8; zeros are compared with their signs.

use super::*;

const SRC: &str = include_str!("../cases/atomics.tile");

/// IEEE 754 totalOrder key of `x` as an `elem` value.
fn key(x: f64, elem: Scalar) -> i64 {
    let (b, m) = if elem == Scalar::F32 {
        ((x as f32).to_bits() as i32 as i64, i32::MAX as i64)
    } else {
        (x.to_bits() as i64, i64::MAX)
    };
    if b < 0 {
        b ^ m
    } else {
        b
    }
}

#[test]
fn atomics_give_old_values_and_order_floats_totally() {
    let mut rng = Rng::new(71);
    let eighth = |rng: &mut Rng| rng.int(-16, 17) as f64 / 8.0;
    let mut v: Vec<f64> = (0..40).map(|_| eighth(&mut rng)).collect();
    (v[3], v[4], v[5]) = (-0.0, 0.0, f64::NAN);
    let k: Vec<f64> = (0..40).map(|_| rng.int(-9, 10) as f64).collect();
    let mut idx: Vec<i64> = (0..40).map(|_| rng.int(-2, 10)).collect();
    (idx[3], idx[4]) = (2, 2);
    let mut perm: Vec<usize> = (0..40).collect();
    for n in (1..40).rev() {
        let m = rng.int(0, n as i64 + 1) as usize;
        perm.swap(n, m);
    }
    let a0: Vec<f64> = (0..120).map(|_| eighth(&mut rng)).collect();
    let x0: Vec<f64> = (0..120).map(|_| eighth(&mut rng)).collect();
    let q0: Vec<f64> = (0..120).map(|e| if e % 3 == 0 { 1.0 } else { 7.0 }).collect();
    for elem in FLOATS {
        let i32s = |d: &[f64], s: &[usize]| arr(Scalar::I32, d, s);
        let ix: Vec<f64> = idx.iter().map(|&i| i as f64).collect();
        let pf: Vec<f64> = perm.iter().map(|&p| p as f64).collect();
        let args = || -> HashMap<String, ArgValue> {
            [
                ("V", arr(elem, &v, &[40])),
                ("K", i32s(&k, &[40])),
                ("I", i32s(&ix, &[40])),
                ("P", i32s(&pf, &[40])),
                ("C", i32s(&[0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 0.0], &[8])),
                ("S", arr(elem, &[7.0; 8], &[8])),
                ("MN", arr(elem, &[7.0; 8], &[8])),
                ("MX", arr(elem, &[-7.0; 8], &[8])),
                ("IM", i32s(&[-3.0; 8], &[8])),
                ("UM", arr(Scalar::U32, &[5.0; 8], &[8])),
                ("LA", arr(Scalar::I64, &[1.0; 8], &[8])),
                ("A", arr(elem, &a0, &[3, 40])),
                ("X", arr(elem, &x0, &[3, 40])),
                ("Q", arr(elem, &q0, &[3, 40])),
                ("OA", arr(elem, &[0.0; 120], &[3, 40])),
                ("OX", arr(elem, &[0.0; 120], &[3, 40])),
                ("OQ", arr(elem, &[0.0; 120], &[3, 40])),
                ("B", arr(elem, &[0.0; 120], &[3, 40])),
                ("O", arr(elem, &[9.0; 6], &[3, 2])),
            ]
            .into_iter()
            .map(|(n, a)| (n.to_string(), a))
            .collect()
        };
        // The reference, every program's updates applied.
        let inside: Vec<usize> = (0..40).filter(|&j| (0..8).contains(&idx[j])).collect();
        let (mut s, mut mn, mut mx) = (vec![7.0; 8], vec![7.0; 8], vec![-7.0; 8]);
        let (mut im, mut um, mut la) = (vec![-3.0f64; 8], vec![5.0f64; 8], vec![1.0f64; 8]);
        for &j in &inside {
            let b = idx[j] as usize;
            let vj = elem.round(v[j]);
            s[b] += 3.0 * vj;
            if key(vj, elem) < key(mn[b], elem) {
                mn[b] = vj;
            }
            if key(vj, elem) > key(mx[b], elem) {
                mx[b] = vj;
            }
            im[b] = im[b].max(k[j]);
            um[b] = um[b].min((k[j] as i64 as u32) as f64);
            la[b] += 3.0 * k[j] * 4e9;
        }
        let (mut a, mut x, mut q) = (a0.clone(), x0.clone(), q0.clone());
        let (mut oa, mut ox, mut oq) = (vec![0.0; 120], vec![0.0; 120], vec![0.0; 120]);
        for r in 0..3 {
            for j in 0..40 {
                let at = r * 40 + perm[j];
                oa[r * 40 + j] = a0[at];
                a[at] += elem.round(v[j]);
                ox[r * 40 + j] = x0[at];
                x[at] = elem.round(v[j]) * 2.0;
                let cmp = if j % 2 == 0 { 7.0 } else { 1.0 };
                oq[r * 40 + j] = q0[r * 40 + j];
                if q0[r * 40 + j] == cmp {
                    q[r * 40 + j] = elem.round(v[j]);
                }
            }
        }
        let mut b = vec![0.0; 120];
        for p in 0..3i64 {
            for row in [p - 1, p].into_iter().filter(|r| (0..3).contains(r)) {
                for c in 36..40 {
                    b[row as usize * 40 + c] += 0.5;
                }
            }
        }
        let c = [120.0, 120.0, 80.0, -1.0, 10.0, 11.0, 12.0, 5.0];
        let row_sum = |r: usize| a0[r * 40..r * 40 + 40].iter().map(|x| elem.round(*x)).sum::<f64>();
        let o: Vec<f64> = (0..3).flat_map(|r| [0.0, row_sum(r)]).collect();
        let want: [(&str, &[f64]); 15] = [
            ("C", &c),
            ("S", &s),
            ("MN", &mn),
            ("MX", &mx),
            ("IM", &im),
            ("UM", &um),
            ("LA", &la),
            ("A", &a),
            ("X", &x),
            ("Q", &q),
            ("OA", &oa),
            ("OX", &ox),
            ("OQ", &oq),
            ("B", &b),
            ("O", &o),
        ];
        let set = SourceSet::with_stdlib("atomics.tile", SRC);
        for be in cpu_backends() {
            let runner = tilec::CpuRunner::with_backend(&set, "atomics", &args(), &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d, &set, ErrorFormat::Human, false)));
            let (bound, _) = runner.run(args()).unwrap_or_else(|e| panic!("{be} {elem:?}: {e}"));
            for (name, w) in want {
                assert_same(&out(&bound, name), w, &format!("{be} {elem:?} `{name}`"));
            }
        }
    }
}

/// The `f16` or `bf16` value nearest to `x` (ties to the even bit pattern), found among the
/// neighbours of the `half` crate's guess: a reference that rounds once.
fn nearest_half(elem: Scalar, x: f64) -> f64 {
    let f16 = elem == Scalar::F16;
    let to = |b: u16| if f16 { half::f16::from_bits(b).to_f64() } else { half::bf16::from_bits(b).to_f64() };
    let from = |x: f64| if f16 { half::f16::from_f64(x).to_bits() } else { half::bf16::from_f64(x).to_bits() };
    if x.is_nan() || x == 0.0 {
        return x;
    }
    let g = from(x);
    let mut best = to(g);
    for b in [g.wrapping_sub(1), g.wrapping_add(1)] {
        let c = to(b);
        let (dc, db) = ((c - x).abs(), (best - x).abs());
        if c.signum() == x.signum() && (dc < db || (dc == db && b % 2 == 0)) {
            best = c;
        }
    }
    best
}

/// The atomic family on `f16` and `bf16` arrays (`tests/tests/cases/atomics_half.tile`) on
/// both CPU backends, bit for bit against a plain reference: operands rounded once to the
/// array's type, sums of two half values rounded once, minima and maxima in totalOrder (-0.0
/// below 0.0, NaN above every number), a compare-and-swap whose comparands round to the
/// stored values, the old values exact, and tile adds to slices (one past the array's end).
#[test]
fn atomics_on_half_arrays_round_to_the_array_type() {
    const HALF_SRC: &str = include_str!("../cases/atomics_half.tile");
    let mut rng = Rng::new(73);
    let eighth = |rng: &mut Rng| rng.int(-16, 17) as f64 / 8.0;
    let mut v: Vec<f64> = (0..40).map(|_| eighth(&mut rng)).collect();
    (v[3], v[4], v[5]) = (-0.0, 0.0, f64::NAN);
    let w: Vec<f64> = rng.vec(40, -3.0, 3.0);
    let mut idx: Vec<i64> = (0..40).map(|_| rng.int(-2, 10)).collect();
    (idx[3], idx[4]) = (2, 2);
    let mut perm: Vec<usize> = (0..40).collect();
    for n in (1..40).rev() {
        let m = rng.int(0, n as i64 + 1) as usize;
        perm.swap(n, m);
    }
    let a0: Vec<f64> = (0..120).map(|_| eighth(&mut rng)).collect();
    let x0: Vec<f64> = (0..120).map(|_| eighth(&mut rng)).collect();
    let q0: Vec<f64> = (0..120).map(|e| if e % 3 == 0 { 1.0 } else { 7.0 }).collect();
    let c0 = [0.5, -1.25, 3.0];
    let (h, b) = (Scalar::F16, Scalar::BF16);
    // The reference.
    let inside: Vec<usize> = (0..40).filter(|&j| (0..8).contains(&idx[j])).collect();
    let (mut s, mut sb, mut mn, mut mx) = (vec![7.0; 8], vec![0.5; 8], vec![7.0; 8], vec![-7.0; 8]);
    for _ in 0..3 {
        for &j in &inside {
            let at = idx[j] as usize;
            s[at] += v[j];
            sb[at] += v[j] * 0.25;
            if key(v[j], Scalar::F32) < key(mn[at], Scalar::F32) {
                mn[at] = v[j];
            }
            if key(v[j], Scalar::F32) > key(mx[at], Scalar::F32) {
                mx[at] = v[j];
            }
        }
    }
    // The slice adds of the three programs: S[0:8] += 0.125, SB[6:10] += 0.25 (6 and 7 inside).
    s.iter_mut().for_each(|e| *e += 3.0 * 0.125);
    sb[6] += 3.0 * 0.25;
    sb[7] += 3.0 * 0.25;
    let (mut a, mut x, mut q) = (a0.clone(), x0.clone(), q0.clone());
    let (mut oa, mut ox, mut oq) = (vec![0.0; 120], vec![0.0; 120], vec![0.0; 120]);
    let (mut c, mut oc) = (c0.to_vec(), vec![0.0; 3]);
    for r in 0..3 {
        for j in 0..40 {
            let at = r * 40 + perm[j];
            oa[r * 40 + j] = a[at];
            a[at] = nearest_half(h, a[at] + nearest_half(h, w[j]));
            ox[r * 40 + j] = x[at];
            x[at] = nearest_half(b, (w[j] as f32 * 3.0) as f64);
            oq[r * 40 + j] = q0[r * 40 + j];
            if q0[r * 40 + j] == if j % 2 == 0 { 7.0 } else { 1.0 } {
                q[r * 40 + j] = nearest_half(h, w[j]);
            }
        }
        oc[r] = c0[r];
        c[r] = nearest_half(h, c0[r] + 2.0 * nearest_half(h, w[r]));
    }
    let want: [(&str, &[f64]); 12] = [
        ("S", &s),
        ("SB", &sb),
        ("MN", &mn),
        ("MX", &mx),
        ("A", &a),
        ("X", &x),
        ("Q", &q),
        ("C", &c),
        ("OA", &oa),
        ("OX", &ox),
        ("OQ", &oq),
        ("OC", &oc),
    ];
    for elem in FLOATS {
        let i32s = |d: &[f64], s: &[usize]| arr(Scalar::I32, d, s);
        let ix: Vec<f64> = idx.iter().map(|&i| i as f64).collect();
        let pf: Vec<f64> = perm.iter().map(|&p| p as f64).collect();
        let args = || -> HashMap<String, ArgValue> {
            [
                ("V", arr(elem, &v, &[40])),
                ("W", arr(elem, &w, &[40])),
                ("I", i32s(&ix, &[40])),
                ("P", i32s(&pf, &[40])),
                ("S", arr(h, &[7.0; 8], &[8])),
                ("SB", arr(b, &[0.5; 8], &[8])),
                ("MN", arr(h, &[7.0; 8], &[8])),
                ("MX", arr(b, &[-7.0; 8], &[8])),
                ("A", arr(h, &a0, &[3, 40])),
                ("X", arr(b, &x0, &[3, 40])),
                ("Q", arr(h, &q0, &[3, 40])),
                ("C", arr(h, &c0, &[3])),
                ("OA", arr(elem, &[0.0; 120], &[3, 40])),
                ("OX", arr(elem, &[0.0; 120], &[3, 40])),
                ("OQ", arr(elem, &[0.0; 120], &[3, 40])),
                ("OC", arr(elem, &[0.0; 3], &[3])),
            ]
            .into_iter()
            .map(|(n, a)| (n.to_string(), a))
            .collect()
        };
        let set = SourceSet::with_stdlib("atomics_half.tile", HALF_SRC);
        for be in cpu_backends() {
            let runner = tilec::CpuRunner::with_backend(&set, "atomics_half", &args(), &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d, &set, ErrorFormat::Human, false)));
            let (bound, _) = runner.run(args()).unwrap_or_else(|e| panic!("{be} {elem:?}: {e}"));
            for (name, w) in want {
                assert_same(&out(&bound, name), w, &format!("{be} {elem:?} `{name}`"));
            }
        }
    }
}
