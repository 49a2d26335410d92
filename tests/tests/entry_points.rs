//! The same launches through `tilec run` (in process) and the Rust API (`Program`), from the
//! table `tests/entry_points.json`, which the Python tests run through the Python package too
//! (`test_entry_points_agree`): each case must give the same code, message and source label
//! from every entry point.

use serde_json::Value;
use std::collections::HashMap;
use tilec::{Args, GenericArg, Program, SessionOptions, Target};
use tilec_midend::Scalar;
use tilec_runtime::HostArray;

/// An error as a user sees it: its code and its rendered text, or success.
type Outcome = Result<(), (String, String)>;

struct Case {
    name: String,
    program: String,
    kernel: String,
    target: String,
    arrays: Vec<(String, Scalar, Vec<u64>)>,
    scalars: Vec<(String, String)>,
    generics: Vec<(String, String)>,
    deny_warnings: bool,
}

fn cases() -> Vec<(Case, Value)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/entry_points.json")).expect("the table");
    let table: Value = serde_json::from_str(&text).expect("JSON");
    let strings = |v: &Value| -> Vec<(String, String)> {
        v.as_object()
            .map_or(Vec::new(), |o| o.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").into())).collect())
    };
    let cases = table["cases"].as_array().expect("cases").iter();
    cases
        .map(|c| {
            let arrays = c["arrays"].as_object().expect("arrays").iter().map(|(n, a)| {
                let elem = Scalar::from_name(a[0].as_str().expect("dtype")).expect("a dtype");
                let shape = a[1].as_array().expect("shape").iter().filter_map(Value::as_u64).collect();
                (n.clone(), elem, shape)
            });
            let case = Case {
                name: c["name"].as_str().unwrap_or("").into(),
                program: c["program"].as_str().expect("program").into(),
                kernel: c["kernel"].as_str().expect("kernel").into(),
                target: c["target"].as_str().expect("target").into(),
                arrays: arrays.collect(),
                scalars: strings(&c["scalars"]),
                generics: strings(&c["generics"]),
                deny_warnings: c["deny_warnings"].as_bool().unwrap_or(false),
            };
            (case, c.clone())
        })
        .collect()
}

/// The code in the first line of a rendered error: `error[E0410]: ..` or `[E0227] Error: ..`.
fn first_code(rendered: &str) -> String {
    let at = rendered.find('[').map_or(0, |i| i + 1);
    rendered[at..].chars().take_while(|c| c.is_ascii_alphanumeric()).collect()
}

fn through_cli(c: &Case, dir: &std::path::Path) -> Outcome {
    let file = dir.join("prog.tile");
    std::fs::write(&file, &c.program).expect("write the program");
    let mut args: Vec<String> = vec!["tilec".into()];
    if c.deny_warnings {
        args.extend(["--deny".into(), "warnings".into()]);
    }
    args.extend(["run".into(), file.display().to_string(), "--kernel".into(), c.kernel.clone()]);
    args.extend(["--target".into(), c.target.clone()]);
    for (n, elem, shape) in &c.arrays {
        let path = dir.join(format!("{n}.npy"));
        let a = HostArray::zeros(*elem, shape).expect("zeros");
        tilec_runtime::write_npy_atomic(&path, &a).expect("write npy");
        args.extend(["--arg".into(), format!("{n}={}", path.display())]);
    }
    for (n, v) in &c.scalars {
        args.extend(["--arg".into(), format!("{n}={v}")]);
    }
    for (n, v) in &c.generics {
        args.extend(["--generic".into(), format!("{n}={v}")]);
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(args, &mut out, &mut err, false);
    let err = String::from_utf8_lossy(&err).into_owned();
    if code == 0 {
        Ok(())
    } else {
        Err((first_code(&err), err))
    }
}

fn through_api(c: &Case) -> Outcome {
    let fail = |e: tilec::Error| Err((e.code().to_string(), e.rendered().to_string()));
    let opts = SessionOptions { deny_warnings: c.deny_warnings, ..Default::default() };
    let p = match Program::with_options("prog.tile", &c.program, opts) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let target = Target::from_names(&c.target, None, Some("cranelift")).expect("a target");
    let mut args = Args::new();
    for (n, elem, shape) in &c.arrays {
        args = args.host(n, HostArray::zeros(*elem, shape).expect("zeros"));
    }
    for (n, v) in &c.scalars {
        args = match v.parse::<i64>() {
            Ok(i) => args.scalar(n, i),
            Err(_) => args.scalar(n, v.parse::<f64>().expect("a number")),
        };
    }
    let generics: Vec<(&str, GenericArg)> =
        c.generics.iter().map(|(n, v)| (n.as_str(), GenericArg::parse(v).expect("a generic"))).collect();
    match p.launch(&c.kernel, target, args, &generics) {
        Ok(_) => Ok(()),
        Err(e) => fail(e),
    }
}

#[test]
fn every_entry_point_gives_the_same_answer() {
    let dir = std::env::temp_dir().join(format!("tilec-entry-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let mut seen = HashMap::new();
    for (c, want) in cases() {
        for (via, got) in [("tilec run", through_cli(&c, &dir)), ("the Rust API", through_api(&c))] {
            let what = format!("{} through {via}", c.name);
            match (&want["code"], &got) {
                (Value::Null, Ok(())) => {}
                (Value::Null, Err((code, text))) => panic!("{what}: failed with {code}:\n{text}"),
                (Value::String(w), Ok(())) => panic!("{what}: succeeded, expected {w}"),
                (Value::String(w), Err((code, text))) => {
                    assert_eq!(code, w, "{what}:\n{text}");
                    for s in want["contains"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                        assert!(text.contains(s), "{what}: `{s}` not in\n{text}");
                    }
                    let label = want["label"].as_bool().unwrap_or(false);
                    assert_eq!(text.contains("╭─["), label, "{what}: a source label expected: {label}\n{text}");
                }
                (w, _) => panic!("{what}: bad `code` {w} in the table"),
            }
            *seen.entry(via).or_insert(0) += 1;
        }
    }
    assert!(seen.values().all(|&n| n >= 10), "{seen:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
