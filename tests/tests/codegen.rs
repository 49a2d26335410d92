//! Codegen snapshots: the Tile IR after all passes and the CLIF of every kernel instance of
//! the standard library and of every example (`tests/tests/snapshots/`), and an end-to-end
//! check of the object file and its C ABI with the system C compiler.

mod programs;

use programs::programs;
use std::collections::HashMap;
use tilec::{compile, CompileOptions, SourceSet};
use tilec_frontend::Instances;

fn compiled(src: &SourceSet) -> tilec_midend::Module {
    let opts = CompileOptions { verify: true, ..Default::default() };
    match compile(src, &Instances::All { fixed: HashMap::new() }, &opts) {
        Ok(c) => c.module,
        Err(d) => panic!("{} does not compile: {d:?}", src.main_name),
    }
}

#[test]
fn tile_ir_snapshots() {
    for (key, src) in programs() {
        let m = compiled(&src);
        insta::assert_snapshot!(format!("tir_{key}"), tilec_midend::print::print_module(&m));
    }
}

#[test]
fn clif_snapshots() {
    for (key, src) in programs() {
        let m = compiled(&src);
        for k in &m.kernels {
            let clif = tilec_codegen_cpu::emit_clif(&m, k).expect("clif");
            insta::assert_snapshot!(format!("clif_{key}_{}", k.symbol), clif);
        }
    }
}

#[test]
fn every_program_passes_the_verifier_after_each_pass() {
    for (_, src) in programs() {
        let m = compiled(&src);
        tilec_midend::verify::verify(&m).expect("verified");
        assert!(!m.kernels.is_empty(), "{} has kernels", src.main_name);
    }
}

/// The text form of the Tile IR parses back (`midend/src/parse.rs`): the module of every
/// program after all passes, and each kernel's SIMT form at 8 lanes, print the same after a
/// round trip, and the parsed module passes the verifier.
#[test]
fn tile_ir_text_round_trips() {
    use tilec_midend::{parse, print};
    for (_, src) in programs() {
        let m = compiled(&src);
        let text = print::print_module(&m);
        let back = parse::parse_module(&text).unwrap_or_else(|e| panic!("{}: {e}", src.main_name));
        assert_eq!(print::print_module(&back), text, "{}", src.main_name);
        tilec_midend::verify::verify(&back).unwrap_or_else(|e| panic!("{}: {e:?}", src.main_name));
        for k in &m.kernels {
            let simt = tilec_midend::simt::lower_kernel(&m, k, 8).expect("lowers");
            let text = print::print_function(&simt.func);
            let back = parse::parse_function(&text).unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
            assert_eq!(print::print_function(&back), text, "{}", k.symbol);
        }
    }
}

/// The LLVM CPU backend's object code of every program, built for a fixed CPU model
/// (`x86-64-v3`, so that it does not depend on the machine running the test): its length and
/// FNV-1a digest, so that any change of the bytes shows in review. A refactoring of the code
/// generators (codegen-llvm) must leave them as they are.
#[cfg(all(feature = "llvm", target_arch = "x86_64"))]
#[test]
fn llvm_cpu_object_code_snapshots() {
    for (key, src) in programs() {
        let m = compiled(&src);
        let bytes = tilec_codegen_cpu::compile_object_for(&m, tilec::CpuBackend::Llvm, Some("x86-64-v3"))
            .unwrap_or_else(|e| panic!("{}: {e}", src.main_name));
        let digest = tilec::driver::cache::digest(&bytes);
        let symbols: Vec<&str> = m.kernels.iter().map(|k| k.symbol.as_str()).collect();
        let text = format!("{} bytes, FNV-1a {digest:016x}\n{}\n", bytes.len(), symbols.join("\n"));
        insta::assert_snapshot!(format!("llvm_obj_{key}"), text);
    }
}

/// `tilec build --target cpu` writes an object and `--emit header` its C header, whose
/// `potrf_batched__f64` follows the C ABI documented in codegen-cpu: a C program includes the
/// header (`-Wall -Werror`), links the object and factors a 3x3 matrix.
#[test]
fn object_file_links_with_c_and_factors_a_matrix_with_its_grid_function() {
    object_file_links_with_c("cranelift");
}

