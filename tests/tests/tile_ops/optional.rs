//! Optional arrays (`A: f32[N]?`, language §3.3) on both CPU backends
//! (`tests/tests/cases/optional.tile`, 10 rows in tiles of 4): every combination of the three
//! optional inputs and outputs given or omitted, against a plain reference: an omitted array
//! reads as zeros, takes no stores and atomic updates, `present` is false for it, and a shape
//! variable that only it declares is 0.

use super::*;

const SRC: &str = include_str!("../cases/optional.tile");

/// A shape variable that only optional arrays declare comes from the given one, wherever it
/// stands; it is 0 when both are omitted.
#[test]
fn shape_variables_of_optional_arrays_come_from_the_given_ones() {
    let src = "
kernel k(A: f32[N]?, B: f32[N]?, Y: mut f32[2]) grid(1) {
    Y[0] = N as f32;
    Y[1] = sum(B[0:8]) + sum(A[0:8]);
}";
    let b = [1.0, 2.0, 3.0, 4.0, 5.0];
    for (give_a, give_b, want) in [(false, true, [5.0, 15.0]), (true, false, [5.0, 15.0]), (false, false, [0.0, 0.0])] {
        let mut args = vec![("Y", arr(Scalar::F32, &[7.0, 7.0], &[2]))];
        if give_a {
            args.push(("A", arr(Scalar::F32, &b, &[5])));
        }
        if give_b {
            args.push(("B", arr(Scalar::F32, &b, &[5])));
        }
        let bound = run(src, "k", args);
        assert_exact(&out(&bound, "Y"), &want, &format!("A given {give_a}, B given {give_b}"));
    }
}

#[test]
fn omitted_optional_arrays_are_empty_and_not_present() {
    let (m, n, l) = (10usize, 13usize, 3usize);
    let mut rng = Rng::new(41);
    let x: Vec<f64> = (0..m * n).map(|_| rng.int(-16, 17) as f64 / 8.0).collect();
    let bias: Vec<f64> = (0..n).map(|_| rng.int(-16, 17) as f64 / 8.0).collect();
    let extra: Vec<f64> = (0..l).map(|_| rng.int(-8, 9) as f64).collect();
    for elem in FLOATS {
        for mask in 0..8u32 {
            let (has_stats, has_bias, has_extra) = (mask & 1 != 0, mask & 2 != 0, mask & 4 != 0);
            let args = || -> HashMap<String, ArgValue> {
                let mut v = vec![
                    ("X", arr(elem, &x, &[m, n])),
                    ("Y", sentinel(elem, &[m, n])),
                    ("Flags", arr(Scalar::I32, &vec![-1.0; m], &[m])),
                ];
                if has_stats {
                    v.push(("Stats", sentinel(elem, &[m])));
                }
                if has_bias {
                    v.push(("Bias", arr(elem, &bias, &[n])));
                }
                if has_extra {
                    v.push(("Extra", arr(elem, &extra, &[l])));
                }
                // Hist: given with the statistics.
                if has_stats {
                    v.push(("Hist", arr(elem, &[0.0; 4], &[4])));
                }
                v.into_iter().map(|(k, a)| (k.to_string(), a)).collect()
            };
            let ex = |r: usize| if has_extra && r < l { extra[r] } else { 0.0 };
            let y = |r: usize, c: usize| 2.0 * x[r * n + c] + if has_bias { bias[c] } else { 0.0 };
            let big_l = if has_extra { l as f64 } else { 0.0 };
            let want_y: Vec<f64> = (0..m * n).map(|k| y(k / n, k % n) + ex(k / n % 4) + big_l).collect();
            let row_sum = |r: usize| (0..n).map(|c| y(r, c)).sum::<f64>();
            let want_stats: Vec<f64> = (0..m).map(row_sum).collect();
            // The padding rows of the last tile (x reads as 0) add the bias.
            let mut hist = [0.0; 4];
            for r in 0..m.next_multiple_of(4) {
                hist[r % 4] += if r < m {
                    row_sum(r)
                } else if has_bias {
                    bias.iter().sum()
                } else {
                    0.0
                };
            }
            let flag = mask as f64;
            let want_flags: Vec<f64> = (0..m).map(|r| flag + ex(r % 3)).collect();
            for be in cpu_backends() {
                let set = SourceSet::with_stdlib("optional.tile", SRC);
                let runner = tilec::CpuRunner::with_backend(&set, "optional", &args(), &HashMap::new(), be)
                    .unwrap_or_else(|d| panic!("{}", render_diagnostics(&d, &set, ErrorFormat::Human, false)));
                let (b, _) = runner.run(args()).unwrap_or_else(|e| panic!("{be} {mask}: {e}"));
                let ctx = |o: &str| format!("{be} {elem:?} given {mask:03b}: `{o}`");
                assert_exact(&out(&b, "Y"), &want_y, &ctx("Y"));
                assert_exact(&out(&b, "Flags"), &want_flags, &ctx("Flags"));
                if has_stats {
                    assert_exact(&out(&b, "Stats"), &want_stats, &ctx("Stats"));
                    assert_close(&out(&b, "Hist"), &hist, tol(elem), &ctx("Hist"));
                } else {
                    assert!(b.array("Stats").unwrap().to_f64_vec().is_empty(), "{}", ctx("Stats"));
                }
            }
        }
    }
}
