//! Records the commit tilec is built from, for `tilec --version` and `tilec.__version__`:
//! `TILEC_COMMIT` from the environment when set (a build from a source archive), else `git
//! describe --always --abbrev=12` of the repository, else "unknown".

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
    println!("cargo:rustc-env=TILEC_COMMIT={}", commit.as_deref().unwrap_or("unknown"));
}
