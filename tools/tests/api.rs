//! The Rust embedding API (`tilec::Program`): results on the caller's memory against f64
//! references, in-place semantics, the coded errors of bad arguments (as `tilec run` gives
//! them), compile errors with their rendering, instance caching, launches from several
//! threads, the Vulkan target on lavapipe, a clean error without a CUDA driver, arrays in CUDA
//! device memory checked before any device is needed, and the example program
//! `examples/embed.rs` built and run.

use std::process::Command;
use tilec::{Args, Error, GenericArg, Program, Target};
use tilec_midend::Scalar;

/// `scale(A, C, s)`: C = s A; `twice(A)`: A *= 2 in place; `count(n, out)`: out[i] = i + n.
const KERNELS: &str = "
/// C = s A.
kernel scale<T: float>(A: T[M, N], C: mut T[M, N], s: T) grid(M) block(16) {
    let i = program_id(0);
    for j in 0..N { C[i, j] = A[i, j] * s; }
}

kernel twice<T: float>(A: mut T[M]) grid(M) block(16) {
    let i = program_id(0);
    A[i] = A[i] * 2.0;
}

kernel count(n: i32, out: mut i32[M]) grid(M) block(16) {
    let i = program_id(0);
    out[i] = i + n;
}
";

fn program() -> Program {
    Program::new("k.tile", KERNELS).unwrap()
}

fn code(r: Result<tilec::Launched, Error>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => e.code().to_string(),
    }
}

#[test]
fn launches_on_callers_memory_in_place() {
    let p = program();
    let a: Vec<f32> = (0..15).map(|i| i as f32 - 3.5).collect();
    let mut c = vec![f32::NAN; 15];
    let r = p.launch(
        "scale",
        Target::CPU,
        Args::new().array("A", &a, &[3, 5]).array_mut("C", &mut c, &[3, 5]).scalar("s", 0.5),
        &[],
    );
    let launched = r.unwrap();
    assert_eq!(launched.values.grid, [3, 1, 1]);
    assert_eq!(c, a.iter().map(|x| x * 0.5).collect::<Vec<_>>());
    let mut x = vec![1.0f64, -2.0, 3.25];
    p.launch("twice", Target::CPU, Args::new().array_mut("A", &mut x, &[3]), &[]).unwrap();
    assert_eq!(x, [2.0, -4.0, 6.5]);
    let mut out = vec![0i32; 4];
    p.launch("count", Target::CPU, Args::new().scalar("n", 10).array_mut("out", &mut out, &[4]), &[]).unwrap();
    assert_eq!(out, [10, 11, 12, 13]);
}

/// `half::f16` and `half::bf16` slices are f16/bf16 arrays: computed in f32, rounded when
/// stored, in place.
#[test]
fn half_precision_slices() {
    use tilec::half::{bf16, f16};
    let p = program();
    let a: Vec<f16> = [1.0f32, -2.5, 1000.0, 3.0e-5].iter().map(|&x| f16::from_f32(x)).collect();
    let mut c = vec![f16::NAN; 4];
    p.launch(
        "scale",
        Target::CPU,
        Args::new().array("A", &a, &[2, 2]).array_mut("C", &mut c, &[2, 2]).scalar("s", 3.0),
        &[],
    )
    .unwrap();
    let want: Vec<f16> = a.iter().map(|x| f16::from_f32(x.to_f32() * 3.0)).collect();
    assert_eq!(c, want);
    let mut b: Vec<bf16> = [1.0f32, 3.0e38, -0.1].iter().map(|&x| bf16::from_f32(x)).collect();
    let inst = p.instance("twice", Target::CPU, &Args::new(), &[("T", GenericArg::Type(Scalar::BF16))]).unwrap();
    assert_eq!(inst.kernel().symbol, "twice__bf16");
    p.run(&inst, Args::new().array_mut("A", &mut b, &[3])).unwrap();
    assert_eq!(b[0], bf16::from_f32(2.0));
    assert!(b[1].is_infinite(), "3e38 * 2 overflows bf16 and f32 alike");
    assert_eq!(b[2], bf16::from_f32(bf16::from_f32(-0.1).to_f32() * 2.0));
}

