//! PTX (built with `--features ptx`): every kernel instance of the stdlib and the examples
//! assembles with ptxas for sm_80 and sm_90, with no spills (up to 256 bytes for the examples'
//! f64 instances); the PTX of the f32 instances for sm_80 is snapshotted.
#![cfg(feature = "ptx")]

// Only the cases' sources are used here (the run tests use the rest).
#[allow(dead_code)]
mod cases;
mod programs;

use programs::programs;
use std::collections::HashMap;
use tilec::{compile, CompileOptions};
use tilec_frontend::Instances;
use tilec_midend::simt::lower_kernel;

#[test]
fn every_kernel_assembles_with_ptxas_for_sm80_and_sm90() {
    let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs nvidia-cuda-nvcc-cu12)");
    for (key, src) in programs() {
        let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).unwrap().module;
        for k in &m.kernels {
            let simt = lower_kernel(&m, k, 32).unwrap();
            for arch in ["sm_80", "sm_90"] {
                let p = tilec_codegen_ptx::compile(&simt, arch).unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
                let r = tilec::ptxas(&ptxas, &p.text, arch)
                    .unwrap_or_else(|e| panic!("ptxas rejects {} for {arch}:\n{e}", k.symbol));
                assert!(r.registers > 0, "{}: {r:?}", k.symbol);
                // Every stdlib kernel and every f32 instance keeps its values in registers. The
                // examples' f64 instances may spill a little: softmax64__f64 holds a 64-wide
                // f64 row per lane (128 registers) while it expands 64 f64 `exp`s into
                // arithmetic (ptxas 12.x: 8 bytes at sm_80, 156 at sm_90).
                let budget = if key.starts_with("examples_") && k.symbol.contains("__f64") { 256 } else { 0 };
                assert!(
                    r.spill_stores <= budget && r.spill_loads <= budget,
                    "{} spills on {arch} (at most {budget} bytes allowed): {r:?}",
                    k.symbol
                );
            }
        }
    }
}

#[test]
fn ptx_snapshots() {
    for (key, src) in programs() {
        let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).unwrap().module;
        for k in m.kernels.iter().filter(|k| k.symbol.contains("__f32")) {
            let simt = lower_kernel(&m, k, 32).unwrap();
            let p = tilec_codegen_ptx::compile(&simt, "sm_80").unwrap();
            insta::assert_snapshot!(format!("ptx_{key}_{}", k.symbol), p.text);
        }
    }
}

/// `build --target ptx --report` points each kernel at its own line, also when another
/// kernel's name starts with it (`foo_bar` before `foo`).
#[test]
fn ptx_report_names_each_kernel_s_own_line() {
    let dir = std::env::temp_dir().join(format!("tilec-ptx-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two.tile");
    std::fs::write(
        &file,
        "kernel foo_bar(O: mut f32[4]) grid(1) {\n    O[0] = 1.0;\n}\n\nkernel foo(O: mut f32[4]) grid(1) {\n    O[1] = 2.0;\n}\n",
    )
    .unwrap();
    let argv: Vec<String> = ["tilec", "build", file.to_str().unwrap(), "--target", "ptx", "--report"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    assert_eq!(tilec::cli::main_with(argv, &mut out, &mut err, false), 0, "{}", String::from_utf8_lossy(&err));
    let out = String::from_utf8(out).unwrap();
    assert!(out.lines().any(|l| l.contains(":1: kernel foo_bar ")), "{out}");
    assert!(out.lines().any(|l| l.contains(":5: kernel foo ")), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The run-test cases that are not examples (masks, `where`, `iota`, argmax, masked stores,
/// math functions, ranges of tiles, broadcasts, `lu_`) assemble too.
#[test]
fn the_run_test_cases_assemble_with_ptxas() {
    let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs nvidia-cuda-nvcc-cu12)");
    let cases = [
        cases::masks(),
        cases::long_vectors(),
        cases::dyn_ranges(),
        cases::transposes(),
        cases::math(),
        cases::fn_results(),
        cases::shapes(),
        cases::ranges(),
        cases::broadcasts(),
        cases::lu(),
    ];
    for c in cases.into_iter().flatten() {
        let m = compile(&c.src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).unwrap().module;
        for k in &m.kernels {
            let simt = lower_kernel(&m, k, 32).unwrap();
            let p = tilec_codegen_ptx::compile(&simt, "sm_80").unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
            tilec::ptxas(&ptxas, &p.text, "sm_80").unwrap_or_else(|e| panic!("ptxas rejects {}:\n{e}", k.symbol));
        }
    }
}