/// The same object file from the LLVM backend (`--backend llvm`).
#[cfg(feature = "llvm")]
#[test]
fn llvm_object_file_links_with_c_and_factors_a_matrix_with_its_grid_function() {
    object_file_links_with_c("llvm");
}

/// Without the `ptx` feature, `--backend llvm` says how to get it (E0505, exit 2).
#[cfg(not(feature = "llvm"))]
#[test]
fn llvm_backend_without_the_feature_says_how_to_get_it() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (code, _, err) =
        tilec(&["build", &format!("{root}/examples/gemm.tile"), "--emit", "llvm", "--backend", "llvm"]);
    assert_eq!(code, 2);
    assert!(err.contains("E0505") && err.contains("--features llvm") && err.contains("llvm-16-dev"), "{err}");
}

/// `--emit llvm` prints the optimised LLVM IR: the kernel's function, in vector code.
#[cfg(feature = "llvm")]
#[test]
fn emit_llvm_prints_vector_ir_of_each_instance() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (code, ir, err) =
        tilec(&["build", &format!("{root}/examples/gemm.tile"), "--emit", "llvm", "--backend", "llvm"]);
    assert_eq!(code, 0, "{err}");
    assert!(ir.contains("define void @matmul16__f32("), "{}", &ir[..ir.len().min(2000)]);
    assert!(ir.contains("x float>"), "no f32 vectors in the IR");
}

/// With the LLVM backend, tile loads indexed by `program_id(0)` in a kernel that reads no other
/// grid axis prefetch the same tile of the next program (`potrf_batched`, one program per
/// matrix); a 2-D grid (`gemm`) has no such order, and no prefetches.
#[cfg(feature = "llvm")]
#[test]
fn batched_loads_prefetch_the_next_program() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let (code, ir, err) =
        tilec(&["build", &format!("{root}/stdlib/linalg.tile"), "--emit", "llvm", "--backend", "llvm"]);
    assert_eq!(code, 0, "{err}");
    let body = |name: &str| -> String {
        let start = ir.find(&format!("define void @{name}(")).unwrap_or_else(|| panic!("no {name}"));
        let len = ir[start..].find("\n}\n").expect("end of function");
        ir[start..start + len].to_string()
    };
    assert!(body("potrf_batched__f32").contains("@llvm.prefetch"));
    assert!(body("trsm_right_lower_t_batched__f64").contains("@llvm.prefetch"));
    assert!(!body("gemm__f32__32__32__32").contains("@llvm.prefetch"));
    assert!(!body("gemm_batched__f32__32__32__32").contains("@llvm.prefetch"));
}

