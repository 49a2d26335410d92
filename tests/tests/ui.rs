//! Diagnostics snapshots: every `tests/ui/*.tile` program has errors (or, for `warn_*.tile`,
//! only warnings); `tilec check` on it must exit with code 1 (0 for warnings, 1 with
//! `--deny warnings`) and print its diagnostics, which are snapshotted (exit code and
//! stderr, without colour) in `snapshots/ui__check@NAME.tile.snap`.
//!
//! The file is passed to the CLI as a path relative to this package (`ui/NAME.tile`; Cargo
//! runs integration tests in the package directory), so snapshots do not depend on where the
//! repository is checked out.

use std::path::{Path, PathBuf};

/// The package directory, canonical so that it is a prefix of the paths `glob!` yields.
fn package_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())
}

/// Runs `tilec ARGS...` in-process without colour; returns (exit code, stdout, stderr).
fn tilec(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["tilec".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    (code, String::from_utf8(out).expect("stdout is UTF-8"), String::from_utf8(err).expect("stderr is UTF-8"))
}

#[test]
fn check() {
    let pkg = package_dir();
    let cwd = std::env::current_dir().expect("current dir");
    let cwd = cwd.canonicalize().unwrap_or(cwd);
    assert_eq!(cwd, pkg, "the ui tests pass paths relative to the package directory and must run there");
    insta::glob!("../ui", "*.tile", |path| {
        let rel = path
            .strip_prefix(&pkg)
            .expect("ui files live in the package")
            .to_str()
            .expect("UTF-8 path")
            .replace('\\', "/");
        // Read as bytes: a ui file may hold invalid UTF-8 on purpose (invalid_utf8.tile).
        let src = String::from_utf8_lossy(&std::fs::read(path).expect("read ui file")).into_owned();
        let first = src.lines().next().unwrap_or("");
        assert!(first.starts_with("//"), "{rel}: the first line must be a `//` comment saying what the file shows");

        let (code, out, err) = tilec(&["check", &rel]);
        assert!(out.is_empty(), "{rel}: unexpected stdout:\n{out}");
        if rel.starts_with("ui/warn_") {
            // Warnings only: the check passes, and `--deny warnings` makes it fail.
            assert_eq!(code, 0, "{rel}: expected exit code 0\nstderr:\n{err}");
            assert!(err.contains("] Warning: "), "{rel}: no rendered `[CODE] Warning:` in stderr:\n{err}");
            assert!(
                err.lines().last().is_some_and(|l| l.starts_with("warning: ") && l.ends_with(" emitted")),
                "{rel}: stderr does not end with the warning count:\n{err}"
            );
            let (denied, _, _) = tilec(&["check", "--deny", "warnings", &rel]);
            assert_eq!(denied, 1, "{rel}: `--deny warnings` must fail");
        } else {
            assert_eq!(code, 1, "{rel}: expected exit code 1\nstderr:\n{err}");
            assert!(err.contains("] Error: "), "{rel}: no rendered `[CODE] Error:` diagnostic in stderr:\n{err}");
            assert!(
                err.lines().last().is_some_and(|l| l.starts_with("error: ") && l.ends_with(" found")),
                "{rel}: stderr does not end with the error count:\n{err}"
            );
        }
        assert!(
            err.contains(&format!("{rel}:")),
            "{rel}: diagnostics do not name the file by its relative path:\n{err}"
        );

        let mut settings = insta::Settings::clone_current();
        settings.set_description(first.trim_start_matches('/').trim());
        settings.set_prepend_module_to_snapshot(true);
        settings.bind(|| {
            insta::assert_snapshot!(format!("exit code: {code}\n{err}"));
        });
    });
}
