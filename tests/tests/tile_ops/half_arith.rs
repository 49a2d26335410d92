//! `f16` and `bf16` arithmetic (language §3.5) on both CPU backends against the `half` crate's
//! binary16 and bfloat16 (each operation rounded to the type, as NumPy's `float16` computes):
//! `tests/tests/cases/half_arith.tile` on 7x13 arrays in 8x16 tiles, f32 and f64 inputs,
//! compared bit for bit; and the conversions `as f16`/`as bf16` from `f64` and from integers,
//! rounded once (not through `f32`).

use super::*;
use half::{bf16, f16};

const SRC: &str = include_str!("../cases/half_arith.tile");

/// The `f64` `x` rounded to the nearest value of the 16-bit type `T` in one step, ties to even:
/// the nearest of the neighbours of `half`'s own conversion (`guess`; its `from_f64` ignores the
/// `f64`'s low bits, so it can be one off near a tie). An infinity counts as the power of two
/// after the largest finite value, as IEEE 754's overflow rule has it.
fn once<T: Copy + Into<f64>>(x: f64, from_bits: fn(u16) -> T, to_bits: fn(T) -> u16, guess: T) -> T {
    if !x.is_finite() {
        return guess;
    }
    let as_rounded = |c: T| -> f64 {
        let v: f64 = c.into();
        if v.is_infinite() {
            let b = to_bits(c);
            let (max, below): (f64, f64) = (from_bits(b - 1).into(), from_bits(b - 2).into());
            (2.0 * max - below).copysign(v)
        } else {
            v
        }
    };
    let g = to_bits(guess);
    let mut best = guess;
    for b in [g.wrapping_sub(1), g, g.wrapping_add(1)] {
        let c = from_bits(b);
        if c.into().is_nan() || (c.into() != 0.0 && (c.into() < 0.0) != (x < 0.0)) {
            continue;
        }
        let (dc, db) = ((as_rounded(c) - x).abs(), (as_rounded(best) - x).abs());
        if dc < db || (dc == db && b % 2 == 0) {
            best = c;
        }
    }
    best
}

fn f16_once(x: f64) -> f16 {
    once(x, f16::from_bits, f16::to_bits, f16::from_f64(x))
}

fn bf16_once(x: f64) -> bf16 {
    once(x, bf16::from_bits, bf16::to_bits, bf16::from_f64(x))
}

/// Rounds with `f16` arithmetic: `f(a, b)` in `f32`, rounded (`half`'s operators do this).
fn h(x: f32) -> f16 {
    f16::from_f32(x)
}

/// Runs `kernel` of `src` with each CPU backend on fresh `args()`: the bound arguments after
/// each launch.
fn run_each(src: &str, kernel: &str, args: &dyn Fn() -> HashMap<String, ArgValue>) -> Vec<(tilec::CpuBackend, Bound)> {
    let set = SourceSet::with_stdlib("test.tile", src);
    cpu_backends()
        .into_iter()
        .map(|be| {
            let runner = tilec::CpuRunner::with_backend(&set, kernel, &args(), &HashMap::new(), be)
                .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d, &set, ErrorFormat::Human, false)));
            (be, runner.run(args()).unwrap_or_else(|err| panic!("{be}: {err}")).0)
        })
        .collect()
}

