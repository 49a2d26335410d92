//! PTX (built with `--features ptx`): every kernel instance of the stdlib and the examples
//! assembles with ptxas for sm_80 and sm_90, with no spills; the PTX of the f32 instances for
//! sm_80 is snapshotted.
#![cfg(feature = "ptx")]

mod programs;

use programs::programs;
use std::collections::HashMap;
use tilec::{compile, CompileOptions};
use tilec_frontend::Instances;
use tilec_midend::simt::lower_kernel;

#[test]
fn every_kernel_assembles_with_ptxas_for_sm80_and_sm90() {
    let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs nvidia-cuda-nvcc-cu12)");
    for (_, src) in programs() {
        let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).unwrap().module;
        for k in &m.kernels {
            let simt = lower_kernel(&m, k, 32).unwrap();
            for arch in ["sm_80", "sm_90"] {
                let p = tilec_codegen_ptx::compile(&simt, arch).unwrap_or_else(|e| panic!("{}: {e}", k.symbol));
                let r = tilec::ptxas(&ptxas, &p.text, arch)
                    .unwrap_or_else(|e| panic!("ptxas rejects {} for {arch}:\n{e}", k.symbol));
                assert!(r.registers > 0, "{}: {r:?}", k.symbol);
                // Every kernel keeps its tiles in registers, f32 and f64 alike.
                assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{} spills on {arch}: {r:?}", k.symbol);
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
