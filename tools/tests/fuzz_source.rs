//! Source-level fuzzing of the compiler (issue 12): mutants of every `.tile` file in stdlib/,
//! examples/ and tests/ui/ (token insertions, deletions, swaps and duplications, splices between
//! files, deep nesting, huge literals, very long lines, invalid UTF-8) go through `tilec check`,
//! `tilec build --emit tir` and `tilec build --target spirv`, in-process through
//! `tilec::cli::main_with` with panics caught, and a few through the real binary with a
//! timeout. Every run must end with exit code 0 or 1 (a program with or without errors),
//! without a panic, a crash or a hang.
//!
//! Mutant `i` of a run is generated from the seed `TILEC_FUZZ_SEED + i` alone, so a failure
//! reproduces with `TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_COUNT=1`. `TILEC_FUZZ_COUNT` (default 400)
//! sets the number of mutants, `TILEC_FUZZ_SECONDS` a time budget instead; `tools/fuzz.sh
//! --minutes N` runs it in a release build for longer.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// SplitMix64: a small deterministic generator, enough for choosing mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Every `.tile` file of the corpus, sorted by path (so seeds mean the same everywhere):
/// stdlib/ and examples/ (valid programs) first, then tests/ui/; and how many are valid.
fn corpus() -> (Vec<Vec<u8>>, usize) {
    let mut paths = Vec::new();
    let mut valid = 0;
    for dir in ["examples", "stdlib", "tests/ui"] {
        if dir == "tests/ui" {
            paths.sort();
            valid = paths.len();
        }
        for e in std::fs::read_dir(root().join(dir)).expect("corpus folder") {
            let p = e.expect("entry").path();
            if p.extension().is_some_and(|x| x == "tile") {
                paths.push(p);
            }
        }
    }
    paths[valid..].sort();
    (paths.iter().map(|p| std::fs::read(p).expect("read corpus file")).collect(), valid)
}

/// Splits `src` into tokens, roughly: runs of identifier characters, runs of whitespace, and
/// single other bytes. Concatenated they give `src` back.
fn tokens(src: &[u8]) -> Vec<&[u8]> {
    let class = |c: u8| {
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            0
        } else if c.is_ascii_whitespace() {
            1
        } else {
            2
        }
    };
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=src.len() {
        if i == src.len() || class(src[i]) == 2 || class(src[i]) != class(src[start]) {
            out.push(&src[start..i]);
            start = i;
        }
    }
    out
}

/// Tokens worth inserting besides those of the corpus.
const EXTRA: &[&str] = &[
    "kernel",
    "fn",
    "let",
    "mut",
    "for",
    "while",
    "if",
    "else",
    "return",
    "break",
    "import",
    "const",
    "shared",
    "tile",
    "grid",
    "block",
    "flops",
    "in",
    "..",
    "::",
    "@",
    "@=",
    "->",
    "<",
    ">",
    "<<",
    ">>",
    "&&",
    "||",
    "!",
    "as",
    "f32",
    "f64",
    "i32",
    "i64",
    "u32",
    "bool",
    "true",
    "false",
    "0",
    "-1",
    "2147483647",
    "-2147483648",
    "9223372036854775807",
    "0.0",
    "-0.0",
    "1e38",
    "1e-45",
    ";",
    ",",
    ":",
    "=",
    "+=",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "program_id(0)",
    "sync()",
    "T",
    "N",
    "B",
    "_",
    "///",
    "//",
    "/*",
    "\"",
    "'",
    "#",
    "$",
];

const HUGE: &[&str] = &[
    "99999999999999999999999999999999999999",
    "340282366920938463463374607431768211456",
    "18446744073709551616",
    "4294967296",
    "1e99999",
    "1.7976931348623157e309",
    "1e-99999",
    "0.000000000000000000000000000000000000000000000000000000000001",
    "123456789012345678901234567890.123456789012345678901234567890e400",
    "0x7fffffffffffffffffff",
    "1_000_000_000_000_000_000",
];

