//! Records the commit tilec is built from, for `tilec --version` and `tilec.__version__`:
//! `TILEC_COMMIT` from the environment when set (a build from a source archive), else `git
//! describe --always --abbrev=12` of the repository, else "unknown"; and `TILEC_BUILD_ID` for
//! the keys of the compile cache (`driver/cache.rs`): that commit, plus a digest of
//! `git diff HEAD` where the work tree has changes, so that a build of changed code generators
//! never reads code cached by a build of the same commit without the changes.

fn main() {
    println!("cargo:rerun-if-env-changed=TILEC_COMMIT");
    let git = std::path::Path::new("../.git");
    for f in ["HEAD", "refs", "packed-refs"] {
        if git.join(f).exists() {
            println!("cargo:rerun-if-changed=../.git/{f}");
        }
    }
    let commit = std::env::var("TILEC_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let out = std::process::Command::new("git").args(["describe", "--always", "--abbrev=12"]).output().ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    });
    let commit = commit.as_deref().unwrap_or("unknown");
    println!("cargo:rustc-env=TILEC_COMMIT={commit}");
    // Rerun when any source changes, for the digest of the changes.
    for dir in
        ["codegen-cpu", "codegen-llvm", "codegen-ptx", "codegen-spirv", "frontend", "midend", "runtime", "stdlib"]
    {
        println!("cargo:rerun-if-changed=../{dir}");
    }
    println!("cargo:rerun-if-changed=src");
    let diff = std::process::Command::new("git").args(["diff", "HEAD"]).output().ok();
    let build = match diff.filter(|d| d.status.success() && !d.stdout.is_empty()) {
        Some(d) => {
            // FNV-1a: a digest, not a checksum against tampering.
            let h = d
                .stdout
                .iter()
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3));
            format!("{commit}+changes-{h:016x}")
        }
        None => commit.to_string(),
    };
    println!("cargo:rustc-env=TILEC_BUILD_ID={build}");
}