#[test]
fn stdlib_potrf_matches_f64_reference() {
    let linalg = Program::linalg().unwrap();
    let names: Vec<&str> = linalg.kernels().iter().map(|k| k.name.as_str()).collect();
    assert!(names.contains(&"potrf_batched") && names.contains(&"gemm"), "{names:?}");
    let gemm = linalg.kernels().iter().find(|k| k.name == "gemm").unwrap();
    assert_eq!(gemm.params.iter().map(|p| (p.name.as_str(), p.mutable)).collect::<Vec<_>>()[2], ("C", true));
    assert!(gemm.generics.iter().any(|g| g.name == "BM" && g.is_const));
    // Two 17x17 SPD matrices (odd size: a partial tile), f32.
    let n = 17;
    let a: Vec<f64> = (0..2 * n * n)
        .map(|e| {
            let (b, i, j) = (e / (n * n), e / n % n, e % n);
            if i == j {
                n as f64 + b as f64
            } else {
                1.0 / (1.0 + (i + j) as f64)
            }
        })
        .collect();
    let mut l: Vec<f32> = a.iter().map(|&x| x as f32).collect();
    linalg
        .launch("potrf_batched", Target::CPU, Args::new().array_mut("A", &mut l, &[2, n, n]).scalar("eps", 1e-6), &[])
        .unwrap();
    for b in 0..2 {
        for i in 0..n {
            for j in 0..=i {
                let s: f64 = (0..=j).map(|p| l[b * n * n + i * n + p] as f64 * l[b * n * n + j * n + p] as f64).sum();
                let want = a[b * n * n + i * n + j];
                assert!((s - want).abs() < 1e-4 * want.abs().max(1.0), "b {b} ({i}, {j}): {s} vs {want}");
            }
        }
    }
}

#[test]
fn bad_arguments_have_the_cli_codes() {
    let p = program();
    let a = vec![1.0f32; 6];
    let a64 = vec![1.0f64; 6];
    let mut c = vec![0.0f32; 6];
    let launch = |args: Args<'_>| code(p.launch("scale", Target::CPU, args, &[("T", GenericArg::Type(Scalar::F32))]));
    // Wrong dtype, shape, slice length, missing and unknown arguments, scalar out of range.
    assert_eq!(launch(Args::new().array("A", &a64, &[2, 3]).array_mut("C", &mut c, &[2, 3]).scalar("s", 1.0)), "E0410");
    assert_eq!(launch(Args::new().array("A", &a, &[3, 2]).array_mut("C", &mut c, &[2, 3]).scalar("s", 1.0)), "E0412");
    assert_eq!(launch(Args::new().array("A", &a, &[2, 2]).array_mut("C", &mut c, &[2, 3]).scalar("s", 1.0)), "E0405");
    assert_eq!(launch(Args::new().array("A", &a, &[2, 3]).scalar("s", 1.0)), "E0407");
    assert_eq!(launch(Args::new().array("A", &a, &[2, 3]).array_mut("C", &mut c, &[2, 3]).scalar("t", 1.0)), "E0408");
    assert_eq!(launch(Args::new().array("A", &a, &[2, 3]).array_mut("C", &mut c, &[2, 3]).scalar("s", 1e300)), "E0414");
    // A read-only array for a `mut` parameter.
    assert_eq!(launch(Args::new().array("A", &a, &[2, 3]).array("C", &a, &[2, 3]).scalar("s", 1.0)), "E0437");
    let mut out = vec![0i32; 2];
    let r = p.launch("count", Target::CPU, Args::new().scalar("n", 1.5).array_mut("out", &mut out, &[2]), &[]);
    assert_eq!(code(r), "E0414");
    // The output array overlapping the input (only possible through raw memory).
    let mut buf = vec![0.0f32; 12];
    let ptr = buf.as_mut_ptr() as *mut u8;
    // SAFETY: `buf` outlives the arguments and is not used while they live; the kernel is
    // never launched (binding fails).
    let args = unsafe {
        Args::new()
            .raw("A", Scalar::F32, &[2, 3], ptr, false)
            .raw("C", Scalar::F32, &[2, 3], ptr.add(8), true)
            .scalar("s", 1.0)
    };
    let e = p.launch("scale", Target::CPU, args, &[]).err().unwrap();
    assert_eq!(e.code(), "E0438");
    assert!(e.rendered().contains("error[E0438]: the memory of argument `C`, which the kernel writes, overlaps"));
    assert_eq!(buf, vec![0.0; 12]);
    // No such kernel.
    let e = p.launch("scal", Target::CPU, Args::new(), &[]).err().unwrap();
    assert_eq!(e.code(), "E0107");
    assert!(e.to_string().contains("kernels in this program: scale, twice, count"), "{e}");
    assert!(e.to_string().contains("did you mean `scale`?"), "{e}");
}