#[test]
fn half_arithmetic_rounds_after_each_operation() {
    let (m, n) = (7usize, 13usize);
    let mut rng = Rng::new(29);
    // In [1/8, 4) with either sign (see the kernel's docs).
    let mut wide = || -> Vec<f64> {
        (0..m * n).map(|_| (0.125 * 32f64.powf(rng.uniform(0.0, 1.0))).copysign(rng.uniform(-1.0, 1.0))).collect()
    };
    let (x0, y0) = (wide(), wide());
    let b0: Vec<f64> = (0..n * n).map(|_| [-1.0, 0.0, 0.5, 1.0, 2.0][rng.int(0, 5) as usize]).collect();
    for elem in FLOATS {
        let args = || -> HashMap<String, ArgValue> {
            let mut v =
                vec![("X", arr(elem, &x0, &[m, n])), ("Y", arr(elem, &y0, &[m, n])), ("B", arr(elem, &b0, &[n, n]))];
            for o in ["E", "F", "P", "C", "G"] {
                v.push((o, sentinel(elem, &[m, n])));
            }
            v.push(("S", sentinel(elem, &[m])));
            v.push(("H", sentinel(Scalar::F16, &[m, n])));
            v.push(("K", sentinel(Scalar::BF16, &[m, n])));
            v.into_iter().map(|(k, a)| (k.to_string(), a)).collect()
        };
        // The inputs as the kernel sees them (`T` values) converted to f16 and bf16.
        let to16 = |a: &[f64]| -> Vec<f16> {
            a.iter().map(|&v| if elem == Scalar::F32 { f16::from_f32(v as f32) } else { f16_once(v) }).collect()
        };
        let tob = |a: &[f64]| -> Vec<bf16> {
            a.iter().map(|&v| if elem == Scalar::F32 { bf16::from_f32(v as f32) } else { bf16_once(v) }).collect()
        };
        let (x, y, bm) = (to16(&x0), to16(&y0), to16(&b0));
        let (xb, yb) = (tob(&x0), tob(&y0));
        let at = |i: usize, j: usize| i * n + j;
        let c03 = f16_once(0.3);
        let e: Vec<f64> =
            (0..m * n).map(|k| (x[k] * y[k] + x[k] / y[k] - h(x[k].to_f32().abs().sqrt()) * c03).to_f64()).collect();
        let b001 = bf16_once(0.01);
        let b17 = bf16_once(1.7);
        let f: Vec<f64> = (0..m * n).map(|k| (xb[k] * yb[k] - xb[k] / (yb[k] + b001) + b17).to_f64()).collect();
        let s: Vec<f64> = (0..m)
            .map(|i| {
                let s16 = h((0..n).map(|j| x[at(i, j)].to_f32()).sum());
                let sb = bf16::from_f32((0..n).map(|j| xb[at(i, j)].to_f32()).sum());
                (s16 + f16::from_f32(sb.to_f32())).to_f64()
            })
            .collect();
        let p: Vec<f64> = (0..m * n)
            .map(|k| h((0..n).map(|l| x[at(k / n, l)].to_f32() * bm[at(l, k % n)].to_f32()).sum()).to_f64())
            .collect();
        let three = f16_once(3.0);
        let c: Vec<f64> =
            (0..m * n).map(|k| h((0..=k % n).map(|j| (x[at(k / n, j)] * three).to_f32()).sum()).to_f64()).collect();
        // `max_axis(x, 0)[2]` over the tile's 8 rows: the padding row is 0.
        let mx = (0..m).map(|i| x[at(i, 2)]).fold(f16::ZERO, f16::max);
        let mm = mx - f16_once(0.1);
        let (c25, c075) = (f16_once(2.5), f16_once(0.75));
        let g: Vec<f64> = (0..m * n)
            .map(|k| {
                let v = if x[k] > y[k] { x[k] - mm } else { y[k].min(x[k]) * c25 - c075.copysign(y[k]) };
                v.to_f64()
            })
            .collect();
        let one = f16::ONE;
        let hh: Vec<f64> = (0..m * n).map(|k| (x[k] * y[k] - one).to_f64()).collect();
        let c03b = bf16_once(0.3);
        let kk: Vec<f64> = (0..m * n).map(|k| (xb[k] * c03b + yb[k]).to_f64()).collect();
        for (be, bound) in run_each(SRC, "half_arith", &args) {
            for (name, want) in
                [("E", &e), ("F", &f), ("S", &s), ("P", &p), ("C", &c), ("G", &g), ("H", &hh), ("K", &kk)]
            {
                assert_same(&out(&bound, name), want, &format!("{be} {elem:?} `{name}`"));
            }
        }
    }
}

/// `const` items of the half types: rounded to the type (integers too), and of that type.
#[test]
fn const_items_of_half_types_are_rounded_to_them() {
    let src = "
const K: f16 = 2049;
const B: bf16 = 257;
const H: f16 = 70000;
kernel k(Y: mut f32[4]) grid(1) {
    let x: f16 = 1.0;
    Y[0] = (x * K) as f32;
    Y[1] = B as f32;
    Y[2] = H as f32;
    Y[3] = (K + 1.0) as f32;
}";
    for (be, bound) in run_each(src, "k", &|| [("Y".to_string(), sentinel(Scalar::F32, &[4]))].into()) {
        assert_same(&out(&bound, "Y"), &[2048.0, 256.0, f64::INFINITY, 2048.0], &format!("{be}"));
    }
}

