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
