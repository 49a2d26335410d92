//! `tilec check -` reads the program from standard input and names it `<stdin>`.

use std::io::Write;
use std::process::{Command, Stdio};

fn check_stdin(src: &str) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilec"))
        .args(["check", "-"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tilec");
    child.stdin.take().expect("stdin").write_all(src.as_bytes()).expect("write");
    let out = child.wait_with_output().expect("wait");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn check_reads_standard_input() {
    let (code, err) = check_stdin("kernel k(A: mut f32[B]) grid(B) {\n    A[0] = 1.0;\n}\n");
    assert_eq!((code, err.as_str()), (0, ""));
    let (code, err) = check_stdin("kernel k(A: mut f32[B]) grid(B) {\n    A[0] = x;\n}\n");
    assert_eq!(code, 1);
    assert!(err.contains("E0101") && err.contains("<stdin>:2:12"), "{err}");
}
