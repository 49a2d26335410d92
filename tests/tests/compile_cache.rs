//! The persistent compile cache of the LLVM CPU backend (`tools/src/driver/objects.rs`): a
//! second session (another process) links the object code the first one stored instead of
//! compiling it, with the same results; a changed entry is rebuilt, never run.
#![cfg(feature = "llvm")]

use std::collections::HashMap;
use tilec::driver::{InstanceRequest, Session};
use tilec::{CpuBackend, SessionOptions, SourceSet, Target};
use tilec_midend::Scalar;
use tilec_runtime::{ArgValue, HostArray};

const LLVM: Target = Target::Cpu(CpuBackend::Llvm);

/// Factors `batch` random SPD matrices of order `n` with the stdlib's potrf in a new session
/// with cache folder `dir`; returns the largest error against a plain f64 Cholesky.
fn potrf(dir: &std::path::Path, batch: usize, n: usize) -> f64 {
    let text = tilec::STDLIB.iter().find(|(m, _)| *m == "linalg").expect("linalg").1;
    let opts = SessionOptions { cache_dir: Some(dir.to_path_buf()), ..Default::default() };
    let s = Session::new(SourceSet::with_stdlib("stdlib/linalg.tile", text), opts);
    let spd = tilec_runtime::random_spd(batch, n, 11);
    let a = HostArray::from_f64_as(Scalar::F64, &spd, &[batch as u64, n as u64, n as u64]).expect("A");
    let arrays = HashMap::from([("A".to_string(), ArgValue::Array(a))]);
    let inst =
        s.instance("potrf_batched", LLVM, &InstanceRequest::of_args(&arrays, &HashMap::new())).expect("instance");
    let mut args: Vec<(String, ArgValue)> = arrays.into_iter().collect();
    args.push(("eps".into(), ArgValue::Scalar(tilec_midend::Const::Float(0.0, Scalar::F64))));
    let (_, bound) = s.run(&inst, args, 1).expect("runs");
    let got = bound.array("A").expect("A").to_f64_vec();
    let nn = n * n;
    (0..batch)
        .map(|b| {
            let want = tilec_tests::cholesky_f64(&spd[b * nn..(b + 1) * nn], n);
            tilec_tests::max_rel_err_lower(&got[b * nn..(b + 1) * nn], &want, n)
        })
        .fold(0.0, f64::max)
}

fn objects(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> =
        std::fs::read_dir(dir.join("obj")).map_or(Vec::new(), |d| d.flatten().map(|e| e.path()).collect());
    v.sort();
    v
}

