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
