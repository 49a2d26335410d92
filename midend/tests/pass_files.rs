//! File tests of the passes, in the style of Cranelift's filetests: each
//! `tests/passes/*.tir` names a pass (`; pass: NAME`), gives an input module in the IR's text
//! form, and after `; expect:` the module as printed after that pass (which must also pass the
//! verifier). `TILEC_BLESS=1 cargo test -p tilec-midend --test pass_files` rewrites the
//! expectations from the current output; review the diff before committing it.

// A test harness reads and writes its files; the crate's code does no I/O (clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

use std::path::Path;
use tilec_midend::{parse, passes, print, verify};

const EXPECT: &str = "; expect:";

/// Runs one file; returns the printed output and the file's expected text.
fn run(path: &Path) -> (String, String, String) {
    let text = std::fs::read_to_string(path).expect("readable");
    let (input, expected) = text.split_once(EXPECT).unwrap_or((&text, ""));
    let pass_name = input
        .lines()
        .find_map(|l| l.strip_prefix("; pass:"))
        .unwrap_or_else(|| panic!("{}: no `; pass: NAME` line", path.display()))
        .trim();
    let pass = passes::PASSES
        .iter()
        .chain(passes::cpu_passes(true))
        .find(|p| p.name == pass_name)
        .unwrap_or_else(|| panic!("{}: no pass `{pass_name}`", path.display()));
    let mut m = parse::parse_module(input).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    verify::verify(&m).unwrap_or_else(|e| panic!("{}: the input fails the verifier: {e:?}", path.display()));
    (pass.run)(&mut m);
    verify::verify(&m).unwrap_or_else(|e| panic!("{}: the output fails the verifier: {e:?}", path.display()));
    (input.to_string(), print::print_module(&m), expected.trim().to_string())
}

#[test]
fn pass_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/passes");
    let mut files: Vec<_> = std::fs::read_dir(&dir).expect("tests/passes").map(|e| e.expect("entry").path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "tir"));
    files.sort();
    assert!(!files.is_empty(), "no .tir files in {}", dir.display());
    let bless = std::env::var("TILEC_BLESS").as_deref() == Ok("1");
    let mut failed = Vec::new();
    for f in &files {
        let (input, got, want) = run(f);
        if got.trim() == want {
            continue;
        }
        if bless {
            std::fs::write(f, format!("{}{EXPECT}\n{got}", input.trim_end_matches('\n').to_string() + "\n\n"))
                .expect("writable");
        } else {
            eprintln!("{}: output differs\n--- expected\n{want}\n--- got\n{}", f.display(), got.trim());
            failed.push(f.display().to_string());
        }
    }
    assert!(failed.is_empty(), "pass file tests failed (TILEC_BLESS=1 to accept): {failed:?}");
}
