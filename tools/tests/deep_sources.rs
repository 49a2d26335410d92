//! Deep but legal sources (just under E0005's limit of 1024 operators in one statement: long
//! `+` chains in every place an expression goes) compile from a thread with the 2 MiB stack
//! that Rust gives spawned threads and test threads, as an embedder's would be: the library
//! runs the frontend and the passes on a stack of its own (`tilec::with_stack`), so none of
//! them overflows the caller's.

/// `n` terms `x + 1 + 1 ..` joined with `op`.
fn chain(x: &str, term: &str, n: usize) -> String {
    let mut s = x.to_string();
    for _ in 0..n {
        s.push_str(" + ");
        s.push_str(term);
    }
    s
}

fn sources() -> Vec<(&'static str, String)> {
    let n = 1000;
    vec![
        (
            "scalar",
            format!("kernel k(X: f32[N], Y: mut f32[N]) grid(1) {{\n    Y[0] = {};\n}}\n", chain("X[0]", "1.0", n)),
        ),
        (
            "tile",
            format!(
                "kernel k(X: f32[N], Y: mut f32[N]) grid(1) {{\n    let x = X[0:16];\n    Y[0:16] = {};\n}}\n",
                chain("x", "1.0", n)
            ),
        ),
        ("int", format!("kernel k(Y: mut i32[N]) grid(1) {{\n    Y[0] = {};\n}}\n", chain("N", "1", n))),
        (
            "const",
            format!("const C: i32 = {};\nkernel k(Y: mut i32[N]) grid(1) {{\n    Y[0] = C;\n}}\n", chain("1", "1", n)),
        ),
        ("grid", format!("kernel k(Y: mut f32[N]) grid({}) {{\n    Y[0] = 1.0;\n}}\n", chain("N", "1", n))),
        (
            "fn",
            format!(
                "fn f(x: f32) -> f32 {{\n    {}\n}}\nkernel k(Y: mut f32[N]) grid(1) {{\n    Y[0] = f(Y[0]);\n}}\n",
                chain("x", "1.0", n)
            ),
        ),
        ("unary", format!("kernel k(Y: mut f32[N]) grid(1) {{\n    Y[0] = {}Y[0];\n}}\n", "- ".repeat(n))),
    ]
}

#[test]
fn deep_sources_compile_on_a_two_mib_thread() {
    let dir = std::env::temp_dir().join(format!("tilec-deep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (name, src) in sources() {
        let file = dir.join(format!("{name}.tile"));
        std::fs::write(&file, &src).expect("write");
        let f = file.to_str().expect("UTF-8").to_string();
        let out = dir.join(format!("{name}.out")).to_str().expect("UTF-8").to_string();
        let runs: Vec<Vec<String>> = [
            vec!["check", &f],
            vec!["build", &f, "--emit", "tir", "-o", &out],
            vec!["build", &f, "--target", "spirv", "-o", &out],
            vec!["build", &f, "--target", "cpu", "-o", &out],
        ]
        .into_iter()
        .map(|a| std::iter::once("tilec").chain(a).map(String::from).collect())
        .collect();
        for argv in runs {
            let what = argv.join(" ");
            let code = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || {
                    let (mut o, mut e) = (Vec::new(), Vec::new());
                    let code = tilec::cli::main_with(argv, &mut o, &mut e, false);
                    (code, String::from_utf8_lossy(&e).into_owned())
                })
                .expect("spawn")
                .join()
                .expect("no panic");
            assert_eq!(code.0, 0, "{name}: `{what}` failed:\n{}", code.1);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
