//! The CUDA target without a GPU (this machine and CI): `tilec run --target cuda` fails with
//! a clear message and exit code 2, and a tilec built without the PTX backend says how to get
//! it.

fn tilec(args: &[&str]) -> (i32, String) {
    let argv: Vec<String> = std::iter::once("tilec").chain(args.iter().copied()).map(String::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    (code, String::from_utf8_lossy(&err).into_owned())
}

#[test]
fn run_on_cuda_without_a_driver_fails_cleanly() {
    if tilec_runtime::CudaDevice::open(None).is_ok() {
        eprintln!("skipped: this machine has a CUDA device");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tilec-cuda-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("spd.npy");
    let out = dir.join("l.npy");
    assert_eq!(tilec(&["gen-spd", "--batch", "2", "--n", "8", "-o", input.to_str().unwrap()]).0, 0);
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (code, err) = tilec(&[
        "run",
        &format!("{root}/stdlib/linalg.tile"),
        "--kernel",
        "potrf_batched",
        "--target",
        "cuda",
        "--arg",
        &format!("A={}", input.display()),
        "--arg",
        "eps=1e-6",
        "--out",
        &format!("A={}", out.display()),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("E0430") && err.contains("libcuda.so.1"), "{err}");
    assert!(!out.exists(), "a failed run writes no output");
    std::fs::remove_dir_all(&dir).ok();
}

#[cfg(not(feature = "llvm"))]
#[test]
fn ptx_without_the_backend_says_how_to_get_it() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (code, err) = tilec(&["build", &format!("{root}/examples/gemm.tile"), "--target", "ptx"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("E0505") && err.contains("--features llvm") && err.contains("llvm-16-dev"), "{err}");
}
