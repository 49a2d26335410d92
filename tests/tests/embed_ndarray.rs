//! The embedding API with ndarray views (`tilec` feature `ndarray`): a batched Cholesky on an
//! `Array3` written in place, a gemm on views of larger arrays, and a transposed view refused
//! with E0440 (never copied).

use ndarray::{s, Array2, Array3};
use tilec::{Args, Program, Target};

#[test]
fn ndarray_views_are_launched_in_place() {
    let linalg = Program::linalg().unwrap();
    let (b, n) = (3usize, 19usize);
    let a = Array3::from_shape_fn(
        (b, n, n),
        |(k, i, j)| {
            if i == j {
                n as f64 + k as f64
            } else {
                1.0 / (1.0 + (i + j) as f64)
            }
        },
    );
    let mut l = a.clone();
    linalg
        .launch("potrf_batched", Target::CPU, Args::new().view_mut("A", l.view_mut()).scalar("eps", 0.0), &[])
        .unwrap();
    for k in 0..b {
        for i in 0..n {
            for j in 0..=i {
                let s: f64 = (0..=j).map(|p| l[[k, i, p]] * l[[k, j, p]]).sum();
                assert!((s - a[[k, i, j]]).abs() < 1e-12 * n as f64, "({k}, {i}, {j})");
            }
        }
    }
    // gemm on row blocks of larger arrays (contiguous views), C = A B.
    let big_a = Array2::from_shape_fn((40, 7), |(i, j)| (i * 7 + j) as f32 * 0.01);
    let bm = Array2::from_shape_fn((7, 9), |(i, j)| (i as f32 - j as f32) * 0.1);
    let mut big_c = Array2::<f32>::zeros((40, 9));
    let args = Args::new()
        .view("A", big_a.slice(s![10..30, ..]))
        .view("B", bm.view())
        .view_mut("C", big_c.slice_mut(s![10..30, ..]))
        .scalar("alpha", 1.0)
        .scalar("beta", 0.0);
    linalg.launch("gemm", Target::CPU, args, &[]).unwrap();
    let want = big_a.slice(s![10..30, ..]).dot(&bm);
    let got = big_c.slice(s![10..30, ..]);
    assert!(got.iter().zip(want.iter()).all(|(x, y)| (x - y).abs() < 1e-5));
    assert!(big_c.slice(s![0..10, ..]).iter().all(|&x| x == 0.0));
    // A transposed view is not passed as it is (it would read the wrong elements).
    let t = bm.t();
    let mut c = Array2::<f32>::zeros((9, 9));
    let args = Args::new()
        .view("A", t)
        .view("B", bm.view())
        .view_mut("C", c.view_mut())
        .scalar("alpha", 1.0)
        .scalar("beta", 0.0);
    let e = linalg.launch("gemm", Target::CPU, args, &[]).err().unwrap();
    assert_eq!(e.code(), "E0440", "{e}");
    assert!(e.to_string().contains("argument `A` is not in standard (C) layout"), "{e}");
}