#[test]
fn errors_name_the_argument_and_the_instance() {
    let p = program();
    let a = vec![1.0f32; 6];
    let mut c = vec![0.0f32; 6];
    let mut out = vec![0i32; 2];
    // A misspelt name is E0408 whatever it holds, listing the parameters and the generic ones.
    let e = p.launch("scale", Target::CPU, Args::new().array("A", &a, &[2, 3]).array_mut("c", &mut c, &[2, 3]), &[]);
    let e = e.err().unwrap();
    assert_eq!(e.code(), "E0408");
    assert!(e.to_string().contains("kernel `scale` has no parameter `c` (its parameters: A, C, s, T)"), "{e}");
    // A scalar out of range, and misaligned memory: the argument named.
    let r = p.launch("count", Target::CPU, Args::new().scalar("n", 1i64 << 40).array_mut("out", &mut out, &[2]), &[]);
    let e = r.err().unwrap();
    assert!(e.to_string().contains("error[E0414]: argument `n`: `1099511627776` is not a valid i32"), "{e}");
    let mut buf = vec![0u8; 32];
    // SAFETY: `buf` outlives the arguments; the launch fails before reading it (misaligned).
    let args = unsafe { Args::new().raw("A", Scalar::F32, &[4], buf.as_mut_ptr().add(1), true) };
    let e = p.launch("twice", Target::CPU, args, &[]).err().unwrap();
    assert_eq!(e.code(), "E0439");
    assert!(e.to_string().contains("argument `A`: array memory at address"), "{e}");
    // A const parameter's value that breaks the kernel: each error names the instance.
    let q = Program::new("q.tile", "kernel z<const R: i32>(A: mut f32[R]) grid(1) { A[0:R] = tile<f32, R>::zeros(); }")
        .unwrap();
    let mut z = vec![1.0f32; 4];
    let r = q.launch("z", Target::CPU, Args::new().array_mut("A", &mut z, &[4]), &[("R", GenericArg::Const(0))]);
    let e = r.err().unwrap();
    assert_eq!(e.code(), "E0204");
    assert!(e.to_string().contains("in the instance of `z` with R = 0"), "{e}");
    // A shape declared with a const parameter is shown by its name.
    let r = q.launch("z", Target::CPU, Args::new().array_mut("A", &mut z, &[4]), &[("R", GenericArg::Const(3))]);
    let e = r.err().unwrap();
    assert!(e.to_string().contains("argument `A`: expected shape [R] = [3], got [4]"), "{e}");
}

#[test]
fn kernels_of_imported_modules_are_the_programs() {
    let p = Program::new("i.tile", "import linalg;\n").unwrap();
    let names: Vec<&str> = p.kernels().iter().map(|k| k.name.as_str()).collect();
    assert!(names.contains(&"potrf_batched") && names.contains(&"gemm"), "{names:?}");
    let gemm = p.kernels().iter().find(|k| k.name == "gemm").unwrap();
    assert_eq!(gemm.generics[1].text, "const BM: i32 = 32 in [16, 32, 64]");
    let mut a = vec![4.0f64, 0.0, 0.0, 9.0];
    p.launch("potrf_batched", Target::CPU, Args::new().array_mut("A", &mut a, &[1, 2, 2]).scalar("eps", 0.0), &[])
        .unwrap();
    assert_eq!(a, [2.0, 0.0, 0.0, 3.0]);
}

