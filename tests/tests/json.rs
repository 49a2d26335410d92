//! `--error-format json`: one JSON object per diagnostic, with code, message, file, and
//! labels with byte offsets and 1-based line and column.

#[test]
fn json_diagnostics_have_code_labels_and_positions() {
    let dir = std::env::temp_dir().join(format!("tilec-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.tile");
    std::fs::write(&file, "kernel k(A: f32[B]) grid(B) {\n    A[0] = 1.0;\n}\n").unwrap();
    let argv: Vec<String> =
        ["tilec", "--error-format", "json", "check", file.to_str().unwrap()].iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    assert_eq!(code, 1);
    let text = String::from_utf8(err).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    let line = lines[0];
    assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
    assert!(line.contains(r#""code":"E0205""#), "{line}");
    assert!(line.contains(r#""line":2"#) && line.contains(r#""column":5"#), "{line}");
    assert!(line.contains(r#""severity":"error""#), "{line}");
    std::fs::remove_dir_all(&dir).ok();
}

fn tilec(args: &[&str]) -> (i32, String, String) {
    let argv: Vec<String> = std::iter::once("tilec").chain(args.iter().copied()).map(str::to_string).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    (code, String::from_utf8(out).expect("UTF-8"), String::from_utf8(err).expect("UTF-8"))
}

/// Warnings in JSON: severity, end positions, and a suggestion that an editor can apply.
#[test]
fn json_warnings_have_end_positions_and_suggestions() {
    let dir = std::env::temp_dir().join(format!("tilec-json-w-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("warn.tile");
    let src =
        "kernel k(A: mut f32[B]) grid(B) {\n    let b = program_id(0);\n    let unused = 1.0;\n    A[b] = 2.0;\n}\n";
    std::fs::write(&file, src).unwrap();
    let (code, _, err) = tilec(&["--error-format", "json", "check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "warnings do not fail a check: {err}");
    let v: serde_json::Value = serde_json::from_str(err.lines().next().expect("one line")).expect("JSON");
    assert_eq!(v["code"], "W0101");
    assert_eq!(v["severity"], "warning");
    let l = &v["labels"][0];
    assert_eq!(
        (&l["line"], &l["column"], &l["end_line"], &l["end_column"]),
        (&3.into(), &9.into(), &3.into(), &15.into())
    );
    let s = &v["suggestions"][0];
    assert_eq!(s["replacement"], "_unused");
    let (a, b) = (s["start"].as_u64().unwrap() as usize, s["end"].as_u64().unwrap() as usize);
    assert_eq!(&src[a..b], "unused");
    // `--deny warnings` turns it into an error and exit code 1.
    let (code, _, err) = tilec(&["--error-format", "json", "--deny", "warnings", "check", file.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains(r#""severity":"error""#) && err.contains(r#""code":"W0101""#), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// `tilec explain` prints a code's entry of docs/errors.md; an unknown code is a usage error.
#[test]
fn explain_prints_the_docs_entry() {
    let (code, out, _) = tilec(&["explain", "E0226"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("## E0226: arithmetic overflow in a constant"), "{out}");
    assert!(!out.contains("## E0227"), "only one entry: {out}");
    let (code, out, _) = tilec(&["explain", "w0101"]);
    assert_eq!(code, 0);
    assert!(out.contains("let acc = acc + a @ b;"), "{out}");
    let (code, _, err) = tilec(&["explain", "E9999"]);
    assert_eq!(code, 2);
    assert!(err.contains("E0501"), "{err}");
}

/// `tilec check` on a program without errors or warnings says in one line what it checked;
/// `--quiet` and the JSON format print nothing.
#[test]
fn check_says_what_it_checked() {
    let dir = std::env::temp_dir().join(format!("tilec-check-line-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ok.tile");
    std::fs::write(&file, "kernel k<T: float>(A: mut T[B]) grid(B) {\n    A[0] = 1.0;\n}\n").unwrap();
    let f = file.to_str().unwrap();
    let (code, out, err) = tilec(&["check", f]);
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(out, format!("{f}: 1 kernel (2 instances) checked with the CPU's limits: no errors or warnings\n"));
    let (_, out, _) = tilec(&["check", "--target", "cuda", f]);
    assert!(out.contains("checked with CUDA's limits"), "{out}");
    for quiet in [&["check", "--quiet", f][..], &["--error-format", "json", "check", f][..]] {
        let (code, out, err) = tilec(quiet);
        assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""), "{quiet:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
