//! Warnings must not fire on programs that read every binding: each program here reads its
//! variables through one of the language's less direct paths, and `tilec check` must print
//! nothing. (The warnings themselves are snapshotted in tests/ui/warn_*.tile.)

fn check(src: &str) -> (i32, String) {
    cli(src, "check", &[])
}

/// `tilec COMMAND FILE ARGS..` on `src` written to a temporary file (`build` writes its output
/// beside it): the exit code and stderr.
fn cli(src: &str, command: &str, args: &[&str]) -> (i32, String) {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tilec-warn-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("p.tile");
    std::fs::write(&file, src).expect("write");
    let out_file = dir.join("p.out");
    let mut argv: Vec<String> =
        ["tilec", command, file.to_str().expect("path")].iter().map(|s| s.to_string()).collect();
    if command == "build" {
        argv.extend(["-o".to_string(), out_file.to_str().expect("path").to_string()]);
    }
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    std::fs::remove_dir_all(&dir).ok();
    (code, String::from_utf8(err).expect("UTF-8"))
}

#[track_caller]
fn quiet(src: &str) {
    let (code, err) = check(src);
    assert_eq!((code, err.as_str()), (0, ""), "program:\n{src}");
}

#[test]
fn no_warnings_when_every_binding_is_read() {
    // A scalar parameter named like a shape symbol is the parameter.
    quiet("kernel k(N: i32, A: mut f32[N]) grid(N) {\n    A[0] = N as f32;\n}\n");
    // map, atomic_add, shared arrays, in-place methods, element and masked assignments.
    quiet(
        "fn sq(x: f32) -> f32 { x * x }\n\
         kernel k(A: f32[B, 16, 16], S: mut f32[16], C: mut f32[B, 16, 16], eps: f32) grid(B) {\n\
         \x20   let b = program_id(0);\n\
         \x20   let t = A[b, :, :];\n\
         \x20   let m = map(sq, t);\n\
         \x20   let s = shared<f32, 16>::zeros();\n\
         \x20   s[0:16] = m[0, 0] + tile<f32, 16>::zeros();\n\
         \x20   sync();\n\
         \x20   atomic_add(S[0:16], s[0:16]);\n\
         \x20   let l = tile<f32, 16, 16>::eye();\n\
         \x20   l.cholesky_(eps);\n\
         \x20   let r = tile<f32, 16, 16>::zeros();\n\
         \x20   r[:] = A[b, :, :];\n\
         \x20   l.solve_triangular_(r);\n\
         \x20   r[1, 2] = 3.0;\n\
         \x20   C[b, :, :] = r;\n\
         }\n",
    );
    // Loop-carried variables, step and bounds, conditions, grid and flops clauses.
    quiet(
        "kernel k(A: mut f32[N], n: i32, st: i32, w: f64) grid(cdiv(N, 16)) flops(w) {\n\
         \x20   let acc = 0.0;\n\
         \x20   let i = 0;\n\
         \x20   while i < n {\n\
         \x20       i += 1;\n\
         \x20   }\n\
         \x20   for j in 0..n step st {\n\
         \x20       if j > i {\n\
         \x20           acc += 1.0;\n\
         \x20       }\n\
         \x20   }\n\
         \x20   A[0] = acc;\n\
         }\n",
    );
}

#[test]
fn unreachable_code_is_a_warning_not_a_false_unused() {
    let (code, err) = check("kernel k(A: mut f32[N]) grid(N) {\n    let x = 1.0;\n    return;\n    A[0] = x;\n}\n");
    assert_eq!(code, 0);
    assert!(err.contains("W0104") && !err.contains("W0101") && !err.contains("W0102"), "{err}");
}

/// `tilec build FILE ARGS..`: the exit code and stderr.
fn build(src: &str, args: &[&str]) -> (i32, String) {
    cli(src, "build", args)
}

/// W0103 counts registers per lane for the target's lanes: a 64 x 64 f32 tile is 128 registers
/// per lane on a 32-lane warp (no warning from `check` or `build --lanes 32`) and 512 on the
/// 8-lane subgroups of lavapipe and Intel (`build --target spirv --lanes 8` warns).
#[test]
fn register_warning_counts_the_targets_lanes() {
    let src = "kernel big(A: f32[N, 64], Y: mut f32[N, 64]) grid(cdiv(N, 64)) {\n\
               \x20   let a = A[program_id(0) * 64:program_id(0) * 64 + 64, 0:64];\n\
               \x20   Y[0:64, 0:64] = a;\n\
               }\n";
    quiet(src);
    let (code, err) = build(src, &["--target", "spirv", "--lanes", "32"]);
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, err) = build(src, &["--target", "spirv", "--lanes", "8"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("W0103") && err.contains("512 registers per lane on an 8-lane GPU"),
        "expected W0103 at 8 lanes:\n{err}"
    );
    let (_, err) = build(src, &["--target", "spirv", "--lanes", "4"]);
    assert!(err.contains("1024 registers per lane on a 4-lane GPU"), "{err}");
}

/// A tile beyond the GPU targets' limits (a 32768-wide row) is a CPU kernel: `check` on the
/// CPU target accepts it without W0103, and a GPU build reports E0204 with both targets'
/// limits.
#[test]
fn cpu_only_tiles_get_no_register_warning_and_gpu_builds_refuse_them() {
    let src = "kernel row(X: f32[M, N], Y: mut f32[M, N]) grid(M) {\n\
               \x20   let x = X[program_id(0), 0:32768];\n\
               \x20   Y[program_id(0), 0:32768] = x * 2.0;\n\
               }\n";
    quiet(src);
    let (code, err) = build(src, &["--target", "spirv"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("E0204")
            && err.contains("from 1 to 4096, found 32768")
            && err.contains(
                "tiles on the vulkan target have at most 4096 elements per extent (the CPU target allows 32768)"
            ),
        "{err}"
    );
}