#[test]
fn compile_errors_carry_every_diagnostic_rendered() {
    let e =
        Program::new("bad.tile", "kernel k(A: mut f32[N]) grid(N) block(16) {\n    A[0] = x + y;\n}\n").err().unwrap();
    assert_eq!(e.code(), "E0101");
    let codes: Vec<&str> = e.diagnostics.iter().map(|d| d.code).collect();
    assert_eq!(codes, ["E0101", "E0101"], "{e}");
    assert!(e.rendered().contains("bad.tile:2:12"), "{}", e.rendered());
    let e = Program::from_file("/nonexistent/prog.tile").err().unwrap();
    assert_eq!(e.code(), "E0400");
}

#[test]
fn instances_are_cached_and_threads_launch_at_once() {
    let p = program();
    let x = [1.0f32; 4];
    let one = p.instance("twice", Target::CPU, &Args::new().array("A", &x, &[4]), &[]).unwrap();
    let y = [2.0f32; 9];
    let two = p.instance("twice", Target::CPU, &Args::new().array("A", &y, &[9]), &[]).unwrap();
    let e = p.instance("twice", Target::CPU, &Args::new().array("A", &y, &[4]), &[]).err().unwrap();
    assert_eq!(e.code(), "E0405");
    assert!(std::sync::Arc::ptr_eq(&one, &two));
    let x64 = [1.0f64; 4];
    let other = p.instance("twice", Target::CPU, &Args::new().array("A", &x64, &[4]), &[]).unwrap();
    assert!(!std::sync::Arc::ptr_eq(&one, &other));
    assert_eq!(other.kernel().symbol, "twice__f64");
    std::thread::scope(|s| {
        for t in 0..4 {
            let p = &p;
            s.spawn(move || {
                for r in 0..20 {
                    let mut v: Vec<f64> = (0..1000).map(|i| (i + t * r) as f64).collect();
                    p.launch("twice", Target::CPU, Args::new().array_mut("A", &mut v, &[1000]), &[]).unwrap();
                    assert!(v.iter().enumerate().all(|(i, &y)| y == 2.0 * (i + t * r) as f64));
                }
            });
        }
    });
}

