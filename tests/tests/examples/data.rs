//! Data-parallel examples: atomic column sums, suffix sums, half-precision arithmetic, stream compaction.

use super::*;

#[test]
fn colsum_example_adds_atomically_across_programs() {
    for elem in [Scalar::F32, Scalar::F64] {
        let m = 1000usize;
        let x = rounded(elem, &random_uniform(m * 48, 10));
        let got = run(
            "colsum.tile",
            "colsum",
            vec![("X", arr(elem, &x, &[m as u64, 48])), ("S", arr(elem, &[0.0; 48], &[48]))],
            "S",
        );
        for c in 0..48 {
            let want: f64 = (0..m).map(|r| x[r * 48 + c]).sum();
            assert!((got[c] - want).abs() <= tol(elem) * m as f64, "{elem:?} column {c}: {} vs {want}", got[c]);
        }
    }
}

/// Suffix sums of 29 rows of 300 (padding to 512): each against the f64 sums from the last
/// element back; the f32 sums are the f32 additions in that order, so they match it exactly.
#[test]
fn suffix_sums_example_adds_from_the_end() {
    for elem in [Scalar::F32, Scalar::F64] {
        let (m, n) = (29usize, 300usize);
        let x = rounded(elem, &random_uniform(m * n, 131));
        let sh = [m as u64, n as u64];
        let y = run(
            "suffix_sums.tile",
            "suffix_sums",
            vec![("X", arr(elem, &x, &sh)), ("Y", arr(elem, &vec![7.0; m * n], &sh))],
            "Y",
        );
        for r in 0..m {
            let mut acc = 0.0f64;
            for c in (0..n).rev() {
                acc = elem.round(acc + x[r * n + c]);
                assert_eq!(y[r * n + c], acc, "{elem:?} ({r}, {c})");
            }
        }
    }
}

/// Half-precision arithmetic: the f16 residual update and the bf16 momentum step against the
/// `half` crate's binary16 and bfloat16 (each operation rounded to the type, as NumPy's
/// `float16` computes), bit for bit, on 37 rows of 300 (rows padded to 1024) and 2500
/// elements (three programs, the last partial).
#[test]
fn half_precision_example_rounds_each_operation() {
    use half::{bf16, f16};
    let (m, n) = (37usize, 300usize);
    let h16 = |seed: u64, len: usize| -> Vec<f64> {
        random_uniform(len, seed).iter().map(|v| f16::from_f64(v * 4.0).to_f64()).collect()
    };
    let (x, f) = (h16(161, m * n), h16(162, m * n));
    let sh = [m as u64, n as u64];
    let args = vec![
        ("X", arr(Scalar::F16, &x, &sh)),
        ("F", arr(Scalar::F16, &f, &sh)),
        ("Y", arr(Scalar::F16, &vec![7.0; m * n], &sh)),
        ("gamma", ArgValue::Scalar(Const::Float(0.3, Scalar::F32))),
    ];
    let y = run("half_precision.tile", "residual_f16", args, "Y");
    let gamma = f16::from_f32(0.3);
    let want: Vec<f64> =
        x.iter().zip(&f).map(|(x, f)| (f16::from_f64(*x) + gamma * f16::from_f64(*f)).to_f64()).collect();
    assert_eq!(y, want, "residual_f16");
    let len = 2500usize;
    let b16 =
        |seed: u64| -> Vec<f64> { random_uniform(len, seed).iter().map(|v| bf16::from_f64(*v).to_f64()).collect() };
    let (p, g, v) = (b16(163), b16(164), b16(165));
    let l = [len as u64];
    let args = vec![
        ("P", arr(Scalar::BF16, &p, &l)),
        ("G", arr(Scalar::BF16, &g, &l)),
        ("V", arr(Scalar::BF16, &v, &l)),
        ("lr", ArgValue::Scalar(Const::Float(0.1, Scalar::F32))),
        ("mu", ArgValue::Scalar(Const::Float(0.9, Scalar::F32))),
    ];
    let got = run_outs("half_precision.tile", "sgd_momentum_bf16", args, &["P", "V"]);
    let (lr, mu) = (bf16::from_f32(0.1), bf16::from_f32(0.9));
    let b = |x: f64| bf16::from_f64(x);
    let v_new: Vec<bf16> = (0..len).map(|i| mu * b(v[i]) + b(g[i])).collect();
    let p_new: Vec<f64> = (0..len).map(|i| (b(p[i]) - lr * v_new[i]).to_f64()).collect();
    assert_eq!(got[1], v_new.iter().map(|v| v.to_f64()).collect::<Vec<_>>(), "sgd_momentum_bf16 V");
    assert_eq!(got[0], p_new, "sgd_momentum_bf16 P");
}

/// Stream compaction of 5000 elements (five programs, the last partial) with the threshold
/// met by about a third: the count exactly, each block's kept elements in order, and the
/// kept elements as a set against NumPy's `x[x > t]` (blocks land in counter order).
#[test]
fn compact_example_keeps_what_passes_with_one_fetch_and_add() {
    let n = 5000usize;
    let x = random_uniform(n, 153);
    for elem in [Scalar::F32, Scalar::F64] {
        let xs = rounded(elem, &x);
        let t = 0.3;
        let args = vec![
            ("X", arr(elem, &x, &[n as u64])),
            ("Y", arr(elem, &vec![7.0; n], &[n as u64])),
            ("Count", ArgValue::Array(HostArray::from_i32(&[0], &[1]).unwrap())),
            ("t", ArgValue::Scalar(Const::Float(t, elem))),
        ];
        let got = run_outs("compact.tile", "compact", args, &["Y", "Count"]);
        let want: Vec<f64> = xs.iter().copied().filter(|v| *v > elem.round(t)).collect();
        assert_eq!(got[1], vec![want.len() as f64], "{elem:?} count");
        let mut kept = got[0][..want.len()].to_vec();
        // Each block's elements in their order: the kept values of a block are contiguous.
        for b in 0..n.div_ceil(1024) {
            let block: Vec<f64> =
                xs[b * 1024..(b * 1024 + 1024).min(n)].iter().copied().filter(|v| *v > elem.round(t)).collect();
            let at = kept.windows(block.len().max(1)).position(|w| w == &block[..]);
            assert!(block.is_empty() || at.is_some(), "{elem:?}: block {b} is not contiguous and in order");
        }
        assert!(got[0][want.len()..].iter().all(|v| *v == 7.0), "{elem:?}: written past the count");
        let mut want = want;
        kept.sort_by(f64::total_cmp);
        want.sort_by(f64::total_cmp);
        assert_eq!(kept, want, "{elem:?}: the kept elements");
    }
}