#[test]
fn conversions_to_half_types_round_once() {
    let src = "
kernel conv(D: f64[N], I: i32[N], H: mut f16[N], B: mut bf16[N], HI: mut f16[N], BI: mut bf16[N]) grid(1) {
    let d = D[0:8];
    H[0:8] = d as f16;
    B[0:8] = d as bf16;
    let i = I[0:8];
    HI[0:8] = i as f16;
    BI[0:8] = i as bf16;
}";
    // Just above a tie of f16 (1 + 2^-11) and of bf16 (1 + 2^-8) by less than f32 keeps:
    // through f32 these would round to the tie and then to even (down); once, they round up.
    let d = [
        1.0 + 2f64.powi(-11) + 2f64.powi(-40),
        -(1.0 + 2f64.powi(-8) + 2f64.powi(-40)),
        65519.0,
        65520.0,
        1e-8,
        -0.0,
        f64::INFINITY,
        f64::NAN,
    ];
    // Integers beyond f32's 24 bits, near ties of bf16.
    let i = [16_777_217.0 + 65536.0, -(1i64 << 30) as f64 - 1.0, 2049.0, 65535.0, 0.0, -7.0, 257.0, 33_619_969.0];
    let args = || -> HashMap<String, ArgValue> {
        [
            ("D", arr(Scalar::F64, &d, &[8])),
            ("I", arr(Scalar::I32, &i, &[8])),
            ("H", sentinel(Scalar::F16, &[8])),
            ("B", sentinel(Scalar::BF16, &[8])),
            ("HI", sentinel(Scalar::F16, &[8])),
            ("BI", sentinel(Scalar::BF16, &[8])),
        ]
        .into_iter()
        .map(|(k, a)| (k.to_string(), a))
        .collect()
    };
    let want_h: Vec<f64> = d.iter().map(|&v| f16_once(v).to_f64()).collect();
    let want_b: Vec<f64> = d.iter().map(|&v| bf16_once(v).to_f64()).collect();
    let want_hi: Vec<f64> = i.iter().map(|&v| f16_once(v).to_f64()).collect();
    let want_bi: Vec<f64> = i.iter().map(|&v| bf16_once(v).to_f64()).collect();
    assert_eq!(want_h[0], 1.0 + 2f64.powi(-10), "the reference rounds once");
    for (be, bound) in run_each(src, "conv", &args) {
        assert_same(&out(&bound, "H"), &want_h, &format!("{be}: f64 as f16"));
        assert_same(&out(&bound, "B"), &want_b, &format!("{be}: f64 as bf16"));
        assert_same(&out(&bound, "HI"), &want_hi, &format!("{be}: i32 as f16"));
        assert_same(&out(&bound, "BI"), &want_bi, &format!("{be}: i32 as bf16"));
    }
}

/// `as f16` and `as bf16` of `f32` values, whole tiles (vectorized on the CPU) and one scalar at
/// a time, over every exponent (subnormals, the largest finite values, ties of both types,
/// infinities, NaNs) against the `half` crate's conversions there and back.
#[test]
fn f32_values_round_to_half_types_in_tiles_and_scalars() {
    let src = "
kernel rt(X: f32[N], H: mut f32[N], B: mut f32[N], HS: mut f32[N], BS: mut f32[N]) grid(cdiv(N, 256)) {
    let i = program_id(0) * 256;
    H[i:i+256] = (X[i:i+256] as f16) as f32;
    B[i:i+256] = (X[i:i+256] as bf16) as f32;
    for k in i..i+256 {
        let x = X[k];
        HS[k] = (x as f16) as f32;
        BS[k] = (x as bf16) as f32;
    }
}";
    let mut rng = Rng::new(77);
    let mut x: Vec<f64> = (0..20000)
        .map(|_| {
            let bits = (rng.int(0, 1 << 31) as u32) << 1 | rng.int(0, 2) as u32;
            // Half the values with the low 12 bits cleared or set to a tie of f16 or bf16.
            let bits = match rng.int(0, 4) {
                0 => bits & !0x1fff | 0x1000,
                1 => bits & !0xffff | 0x8000,
                _ => bits,
            };
            f32::from_bits(bits) as f64
        })
        .collect();
    x.extend([0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 6.0e-8, 2.9e-8, 3.0e-8, f64::INFINITY, -f64::INFINITY]);
    x.extend([f32::MAX as f64, 3.3961776e38, 1e-40, -1e-45]);
    let n = x.len();
    let args = || -> HashMap<String, ArgValue> {
        let mut v = vec![("X".to_string(), arr(Scalar::F32, &x, &[n]))];
        for o in ["H", "B", "HS", "BS"] {
            v.push((o.to_string(), sentinel(Scalar::F32, &[n])));
        }
        v.into_iter().collect()
    };
    let want_h: Vec<f64> = x.iter().map(|&v| f16::from_f32(v as f32).to_f64()).collect();
    let want_b: Vec<f64> = x.iter().map(|&v| bf16::from_f32(v as f32).to_f64()).collect();
    for (be, bound) in run_each(src, "rt", &args) {
        for (name, want) in [("H", &want_h), ("B", &want_b), ("HS", &want_h), ("BS", &want_b)] {
            assert_same(&out(&bound, name), want, &format!("{be}: `{name}`"));
        }
    }
}
