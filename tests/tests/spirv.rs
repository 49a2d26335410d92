//! SPIR-V: every kernel instance of the stdlib and the examples, lowered to SIMT form for 4 to
//! 64 lanes and compiled, passes `spirv-val --target-env vulkan1.1`; the disassembly of the
//! f32 instances at 32 lanes is snapshotted.

mod programs;

use programs::programs;
use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use tilec::{compile, CompileOptions, SourceSet};
use tilec_frontend::Instances;
use tilec_midend::simt::lower_kernel;

fn spirv_val(words: &[u32]) -> Result<(), String> {
    let mut child = Command::new("spirv-val")
        .args(["--target-env", "vulkan1.1", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spirv-val not found ({e}): run tools/install-deps.sh (Debian: spirv-tools)"))?;
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let out = child.wait_with_output().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
    }
}

#[test]
fn every_kernel_passes_spirv_val_at_every_subgroup_size() {
    for (_, src) in programs() {
        let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default())
            .expect("compiles")
            .module;
        for k in &m.kernels {
            for lanes in [4, 8, 16, 32, 64] {
                let simt = lower_kernel(&m, k, lanes).expect("SIMT lowering");
                let spv = tilec_codegen_spirv::compile(&simt)
                    .unwrap_or_else(|e| panic!("{} at {lanes} lanes: {e}", k.symbol));
                assert_eq!(spv.lanes, lanes);
                if let Err(e) = spirv_val(&spv.words) {
                    panic!("{} at {lanes} lanes fails spirv-val:\n{e}", k.symbol);
                }
            }
        }
    }
}

#[test]
fn spirv_disassembly_snapshots() {
    use rspirv::binary::Disassemble;
    for (key, src) in programs() {
        let m = compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default())
            .expect("compiles")
            .module;
        for k in m.kernels.iter().filter(|k| k.symbol.contains("__f32")) {
            let simt = lower_kernel(&m, k, 32).expect("SIMT lowering");
            let spv = tilec_codegen_spirv::compile(&simt).expect("SPIR-V");
            let text = rspirv::dr::load_words(&spv.words).expect("loads").disassemble();
            insta::assert_snapshot!(format!("spirv_{key}_{}", k.symbol), text);
        }
    }
}

/// Arrays larger than a device's storage-buffer range are bound as descriptor arrays: the
/// chunked form validates too.
#[test]
fn chunked_arrays_pass_spirv_val() {
    use tilec_codegen_spirv::{compile_with, Chunks, SpirvOptions};
    let src = SourceSet::with_stdlib("stdlib/linalg.tile", include_str!("../../stdlib/linalg.tile"));
    let m =
        compile(&src, &Instances::All { fixed: HashMap::new() }, &CompileOptions::default()).expect("compiles").module;
    for name in ["potrf_batched__f32", "gemm__f64__32__32__32"] {
        let k = m.kernels.iter().find(|k| k.symbol == name).expect("kernel");
        let simt = lower_kernel(&m, k, 8).expect("SIMT lowering");
        let opts = SpirvOptions {
            chunks: vec![Some(Chunks { log2: 20, count: 3 }), None, Some(Chunks { log2: 12, count: 5 })],
        };
        let spv = compile_with(&simt, &opts).expect("SPIR-V");
        if let Err(e) = spirv_val(&spv.words) {
            panic!("{name} with chunked arrays fails spirv-val:\n{e}");
        }
    }
}

/// Both GPU backends run the SIMT verifier first: a SIMT form with an op it must not have (a
/// float `min`, which the lowering writes out) is refused with that op's source location.
#[test]
fn gpu_backends_verify_the_simt_form_and_locate_the_bad_op() {
    let src = "kernel k(X: f32[4], O: mut f32[4]) grid(1) {\n    O[0] = X[0] + X[1];\n}\n";
    let set = SourceSet::with_stdlib("k.tile", src);
    let inst = Instances::One { kernel: "k".into(), generics: HashMap::new() };
    let m = compile(&set, &inst, &CompileOptions::default()).expect("compiles").module;
    let mut simt = lower_kernel(&m, &m.kernels[0], 32).expect("lowers");
    assert!(tilec_midend::verify::verify_simt(&simt).is_ok());
    let add = simt.func.body.ops.iter_mut().find(|o| o.kind == tilec_midend::OpKind::Bin(tilec_midend::BinOp::Add));
    let add = add.expect("the add");
    add.kind = tilec_midend::OpKind::Bin(tilec_midend::BinOp::Min);
    let at = add.loc;
    assert_eq!(&src[at.start as usize..at.end as usize], "X[0] + X[1]");
    let e = tilec_codegen_spirv::compile(&simt).expect_err("SPIR-V of an invalid SIMT form");
    assert_eq!(e.loc, Some(at), "{e}");
    assert!(e.message.contains("written out"), "{e}");
    let e = tilec_codegen_ptx::compile(&simt, "sm_80").expect_err("PTX of an invalid SIMT form");
    assert_eq!(e.loc, Some(at), "{e}");
}