#[test]
fn vulkan_target_runs_in_place_or_reports_no_device() {
    let p = program();
    let a: Vec<f32> = (0..21).map(|i| i as f32 * 0.25).collect();
    let mut c = vec![0.0f32; 21];
    let r = p.launch(
        "scale",
        Target::Vulkan { device: None },
        Args::new().array("A", &a, &[7, 3]).array_mut("C", &mut c, &[7, 3]).scalar("s", -2.0),
        &[],
    );
    match r {
        Ok(_) => assert_eq!(c, a.iter().map(|x| -2.0 * x).collect::<Vec<_>>()),
        Err(e) if std::env::var_os("TILEC_REQUIRE_VULKAN").is_none() && ["E0420", "E0422"].contains(&e.code()) => {
            eprintln!("skipped: {e}")
        }
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn cuda_target_without_a_driver_is_a_coded_error() {
    let p = program();
    let mut x = vec![1.0f32; 3];
    match p.launch("twice", Target::Cuda { device: None }, Args::new().array_mut("A", &mut x, &[3]), &[]) {
        Ok(_) => assert_eq!(x, [2.0; 3]),
        // No driver, no device, or no PTX backend in this build.
        Err(e) => assert!(["E0430", "E0432", "E0505"].contains(&e.code()), "{e}"),
    }
}

/// Arrays in CUDA device memory (`Args::device`, as PyTorch and CuPy tensors come from Python)
/// are checked before anything could read them: E0442 for CPU and Vulkan targets, E0443 for
/// devices that disagree, E0437 for a read-only one that the kernel writes; a valid one gets
/// the CUDA target's own error here (no driver), or E0443 where there is a GPU (the address is
/// no memory of the driver's).
#[test]
fn device_arrays_are_checked_before_any_device() {
    let p = program();
    // SAFETY: nothing reads or writes this address: every launch below fails before a kernel
    // runs (the CUDA launcher asks the driver about it first).
    let dev = |device, writable| unsafe {
        tilec_runtime::DeviceArray::from_raw(Scalar::F32, &[3], 0x7f00_0000_0000, device, Some(1), writable).unwrap()
    };
    let a = vec![1.0f32; 3];
    let e = p.launch("twice", Target::CPU, Args::new().device("A", dev(Some(0), true)), &[]).err().unwrap();
    assert_eq!(e.code(), "E0442");
    assert!(e
        .to_string()
        .contains("argument `A` is in CUDA device memory (device 0), which the cpu target cannot read"));
    assert!(e.to_string().contains("`.cpu()`"), "{e}");
    let vulkan = Target::Vulkan { device: None };
    assert_eq!(code(p.launch("twice", vulkan, Args::new().device("A", dev(None, true)), &[])), "E0442");
    let cuda = |device| Target::Cuda { device };
    let two = Args::new().device("A", dev(Some(0), false)).device("C", dev(Some(1), true)).scalar("s", 1.0);
    let e = p.launch("scale", cuda(None), two, &[]).err().unwrap();
    assert_eq!(e.code(), "E0443");
    assert!(e.to_string().contains("argument `C` is on CUDA device 1, but argument `A` is on CUDA device 0"), "{e}");
    let e = p.launch("twice", cuda(Some(1)), Args::new().device("A", dev(Some(0), true)), &[]).err().unwrap();
    assert!(e.to_string().contains("the kernel runs on CUDA device 1; run it on device 0"), "{e}");
    let e = p.launch("twice", cuda(None), Args::new().device("A", dev(None, false)), &[]).err().unwrap();
    assert_eq!(e.code(), "E0437");
    assert!(e.to_string().contains("the parameter is `A: mut T[M]`"), "{e}");
    // Host arrays mix with device arrays; a valid launch needs the driver.
    let mixed = Args::new().array("A", &a, &[3]).device("C", dev(Some(0), true)).scalar("s", 1.0);
    let c = code(p.launch("scale", cuda(None), mixed, &[]));
    assert!(["E0430", "E0432", "E0505", "E0443"].contains(&c.as_str()), "{c}");
}

/// `examples/embed.rs`, built by `cargo test` with the tests, run on the CPU and on Vulkan.
#[test]
fn embed_example_runs() {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap().join("examples");
    let bin = dir.join(format!("embed{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.exists(), "{} is built by `cargo test`", bin.display());
    let mut targets = vec!["cpu"];
    if std::env::var_os("TILEC_REQUIRE_VULKAN").is_some() {
        targets.push("vulkan");
    }
    for t in targets {
        let out = Command::new(&bin).arg(t).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{t}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(stdout.matches("(ok)").count(), 4, "{t}: {stdout}");
    }
}

/// `BuildInfo` (what `tilec --version` prints) names this build's code generators, the
/// default first, its targets and LLVM where it is built in.
#[test]
fn build_info_names_the_code_generators_and_targets() {
    let info = tilec::BuildInfo::get();
    let text = info.to_string();
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert!(!info.commit.is_empty(), "{text}");
    if tilec::CpuBackend::Llvm.available() {
        assert_eq!(info.cpu_backends, [tilec::CpuBackend::Llvm, tilec::CpuBackend::Cranelift]);
        assert_eq!(info.targets, ["cpu", "vulkan", "cuda"]);
        assert!(info.llvm.as_deref().is_some_and(|v| v.starts_with("16.")), "{text}");
        assert!(text.contains("CPU code generators: LLVM (default), Cranelift\n"), "{text}");
        assert_eq!(tilec::Target::CPU, tilec::Target::Cpu(tilec::CpuBackend::Llvm));
    } else {
        assert_eq!(info.cpu_backends, [tilec::CpuBackend::Cranelift]);
        assert_eq!(info.targets, ["cpu", "vulkan"]);
        assert_eq!(info.llvm, None);
        assert!(text.contains("CPU code generators: Cranelift (default); built without LLVM\n"), "{text}");
        assert_eq!(tilec::Target::CPU, tilec::Target::Cpu(tilec::CpuBackend::Cranelift));
    }
    assert!(text.starts_with(&format!("tilec {} (commit {})\n", info.version, info.commit)), "{text}");
}
