//! The driver's session as its callers use it: `tilec build` writes exactly the artifacts of
//! `Session::build`; `Session::run` binds (converting scalars to their parameters' types)
//! and launches; each `Target` lowers to SIMT form for its own lanes.

use std::collections::HashMap;
use tilec::driver::{Build, BuildOptions, Emit, InstanceRequest, Session};
use tilec::{CpuBackend, SessionOptions, SourceSet, Target};
use tilec_midend::Const;
use tilec_runtime::{ArgValue, HostArray};

fn root() -> String {
    format!("{}/..", env!("CARGO_MANIFEST_DIR"))
}

fn session(path: &str) -> Session {
    let text = std::fs::read_to_string(format!("{}/{path}", root())).expect("the program");
    Session::new(SourceSet::with_stdlib(path, text), SessionOptions { verify: true, ..Default::default() })
}

fn build(s: &Session, target: Target, emit: Emit) -> Build {
    s.build(target, &emit, &BuildOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// `tilec build` writes the session's artifacts byte for byte: SPIR-V one file per instance,
/// the CPU object file (Cranelift), the C header, the Tile IR.
#[test]
fn tilec_build_writes_the_artifacts_of_the_session() {
    let dir = std::env::temp_dir().join(format!("tilec-driver-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a directory");
    let file = format!("{}/examples/gemm.tile", root());
    let s = session("examples/gemm.tile");
    let o = format!("{}/", dir.display());
    tilec_tests::cli_ok(&["build", &file, "--target", "spirv", "-o", &o]);
    let spirv = build(&s, Target::Vulkan { device: None }, Emit::Object);
    assert!(spirv.artifacts.len() > 1);
    for a in &spirv.artifacts {
        let symbol = a.symbol.as_deref().expect("one module per instance");
        let written = std::fs::read(dir.join(format!("{symbol}.spv"))).expect("written");
        assert_eq!(written, a.bytes, "{symbol}");
        assert_eq!(&a.bytes[..4], &0x0723_0203u32.to_le_bytes(), "the SPIR-V magic number");
    }
    let obj = dir.join("gemm.o");
    tilec_tests::cli_ok(&["build", &file, "-o", obj.to_str().expect("UTF-8")]);
    let cpu = build(&s, Target::CPU, Emit::Object);
    assert_eq!(std::fs::read(&obj).expect("written"), cpu.artifacts[0].bytes);
    let h = dir.join("gemm.h");
    tilec_tests::cli_ok(&["build", &file, "--emit", "header", "-o", h.to_str().expect("UTF-8")]);
    let header = build(&s, Target::CPU, Emit::Header { guard: "TILEC_GEMM_H".into() });
    assert_eq!(std::fs::read_to_string(&h).expect("written"), String::from_utf8_lossy(&header.artifacts[0].bytes));
    let tir = tilec_tests::cli_ok(&["build", &file, "--emit", "tir"]);
    assert_eq!(tir, String::from_utf8_lossy(&build(&s, Target::CPU, Emit::Tir).artifacts[0].bytes));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A build asks for what its target has: no SIMT form on the CPU (E0503), no header for a GPU
/// (E0503), CPU models only for LLVM (E0501: Cranelift named, as the default CPU code generator
/// is LLVM in builds that have it).
#[test]
fn builds_refuse_what_their_target_has_not() {
    let s = session("examples/gemm.tile");
    let code = |t: Target, e: Emit, o: BuildOptions| s.build(t, &e, &o).err().map(|e| e.code().to_string());
    assert_eq!(code(Target::CPU, Emit::Simt, BuildOptions::default()).as_deref(), Some("E0503"));
    let header = Emit::Header { guard: "G".into() };
    assert_eq!(code(Target::Vulkan { device: None }, header, BuildOptions::default()).as_deref(), Some("E0503"));
    let v3 = BuildOptions { cpu: Some("x86-64-v3".into()), ..BuildOptions::default() };
    assert_eq!(code(Target::Cpu(CpuBackend::Cranelift), Emit::Object, v3).as_deref(), Some("E0501"));
    let zen = BuildOptions { cpu: Some("zen9".into()), ..BuildOptions::default() };
    assert_eq!(code(Target::Cpu(CpuBackend::Llvm), Emit::Object, zen).as_deref(), Some("E0501"));
}

/// Each target lowers to SIMT form for its own lanes: the subgroup size asked for on Vulkan,
/// a 32-lane warp (or fewer lanes per program, several programs per warp) on CUDA; the CPU
/// has none. The code generators this build has are the ones its features say.
#[test]
fn targets_lower_for_their_own_lanes() {
    let s = session("stdlib/linalg.tile");
    let m = build(&s, Target::Vulkan { device: None }, Emit::Tir).module;
    let k = m.kernels.iter().find(|k| k.name == "potrf_batched").expect("potrf");
    for lanes in [8, 16, 32, 64] {
        assert_eq!(Target::Vulkan { device: None }.simt(&m, k, lanes).expect("lowers").lanes, lanes);
    }
    let warp = Target::Cuda { device: None }.simt(&m, k, 0).expect("lowers");
    assert!(warp.lanes <= 32 && 32 % warp.lanes == 0, "{}", warp.lanes);
    assert_eq!(Target::CPU.simt(&m, k, 32).err().map(|e| e.code().to_string()).as_deref(), Some("E0503"));
    use tilec::driver::CodeGenerator as G;
    assert!(G::Cranelift.available() && G::Spirv.available());
    assert_eq!(G::LlvmCpu.available(), cfg!(feature = "llvm"));
    assert_eq!(G::LlvmPtx.available(), cfg!(feature = "llvm"));
    assert_eq!(Target::Cuda { device: None }.code_generator(), G::LlvmPtx);
}

/// `Session::run` binds and launches: a scalar given as f64 is converted to the `f32`
/// parameter, and the factor matches a plain f64 Cholesky; an argument given twice (E0417)
/// and a scalar that does not fit its parameter's type (E0414, naming it) are refused.
#[test]
fn session_run_binds_and_launches() {
    let s = session("stdlib/linalg.tile");
    let (batch, n) = (3, 20);
    let spd = tilec_runtime::random_spd(batch, n, 7);
    let a = HostArray::from_f64_as(tilec_midend::Scalar::F32, &spd, &[batch as u64, n as u64, n as u64]).expect("A");
    let args = vec![
        ("A".to_string(), ArgValue::Array(a)),
        ("eps".to_string(), ArgValue::Scalar(Const::Float(1e-6, tilec_midend::Scalar::F64))),
    ];
    let arrays: HashMap<String, ArgValue> = args.iter().take(1).cloned().collect();
    let inst = s
        .instance("potrf_batched", Target::CPU, &InstanceRequest::of_args(&arrays, &HashMap::new()))
        .expect("an instance");
    let (launch, bound) = s.run(&inst, args.clone(), 2).expect("runs");
    assert_eq!(launch.times.len(), 2);
    assert_eq!(launch.values.grid[0], batch as i64);
    let got = bound.array("A").expect("A").to_f64_vec();
    let nn = n * n;
    for b in 0..batch {
        let want = tilec_tests::cholesky_f64(&tilec_tests::round_f32(&spd[b * nn..(b + 1) * nn]), n);
        let err = tilec_tests::max_rel_err_lower(&got[b * nn..(b + 1) * nn], &want, n);
        assert!(err < 1e-4, "matrix {b}: {err}");
    }
    let mut twice = args.clone();
    twice.push(("eps".to_string(), ArgValue::Scalar(Const::Float(0.0, tilec_midend::Scalar::F64))));
    assert_eq!(s.run(&inst, twice, 1).err().map(|e| e.code().to_string()).as_deref(), Some("E0417"));
    let mut huge = args;
    huge[1].1 = ArgValue::Scalar(Const::Float(1e300, tilec_midend::Scalar::F64));
    let e = s.run(&inst, huge, 1).err().expect("refused");
    assert_eq!(e.code(), "E0414");
    assert!(e.to_string().contains("eps"), "{e}");
}