/// `--emit tir --backend llvm` and `--dump-after block-rank1 --backend llvm` show the module the
/// LLVM backend compiles: `examples/cholesky.tile`'s two rank-1 loops as blocked tile products
/// (with the rank-1 loops for the rest), as does `--emit tir` with the default backend (LLVM in
/// this build); `--backend cranelift` shows the rank-1 loops alone, and `--dump-after
/// block-rank1` with it names the passes there are (E0501).
#[cfg(feature = "llvm")]
#[test]
fn emit_tir_with_the_llvm_backend_shows_its_passes() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let file = format!("{root}/examples/cholesky.tile");
    let base = ["build", file.as_str(), "--generic", "T=f32", "--emit", "tir"];
    // Counted before the `residual` kernel, which has a product of its own.
    let count = |extra: &[&str], what: &str| {
        let (code, ir, err) = tilec(&[&base[..], extra].concat());
        assert_eq!(code, 0, "{err}");
        ir[..ir.find("kernel @residual").unwrap_or(ir.len())].matches(what).count()
    };
    assert_eq!(count(&["--backend", "cranelift"], "matmul_acc"), 0);
    // Two loops in the kernel, one update in the (inlined, unused) `fn` instance.
    assert_eq!(count(&["--backend", "cranelift"], "rank1 -1.0"), 3);
    assert_eq!(count(&[], "matmul_acc"), 2);
    assert_eq!(count(&["--backend", "llvm"], "matmul_acc"), 2);
    assert_eq!(count(&["--backend", "llvm"], "rank1 -1.0"), 3);
    let (code, ir, err) = tilec(&[
        "build",
        &file,
        "--generic",
        "T=f32",
        "--dump-after",
        "block-rank1",
        "--backend",
        "llvm",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(ir[..ir.find("kernel @residual").unwrap_or(ir.len())].matches("matmul_acc").count(), 2, "{ir}");
    let (code, _, err) = tilec(&["build", &file, "--dump-after", "block-rank1", "--backend", "cranelift"]);
    assert_eq!(code, 2);
    assert!(err.contains("E0501") && err.contains("with `--backend llvm`: block-rank1"), "{err}");
}

/// Runs the CLI in-process; returns the exit code, stdout and stderr.
fn tilec(args: &[&str]) -> (i32, String, String) {
    let argv: Vec<String> = std::iter::once("tilec").chain(args.iter().copied()).map(String::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    (code, String::from_utf8(out).expect("UTF-8"), String::from_utf8_lossy(&err).into_owned())
}

fn object_file_links_with_c(backend: &str) {
    let dir = std::env::temp_dir().join(format!("tilec-obj-{}-{backend}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let obj = dir.join("linalg.o");
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let linalg = format!("{root}/stdlib/linalg.tile");
    let args =
        ["build", &linalg, "--target", "cpu", "--backend", backend, "--generic", "T=f64", "-o", obj.to_str().unwrap()];
    let (code, _, err) = tilec(&args);
    assert_eq!(code, 0, "{err}");
    // The declarations come from `--emit header` (with the argument counts it defines).
    let h = dir.join("linalg.h");
    let hargs =
        ["build", &linalg, "--target", "cpu", "--emit", "header", "--generic", "T=f64", "-o", h.to_str().unwrap()];
    let (code, _, err) = tilec(&hargs);
    assert_eq!(code, 0, "{err}");
    let header = std::fs::read_to_string(&h).unwrap();
    assert!(header.contains("#define POTRF_BATCHED__F64_ARGS 5"), "{header}");
    assert!(header.contains("args[4]: eps, a double in the low bytes"), "{header}");
    let c = dir.join("main.c");
    std::fs::write(
        &c,
        r#"#include <stdint.h>
#include <stdio.h>
#include "linalg.h"
int main(void) {
    double a[9] = {4, 2, 2, 2, 5, 3, 2, 3, 6};
    union { double d; uint64_t u; } eps = { 1e-12 };
    uint64_t args[POTRF_BATCHED__F64_ARGS] = { (uint64_t)(uintptr_t)a, 1, 3, 3, eps.u };
    int64_t grid[3];
    double flops;
    potrf_batched__f64__grid(args, grid, &flops);
    int64_t ids[6] = { 0, 0, 0, grid[0], grid[1], grid[2] };
    for (ids[0] = 0; ids[0] < grid[0]; ids[0]++) potrf_batched__f64(args, ids);
    for (int i = 0; i < 9; i++) printf("%.12f\n", a[i]);
    printf("%lld %lld %lld %.1f\n", (long long)grid[0], (long long)grid[1], (long long)grid[2], flops);
    /* gemm's grid for A: 100x7, B: 7x65 (C: 100x65): cdiv(100, 32) x cdiv(65, 32). */
    uint64_t gargs[12] = { 0, 100, 7, 0, 7, 65, 0, 100, 65, 0, 0 };
    gemm__f64__32__32__32__grid(gargs, grid, &flops);
    printf("%lld %lld %lld %.1f\n", (long long)grid[0], (long long)grid[1], (long long)grid[2], flops);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("main");
    let status = std::process::Command::new("cc")
        .args(["-Wall", "-Werror", c.to_str().unwrap(), obj.to_str().unwrap(), "-lm", "-o", exe.to_str().unwrap()])
        .status()
        .expect("a C compiler `cc` is needed for this test");
    assert!(status.success());
    let printed = std::process::Command::new(&exe).output().unwrap();
    let text = String::from_utf8(printed.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let got: Vec<f64> = lines[..9].iter().map(|l| l.parse().unwrap()).collect();
    let want = tilec_tests::cholesky_f64(&[4.0, 2.0, 2.0, 2.0, 5.0, 3.0, 2.0, 3.0, 6.0], 3);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
    // The launch functions: potrf's grid(B) and flops B N^3 / 3; gemm's 2 M N K.
    assert_eq!(lines[9], "1 1 1 9.0", "potrf_batched__f64__grid");
    assert_eq!(lines[10], format!("4 3 1 {:.1}", 2.0 * 100.0 * 65.0 * 7.0), "gemm__f64__32__32__32__grid");
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec build --target cpu --report` compiles every instance, writes no file, and prints one
/// line per instance (its compile time with `--backend cranelift`) and the front end's time, in
/// that order.
#[test]
fn cpu_report_lists_every_instance_with_its_compile_time() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let file = format!("{root}/stdlib/linalg.tile");
    let argv: Vec<String> = ["tilec", "build", &file, "--generic", "T=f32", "--report", "--backend", "cranelift"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(tilec::cli::main_with(argv, &mut out, &mut err, false), 0, "{}", String::from_utf8_lossy(&err));
    let out = String::from_utf8(out).expect("UTF-8");
    let lines: Vec<&str> = out.lines().collect();
    let (last, per_instance) = lines.split_last().expect("output");
    let names: Vec<&str> = per_instance
        .iter()
        .map(|l| {
            let (name, rest) = l.split_once(": ").unwrap_or_else(|| panic!("bad line {l:?}"));
            let ms = rest.strip_suffix(" ms (Cranelift)").unwrap_or_else(|| panic!("bad line {l:?}"));
            assert!(ms.parse::<f64>().is_ok_and(|t| t > 0.0), "bad time in {l:?}");
            name
        })
        .collect();
    for want in ["potrf_batched__f32", "trsm_right_lower_t_batched__f32", "potrs_batched__f32", "gemm__f32__32__32__32"]
    {
        assert!(names.contains(&want), "{want} missing from:\n{out}");
    }
    assert!(names.iter().all(|n| n.contains("__f32")), "{out}");
    let n = per_instance.len();
    assert!(last.starts_with("front end and passes: ") && last.ends_with(&format!(" ms for {n} instances")), "{last}");
    assert!(!std::path::Path::new(&format!("{root}/stdlib/linalg.o")).exists(), "an object file was written");
}

/// Every op's location names its own source (`Loc::file`, `Module::sources`): the ops of an
/// imported stdlib kernel point into `linalg`, those of the main file's kernel into the main
/// file, at the text they came from.
#[test]
fn op_locations_name_their_source() {
    let src = SourceSet::with_stdlib(
        "main.tile",
        "import linalg;\n\nkernel k(O: mut f32[4]) grid(1) {\n    O[0] = 2.0;\n}\n",
    );
    let m = compiled(&src);
    let kernel = |name: &str| m.kernels.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("{name}"));
    let (user, potrf) = (kernel("k"), kernel("potrf_batched"));
    assert_eq!(m.source_of(user.loc), None);
    assert_eq!(m.source_of(potrf.loc), Some("linalg".to_string()));
    let ops = |f: &tilec_midend::Function| -> Vec<tilec_midend::Loc> {
        f.body.ops.iter().map(|o| o.loc).filter(|l| l.end > l.start).collect()
    };
    let store = ops(&m.funcs[user.body]).into_iter().next_back().expect("a located op");
    assert_eq!(m.source_of(store), None);
    for l in ops(&m.funcs[potrf.body]) {
        assert_eq!(m.source_of(l), Some("linalg".to_string()));
        let (_, text) = src.text_of(m.source_of(l).as_deref());
        assert!(l.end as usize <= text.len());
    }
}

/// `-o -` writes to standard output, as `cc` and most tools do, and never a file named `-`.
#[test]
fn dash_output_is_standard_output() {
    let root = format!("{}/..", env!("CARGO_MANIFEST_DIR"));
    let file = format!("{root}/examples/cholesky.tile");
    let _ = std::fs::remove_file("-");
    let (code, ir, err) = tilec(&["build", &file, "--generic", "T=f32", "--emit", "tir", "-o", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(ir.contains("kernel @cholesky__f32"), "{ir}");
    assert!(!std::path::Path::new("-").exists(), "a file named `-` was written");
}