#[test]
fn a_second_session_links_the_cached_object_and_a_changed_one_is_rebuilt() {
    let dir = std::env::temp_dir().join(format!("tilec-objects-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(potrf(&dir, 3, 37) < 1e-12);
    let stored = objects(&dir);
    assert_eq!(stored.len(), 1, "one object for the one instance");
    let bytes = std::fs::read(&stored[0]).expect("the entry");
    assert!(bytes.starts_with(b"tilec object\n"));

    // A hit: the entry is linked, not written again, and gives the same factors.
    let before = std::fs::metadata(&stored[0]).and_then(|m| m.modified()).expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(potrf(&dir, 3, 37) < 1e-12);
    assert_eq!(std::fs::metadata(&stored[0]).and_then(|m| m.modified()).expect("mtime"), before);

    // A changed byte in the code: refused by its digest, compiled again and stored whole.
    let mut changed = bytes.clone();
    let at = changed.len() - 100;
    changed[at] ^= 0xff;
    std::fs::write(&stored[0], &changed).expect("write");
    assert!(potrf(&dir, 3, 37) < 1e-12);
    assert_eq!(std::fs::read(&stored[0]).expect("the entry"), bytes);

    // Cut short: the same.
    std::fs::write(&stored[0], &bytes[..bytes.len() / 2]).expect("write");
    assert!(potrf(&dir, 3, 37) < 1e-12);
    assert_eq!(std::fs::read(&stored[0]).expect("the entry"), bytes);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The stdlib's potrf on `batch` random SPD matrices of order 40 (f32) in session `s`: the
/// launch (`repeat` runs) and the factor's bits.
fn potrf_in(s: &Session, target: Target, repeat: u32) -> (tilec::driver::Launch, Vec<u32>) {
    let spd = tilec_runtime::random_spd(5, 40, 3);
    let a = HostArray::from_f64_as(Scalar::F32, &spd, &[5, 40, 40]).expect("A");
    let arrays = HashMap::from([("A".to_string(), ArgValue::Array(a))]);
    let inst =
        s.instance("potrf_batched", target, &InstanceRequest::of_args(&arrays, &HashMap::new())).expect("instance");
    let mut args: Vec<(String, ArgValue)> = arrays.into_iter().collect();
    args.push(("eps".into(), ArgValue::Scalar(tilec_midend::Const::Float(1e-6, Scalar::F32))));
    let (launch, bound) = s.run(&inst, args, repeat).expect("runs");
    let bits = bound.array("A").expect("A").to_f64_vec().iter().map(|x| (*x as f32).to_bits()).collect();
    (launch, bits)
}

fn stdlib_session(opts: SessionOptions) -> Session {
    let text = tilec::STDLIB.iter().find(|(m, _)| *m == "linalg").expect("linalg").1;
    Session::new(SourceSet::with_stdlib("stdlib/linalg.tile", text), opts)
}

/// Tiered CPU code (`driver/tiered.rs`): the first launches run Cranelift's code, the second
/// starts LLVM's compile in the background and later launches run LLVM's code once it is
/// there (and from the cache in a new session); a timed launch runs LLVM's; every launch gives
/// the bits of Cranelift and of LLVM alone.
#[test]
fn tiered_code_runs_cranelift_first_then_llvm_with_the_same_bits() {
    use tilec::driver::CodeGenerator;
    let dir = std::env::temp_dir().join(format!("tilec-tiered-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (_, cranelift) = potrf_in(&stdlib_session(SessionOptions::default()), Target::Cpu(CpuBackend::Cranelift), 1);
    let (alone, llvm) = potrf_in(&stdlib_session(SessionOptions::default()), LLVM, 1);
    assert_eq!(alone.code, CodeGenerator::LlvmCpu);
    assert_eq!(cranelift, llvm, "the two CPU code generators give the same bits");
    let tiered = SessionOptions { cache_dir: Some(dir.clone()), tiered: true, ..Default::default() };

    // First launch: Cranelift's code; the second starts the background compile, and the
    // launches switch to LLVM's code when it is done.
    let s = stdlib_session(tiered.clone());
    let (first, bits) = potrf_in(&s, LLVM, 1);
    assert_eq!((first.code, &bits), (CodeGenerator::Cranelift, &llvm));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    let mut codes = Vec::new();
    loop {
        let (launch, bits) = potrf_in(&s, LLVM, 1);
        assert_eq!(bits, llvm, "launch {} ({:?})", codes.len() + 2, launch.code);
        codes.push(launch.code);
        if launch.code == CodeGenerator::LlvmCpu || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(codes.last(), Some(&CodeGenerator::LlvmCpu), "LLVM's code never came: {} launches", codes.len());
    assert_eq!(codes[0], CodeGenerator::Cranelift, "the second launch started the compile");
    drop(s);
    // A new session (another process) finds the object in the cache: LLVM's code at once.
    let (cached, bits) = potrf_in(&stdlib_session(tiered), LLVM, 1);
    assert_eq!((cached.code, &bits), (CodeGenerator::LlvmCpu, &llvm));
    // A timed launch with nothing cached compiles LLVM's code before it runs.
    let _ = std::fs::remove_dir_all(&dir);
    let fresh = SessionOptions { cache_dir: Some(dir.clone()), tiered: true, ..Default::default() };
    let (timed, bits) = potrf_in(&stdlib_session(fresh), LLVM, 3);
    assert_eq!((timed.code, timed.times.len(), &bits), (CodeGenerator::LlvmCpu, 3, &llvm));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The GPU code cache on Vulkan (lavapipe here; skipped without a device unless
/// `TILEC_REQUIRE_VULKAN=1`): a second session launches the SPIR-V the first stored, with the
/// same results, without writing it again.
#[test]
fn a_second_session_launches_the_cached_spirv() {
    let Ok(dev) = tilec_runtime::VulkanDevice::open(None) else {
        assert!(std::env::var("TILEC_REQUIRE_VULKAN").is_err(), "no Vulkan device");
        return;
    };
    drop(dev);
    let dir = std::env::temp_dir().join(format!("tilec-spv-launch-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let vulkan = Target::Vulkan { device: None };
    let opts = || SessionOptions { cache_dir: Some(dir.clone()), ..Default::default() };
    let (_, first) = potrf_in(&stdlib_session(opts()), vulkan, 1);
    let files: Vec<_> = std::fs::read_dir(dir.join("spv")).expect("spv/").flatten().map(|e| e.path()).collect();
    assert_eq!(files.len(), 1, "one SPIR-V module for the one instance");
    let when = std::fs::metadata(&files[0]).and_then(|m| m.modified()).expect("mtime");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (_, second) = potrf_in(&stdlib_session(opts()), vulkan, 1);
    assert_eq!(second, first);
    assert_eq!(std::fs::metadata(&files[0]).and_then(|m| m.modified()).expect("mtime"), when, "read, not written");
    let _ = std::fs::remove_dir_all(&dir);
}