/// One mutant of the corpus, from `seed` alone.
/// The base is a valid program (one of the first `valid` files) three times in four.
fn mutant(corpus: &[Vec<u8>], valid: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng(seed);
    let base = if rng.below(4) < 3 { rng.pick(&corpus[..valid]) } else { rng.pick(corpus) };
    let mut toks: Vec<Vec<u8>> = tokens(base).into_iter().map(<[u8]>::to_vec).collect();
    if toks.is_empty() {
        toks.push(b"kernel".to_vec());
    }
    // Half of the mutants change only literals or names, which mostly keeps them parseable,
    // so that checking, lowering and SPIR-V generation see them too.
    if rng.below(2) == 0 {
        const NUMBERS: &[&str] =
            &["0", "1", "2", "15", "16", "17", "33", "-1", "0.0", "1e30", "4096", "16384", "65536", "2147483647"];
        let names: Vec<usize> = (0..toks.len()).filter(|&i| toks[i][0].is_ascii_alphabetic()).collect();
        let numbers: Vec<usize> = (0..toks.len()).filter(|&i| toks[i][0].is_ascii_digit()).collect();
        for _ in 0..1 + rng.below(3) {
            if rng.below(2) == 0 && !numbers.is_empty() {
                let i = *rng.pick(&numbers);
                toks[i] = if rng.below(4) == 0 { rng.pick(HUGE) } else { rng.pick(NUMBERS) }.as_bytes().to_vec();
            } else if names.len() > 1 {
                let (i, j) = (*rng.pick(&names), *rng.pick(&names));
                toks[i] = toks[j].clone();
            }
        }
        return toks.concat();
    }
    let rounds = 1 + rng.below(4);
    for _ in 0..rounds {
        let at = rng.below(toks.len() + 1);
        match rng.below(12) {
            0 | 1 if at < toks.len() => {
                toks.remove(at);
            }
            2 | 3 => {
                let t = if rng.below(2) == 0 {
                    rng.pick(EXTRA).as_bytes().to_vec()
                } else {
                    let other = tokens(rng.pick::<Vec<u8>>(corpus));
                    other.get(rng.below(other.len().max(1))).map(|t| t.to_vec()).unwrap_or_default()
                };
                toks.insert(at, t);
            }
            4 if toks.len() > 1 => {
                let b = rng.below(toks.len());
                let a = at.min(toks.len() - 1);
                toks.swap(a, b);
            }
            5 => {
                // Duplicate a range of tokens somewhere else.
                let a = rng.below(toks.len());
                let len = 1 + rng.below(40.min(toks.len() - a));
                let piece: Vec<Vec<u8>> = toks[a..a + len].to_vec();
                let at = rng.below(toks.len() + 1);
                toks.splice(at..at, piece);
            }
            6 => {
                // Splice: this file's prefix, another's suffix.
                let other: Vec<Vec<u8>> = tokens(rng.pick::<Vec<u8>>(corpus)).into_iter().map(<[u8]>::to_vec).collect();
                let from = rng.below(other.len().max(1));
                toks.truncate(at);
                toks.extend(other.into_iter().skip(from));
            }
            7 => {
                let depth = *rng.pick(&[50, 300, 1000, 5000]);
                let (open, close, inner) =
                    *rng.pick(&[("(", ")", "1"), ("{", "}", ""), ("[", "]", "0"), ("-", "", "x"), ("!", "", "true")]);
                let text = format!("{}{inner}{}", open.repeat(depth), close.repeat(depth));
                toks.insert(at, text.into_bytes());
            }
            8 => {
                let n = *rng.pick(&[100, 1000, 5000]);
                let text = match rng.below(3) {
                    0 => format!("1{}", " + 1".repeat(n)),
                    1 => format!("if x {{ {} }}", "} else if x {".repeat(n)),
                    _ => "let a = 1;\n".repeat(n),
                };
                toks.insert(at, text.into_bytes());
            }
            9 => toks.insert(at, rng.pick(HUGE).as_bytes().to_vec()),
            10 => {
                let n = *rng.pick(&[10_000, 200_000]);
                let text = match rng.below(3) {
                    0 => "a".repeat(n),
                    1 => " ".repeat(n),
                    _ => "// ".to_string() + &"x".repeat(n),
                };
                toks.insert(at, text.into_bytes());
            }
            _ => {
                const BAD: &[&[u8]] = &[b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00", b"\xe2\x82"];
                toks.insert(at, rng.pick(BAD).to_vec());
            }
        }
    }
    toks.concat()
}

/// The three commands, with `FILE` and `DIR` to fill in.
const COMMANDS: &[&[&str]] =
    &[&["check", "FILE"], &["build", "FILE", "--emit", "tir"], &["build", "FILE", "--target", "spirv", "-o", "DIR"]];

fn argv(cmd: &[&str], file: &Path, dir: &Path) -> Vec<String> {
    let mut v = vec!["tilec".to_string()];
    v.extend(cmd.iter().map(|a| match *a {
        "FILE" => file.display().to_string(),
        "DIR" => dir.display().to_string(),
        a => a.to_string(),
    }));
    v
}

/// Runs one mutant through every command in-process; returns the failures and the exit code
/// of `check`.
fn run_in_process(file: &Path, dir: &Path, seed: u64) -> (Vec<String>, i32) {
    let mut failures = Vec::new();
    let mut check_code = -1;
    for cmd in COMMANDS {
        let args = argv(cmd, file, dir);
        let t0 = Instant::now();
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let code = tilec::cli::main_with(args.clone(), &mut out, &mut err, false);
            (code, String::from_utf8_lossy(&err).into_owned())
        }));
        let took = t0.elapsed();
        if cmd[0] == "check" {
            check_code = result.as_ref().map_or(-1, |r| r.0);
        }
        match result {
            Ok((0 | 1, _)) if took < Duration::from_secs(20) => {}
            Ok((0 | 1, _)) => failures.push(format!("seed {seed}: `{}` took {took:?}", cmd.join(" "))),
            Ok((code, err)) => {
                let first = err.lines().next().unwrap_or("").to_string();
                failures.push(format!("seed {seed}: `{}` exited with {code}: {first}", cmd.join(" ")));
            }
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                failures.push(format!("seed {seed}: `{}` panicked: {}", cmd.join(" "), msg.unwrap_or_default()));
            }
        }
    }
    (failures, check_code)
}

