//! The `tilec` binary built with LLVM (`cargo test -p tilec --features llvm --test tiered`):
//! one-off runs with the default CPU code generator (tiered: Cranelift's code runs while LLVM
//! compiles in the background, `driver/tiered.rs`) exit cleanly, and `--version` names the
//! build.
#![cfg(feature = "llvm")]

/// A one-off `tilec run` with the default backend exits while LLVM still compiles in the
/// background (a debug build's LLVM compile of potrf takes longer than the run): every run
/// exits 0 with its whole output, and `--version` names the build.
#[test]
fn one_off_runs_exit_cleanly_while_llvm_compiles_in_the_background() {
    let bin = env!("CARGO_BIN_EXE_tilec");
    let dir = std::env::temp_dir().join(format!("tilec-oneoff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let spd = dir.join("spd.npy");
    let st = std::process::Command::new(bin)
        .args(["gen-spd", "--batch", "64", "--n", "92", "--dtype", "f32", "-o"])
        .arg(&spd)
        .status()
        .expect("gen-spd");
    assert!(st.success());
    let linalg = concat!(env!("CARGO_MANIFEST_DIR"), "/../stdlib/linalg.tile");
    let mut outputs = Vec::new();
    for i in 0..8 {
        let out = dir.join(format!("l{i}.npy"));
        let o = std::process::Command::new(bin)
            .arg("--cache-dir")
            .arg(dir.join(format!("cache{i}")))
            .args(["run", linalg, "--kernel", "potrf_batched", "--arg"])
            .arg(format!("A={}", spd.display()))
            .args(["--arg", "eps=1e-6", "--print", "A", "--out"])
            .arg(format!("A={}", out.display()))
            .output()
            .expect("tilec run");
        let stdout = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(o.status.success(), "run {i}: {:?}\n{stdout}\n{}", o.status, String::from_utf8_lossy(&o.stderr));
        assert!(stdout.starts_with("potrf_batched__f32: grid [64, 1, 1]"), "{stdout}");
        assert!(stdout.lines().count() > 1, "the printed array: {stdout}");
        outputs.push(std::fs::read(&out).expect("the factor"));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]), "every run writes the same factor");
    let v = std::process::Command::new(bin).arg("--version").output().expect("--version");
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(v.status.success(), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with(&format!("tilec {} (commit ", env!("CARGO_PKG_VERSION"))), "{text}");
    assert_eq!(lines[1], "CPU code generators: LLVM (default), Cranelift", "{text}");
    assert!(lines[2].starts_with("targets: cpu, vulkan, cuda; LLVM 16."), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
