//! Gathers and scatters (indexed loads and stores, language §7.6) on both CPU backends
//! against a plain f64 reference of NumPy's fancy indexing with the bounds rules of §7.2
//! (`tests/tests/cases/gathers.tile`): positions out of the array read as zero (or keep the
//! old value, for the masked load) and are not written, a 2-D index tile addresses elements
//! one by one, and `atomic_add` through repeated positions adds every element.

use super::*;

const SRC: &str = include_str!("../cases/gathers.tile");

/// The inputs of `gathers`: `A` (35x6), `V` (37), and the index arrays `I`, `J`, `P` (40)
/// and `K`, `Z` (5x8), as f64 data and `i32` data.
pub(crate) struct Inputs {
    a: Vec<f64>,
    v: Vec<f64>,
    i: Vec<i32>,
    j: Vec<i32>,
    p: Vec<i32>,
    k: Vec<i32>,
    z: Vec<i32>,
}

const M: usize = 35;
const N: usize = 6;
const L: usize = 37;

fn inputs() -> Inputs {
    let mut rng = Rng::new(61);
    // Multiples of 1/8: sums of a few are exact in f32.
    let val = |n: usize, rng: &mut Rng| (0..n).map(|_| rng.int(-16, 17) as f64 / 8.0).collect::<Vec<f64>>();
    let a = val(M * N, &mut rng);
    let v = val(L, &mut rng);
    let mut i: Vec<i32> = (0..40).map(|_| rng.int(-3, 40) as i32).collect();
    (i[0], i[1], i[2], i[3]) = (-3, 39, 7, 7);
    let j: Vec<i32> = (0..40).map(|_| rng.int(-2, 8) as i32).collect();
    // A permutation of 0..40 (Fisher-Yates).
    let mut p: Vec<i32> = (0..40).collect();
    for n in (1..40).rev() {
        let m = rng.int(0, n as i64 + 1) as usize;
        p.swap(n, m);
    }
    let k: Vec<i32> = (0..40).map(|_| rng.int(-1, 36) as i32).collect();
    let z: Vec<i32> = (0..40).map(|_| rng.int(-1, 7) as i32).collect();
    Inputs { a, v, i, j, p, k, z }
}

fn int_arr(d: &[i32], shape: &[u64]) -> ArgValue {
    ArgValue::Array(HostArray::from_i32(d, shape).expect("i32 array"))
}

/// The reference outputs of `gathers`, by name, from outputs that start as [`SENTINEL`].
fn reference(x: &Inputs) -> Vec<(&'static str, Vec<f64>)> {
    let aget = |r: i32, c: i32| {
        if (0..M as i32).contains(&r) && (0..N as i32).contains(&c) {
            x.a[r as usize * N + c as usize]
        } else {
            0.0
        }
    };
    let vget = |i: i64| if (0..L as i64).contains(&i) { x.v[i as usize] } else { 0.0 };
    let g: Vec<f64> = x.i.iter().map(|&i| vget(i as i64)).collect();
    let r: Vec<f64> = (0..40 * 8).map(|e| aget(x.i[e / 8], (e % 8) as i32)).collect();
    let c: Vec<f64> = (0..8 * 40).map(|e| aget((e / 40) as i32, x.j[e % 40])).collect();
    let ee: Vec<f64> = (0..64).map(|e| aget(x.i[e / 8], x.j[8 + e % 8])).collect();
    let f: Vec<f64> = (0..40).map(|e| aget(x.k[e], x.z[e])).collect();
    let o: Vec<f64> = (0..40 * 8)
        .map(|e| {
            let (row, col) = (x.i[e / 8], (e % 8) as i32);
            if (0..M as i32).contains(&row) && col < N as i32 {
                aget(row, col)
            } else {
                -1.0
            }
        })
        .collect();
    let mut s = vec![SENTINEL; M * N];
    for row in 0..40 {
        let to = x.p[row] as usize;
        if to < M {
            for col in 0..N {
                s[to * N + col] = aget(row as i32, col as i32) * 2.0 + 1.0;
            }
        }
    }
    let mut q = vec![SENTINEL; 40];
    let mut w = vec![SENTINEL; L];
    for k in 0..40 {
        let vk = vget(k as i64);
        if vk > 0.5 {
            q[x.p[k] as usize] = vk;
        }
        if (x.p[k] as usize) < L {
            w[x.p[k] as usize] += 3.0;
        }
    }
    let xs: Vec<f64> = x.i.iter().map(|&i| vget(i as i64 + 1)).collect();
    let mut sh = vec![0.0; 40];
    for k in 0..40 {
        sh[x.p[k] as usize] = vget(k as i64);
    }
    let y: Vec<f64> = x.i.iter().map(|&i| if (0..40).contains(&i) { sh[i as usize] } else { 0.0 }).collect();
    let mut h = vec![SENTINEL; 16];
    for _program in 0..2 {
        for k in 0..40 {
            let bin = x.i[k] % 16;
            if bin >= 0 {
                h[bin as usize] += vget(k as i64);
            }
        }
    }
    vec![
        ("G", g),
        ("R", r),
        ("C", c),
        ("E", ee),
        ("F", f),
        ("O", o),
        ("S", s),
        ("Q", q),
        ("W", w),
        ("X", xs),
        ("Y", y),
        ("H", h),
    ]
}

/// The arguments of `gathers` with float arrays of `elem`.
fn args(x: &Inputs, elem: Scalar) -> HashMap<String, ArgValue> {
    let mut m: Vec<(&str, ArgValue)> = vec![
        ("A", arr(elem, &x.a, &[M, N])),
        ("V", arr(elem, &x.v, &[L])),
        ("I", int_arr(&x.i, &[40])),
        ("J", int_arr(&x.j, &[40])),
        ("P", int_arr(&x.p, &[40])),
        ("K", int_arr(&x.k, &[5, 8])),
        ("Z", int_arr(&x.z, &[5, 8])),
    ];
    let outs: [(&str, &[usize]); 12] = [
        ("G", &[40]),
        ("R", &[40, 8]),
        ("C", &[8, 40]),
        ("E", &[8, 8]),
        ("F", &[5, 8]),
        ("O", &[40, 8]),
        ("S", &[M, N]),
        ("Q", &[40]),
        ("W", &[L]),
        ("X", &[40]),
        ("Y", &[40]),
        ("H", &[16]),
    ];
    for (n, s) in outs {
        m.push((n, sentinel(elem, s)));
    }
    m.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

#[test]
fn gathers_and_scatters_match_numpy_fancy_indexing_with_the_bounds_rules() {
    let x = inputs();
    let want = reference(&x);
    let set = SourceSet::with_stdlib("gathers.tile", SRC);
    for be in cpu_backends() {
        for elem in FLOATS {
            let runner = tilec::CpuRunner::with_backend(&set, "gathers", &args(&x, elem), &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d, &set, ErrorFormat::Human, false)));
            let (bound, _) = runner.run(args(&x, elem)).unwrap_or_else(|e| panic!("{be} {elem:?}: {e}"));
            for (name, w) in &want {
                // Every value is a multiple of 1/8 and every sum exact: bit-exact results.
                assert_exact(&out(&bound, name), w, &format!("{be} {elem:?} `{name}`"));
            }
        }
    }
}