/// Runs one mutant through the real binary with a timeout; returns the failures.
fn run_binary(file: &Path, dir: &Path, seed: u64) -> Vec<String> {
    let mut failures = Vec::new();
    for cmd in COMMANDS {
        let args = argv(cmd, file, dir);
        let mut child = Command::new(env!("CARGO_BIN_EXE_tilec"))
            .args(&args[1..])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run tilec");
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().expect("wait") {
                break Some(s);
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        match status.map(|s| s.code()) {
            Some(Some(0 | 1)) => {}
            Some(code) => failures.push(format!("seed {seed}: binary `{}` ended with {code:?}", cmd.join(" "))),
            None => failures.push(format!("seed {seed}: binary `{}` hung (killed after 30 s)", cmd.join(" "))),
        }
    }
    failures
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn mutants_never_panic_hang_or_exit_with_2() {
    let (corpus, valid) = corpus();
    assert!(corpus.len() > 50, "corpus too small: {}", corpus.len());
    let first = env_u64("TILEC_FUZZ_SEED").unwrap_or(1);
    let count = env_u64("TILEC_FUZZ_COUNT").unwrap_or(400);
    let seconds = env_u64("TILEC_FUZZ_SECONDS");
    let dir = std::env::temp_dir().join(format!("tilec-fuzz-{}", std::process::id()));
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    // Panics are caught and reported with their seed; keep the default hook's noise out.
    std::panic::set_hook(Box::new(|_| {}));
    let start = Instant::now();
    let mut failures = Vec::new();
    let mut ran = 0u64;
    let mut clean = 0u64;
    for i in 0.. {
        let done = match seconds {
            Some(s) => start.elapsed() >= Duration::from_secs(s),
            None => i >= count,
        };
        if done {
            break;
        }
        let seed = first + i;
        // A crash (a stack overflow aborts the process) must still say its seed.
        let _ = std::fs::write(std::env::temp_dir().join("tilec-fuzz-last-seed"), seed.to_string());
        let file = dir.join("m.tile");
        std::fs::write(&file, mutant(&corpus, valid, seed)).unwrap();
        let (mut found, check_code) = run_in_process(&file, &out_dir, seed);
        clean += u64::from(check_code == 0);
        // Every 25th mutant (and any that failed) also through the binary.
        if i % 25 == 0 || !found.is_empty() {
            found.extend(run_binary(&file, &out_dir, seed));
        }
        for f in &found {
            eprintln!("FUZZ FAILURE {f}");
        }
        failures.extend(found);
        ran += 1;
    }
    let _ = std::panic::take_hook();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzzed {ran} mutants (seeds {first}..{}) in {:?}; {clean} of them passed `check`",
        first + ran,
        start.elapsed()
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}
