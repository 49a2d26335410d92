//! `print` and `assert` in kernels: the same lines on every target (both CPU code generators,
//! Vulkan on lavapipe, the SIMT interpreter at 4 to 64 lanes, which is the GPU form), checked
//! against lines formatted here from the inputs; program order, overflow of the debug buffer,
//! failed assertions (E0445, no output written), the options that turn both off, and PTX that
//! ptxas assembles.

use std::collections::HashMap;
use tilec::driver::{InstanceRequest, Session};
use tilec::{SessionOptions, SourceSet, Target};
use tilec_midend::debug::{decode::decode, DebugOptions, BUFFER_PARAM, BUFFER_WORDS};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{ArgValue, HostArray};

/// Prints scalars of every type, a row, a matrix tile, a comparison and a value from a `fn`,
/// in a loop: per program `1 + N` lines.
const PROGRAM: &str = "\
fn twice(t: tile<f32, 4>) -> tile<f32, 4> {
    let u = t * 2.0;
    print(\"in fn\", u);
    u
}

kernel show(X: mut f32[B, 4], Y: f64[B], n: i32) grid(B) {
    let b = program_id(0);
    let t = X[b, 0:4];
    let m = tile<f64, 2, 2>::eye() * Y[b];
    print(\"start\", b, b as u32, b as i64 - 3, Y[b], t, m, t > 0.0);
    for i in 0..n {
        print(\"\", i);
    }
    X[b, 0:4] = twice(t);
    assert(Y[b] >= 0.0, \"Y is not negative\");
}
";

const B: usize = 5;
const N: i32 = 3;

fn x_data() -> Vec<f32> {
    (0..B * 4).map(|i| i as f32 * 0.25 - 1.5).collect()
}

fn y_data(negative_at: Option<usize>) -> Vec<f64> {
    (0..B).map(|b| if Some(b) == negative_at { -1.0 } else { 0.1 * b as f64 + 1e-300 }).collect()
}

/// A `print` run: its source line, program, label and `(expression, value)` pairs.
type Expected = (u32, usize, &'static str, Vec<(&'static str, String)>);

/// The records the program must write, formatted here from the inputs.
fn expected_records() -> Vec<Expected> {
    let (x, y) = (x_data(), y_data(None));
    let list = |v: Vec<String>| format!("[{}]", v.join(", "));
    let mut records = Vec::new();
    for b in 0..B {
        let t: Vec<f32> = x[b * 4..b * 4 + 4].to_vec();
        let m = format!("[[{:?}, {:?}], [{:?}, {:?}]]", y[b], 0.0f64, 0.0f64, y[b]);
        let values = vec![
            ("b", b.to_string()),
            ("b as u32", b.to_string()),
            ("b as i64 - 3", (b as i64 - 3).to_string()),
            ("Y[b]", format!("{:?}", y[b])),
            ("t", list(t.iter().map(|v| format!("{v:?}")).collect())),
            ("m", m),
            ("t > 0.0", list(t.iter().map(|v| (*v > 0.0).to_string()).collect())),
        ];
        records.push((11, b, " start", values));
        for i in 0..N {
            records.push((13, b, "", vec![("i", i.to_string())]));
        }
        records.push((3, b, " in fn", vec![("u", list(t.iter().map(|v| format!("{:?}", v * 2.0)).collect()))]));
    }
    records
}

/// The lines the program must print.
fn expected() -> Vec<String> {
    expected_records()
        .into_iter()
        .map(|(line, b, label, values)| {
            let vs: Vec<String> = values.iter().map(|(n, v)| format!("{n} = {v}")).collect();
            format!("prints.tile:{line} show[{b}]{label}: {}", vs.join(", "))
        })
        .collect()
}

fn args(negative_at: Option<usize>) -> Vec<(String, ArgValue)> {
    let x = HostArray::from_f32(&x_data(), &[B as u64, 4]).unwrap();
    let y = HostArray::from_f64(&y_data(negative_at), &[B as u64]).unwrap();
    vec![
        ("X".into(), ArgValue::Array(x)),
        ("Y".into(), ArgValue::Array(y)),
        ("n".into(), ArgValue::Scalar(Const::Int(N as i64, Scalar::I32))),
    ]
}

fn session(src: &str, debug: DebugOptions) -> Session {
    let opts = SessionOptions { verify: true, debug, ..Default::default() };
    Session::new(SourceSet::with_stdlib("prints.tile", src), opts)
}

/// The print lines of one launch of `show` on `target`, or the error's code and text.
fn launch(target: Target, negative_at: Option<usize>) -> Result<(Vec<String>, u64), (String, String)> {
    let s = session(PROGRAM, DebugOptions::default());
    let args = args(negative_at);
    let request = InstanceRequest::of_arrays(args.iter().map(|(n, a)| (n, a)), []);
    let inst = s.instance("show", target, &request).expect("compiles");
    match s.run(&inst, args, 1) {
        Ok((l, _)) => Ok((l.prints.lines, l.prints.dropped)),
        Err(e) => Err((e.code().to_string(), e.to_string())),
    }
}

fn targets() -> Vec<Target> {
    let mut t: Vec<Target> = tilec_tests::cpu_backends().into_iter().map(Target::Cpu).collect();
    if tilec_tests::vulkan_device().is_some() {
        t.push(Target::Vulkan { device: None });
    }
    t
}

#[test]
fn every_target_prints_the_same_lines_in_program_order() {
    let want = expected();
    for target in targets() {
        let (lines, dropped) = launch(target, None).unwrap_or_else(|e| panic!("{target:?}: {e:?}"));
        assert_eq!(dropped, 0);
        assert_eq!(lines, want, "{target:?}");
    }
}

#[test]
fn the_simt_form_prints_the_same_values_at_every_lane_count() {
    let s = session(PROGRAM, DebugOptions::default());
    let a = args(None);
    let request = InstanceRequest::of_arrays(a.iter().map(|(n, a)| (n, a)), []);
    let inst = s.instance("show", Target::CPU, &request).unwrap();
    let mut map: HashMap<String, ArgValue> = a.into_iter().collect();
    map.insert(BUFFER_PARAM.into(), ArgValue::Array(HostArray::zeros(Scalar::U32, &[BUFFER_WORDS]).unwrap()));
    let want: Vec<Vec<String>> =
        expected_records().into_iter().map(|(_, _, _, vs)| vs.into_iter().map(|(_, v)| v).collect()).collect();
    for lanes in [4, 8, 16, 32, 64] {
        let out = tilec_tests::run_simt(inst.module(), inst.kernel(), &map, lanes, [B as i64, 1, 1])
            .unwrap_or_else(|e| panic!("{lanes} lanes: {e}"));
        let words: Vec<u32> =
            out[BUFFER_PARAM].bytes().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let report = decode(&inst.module().debug, &words);
        assert_eq!(report.dropped, 0);
        let got: Vec<Vec<String>> = report.records.iter().map(|r| r.values.clone()).collect();
        assert_eq!(got, want, "{lanes} lanes");
    }
}

#[test]
fn a_full_debug_buffer_drops_lines_and_says_how_many() {
    // 8 programs x 2000 prints of an i32 and 64 f64 values (133 words each): about twice
    // the buffer.
    let src = "kernel flood(X: f64[P, 64], n: i32) grid(P) {
        let t = X[program_id(0), 0:64];
        for i in 0..n { print(\"i\", i, t); }
    }";
    let s = session(src, DebugOptions::default());
    let x = HostArray::from_f64(&vec![0.5; 8 * 64], &[8, 64]).unwrap();
    let args =
        vec![("X".to_string(), ArgValue::Array(x)), ("n".into(), ArgValue::Scalar(Const::Int(2000, Scalar::I32)))];
    let request = InstanceRequest::of_arrays(args.iter().map(|(n, a)| (n, a)), []);
    let fit = (BUFFER_WORDS - 4) / (4 + 1 + 2 * 64);
    for target in targets() {
        let inst = s.instance("flood", target, &request).unwrap();
        let (launch, _) = s.run(&inst, args.clone(), 1).unwrap();
        let lines = &launch.prints.lines;
        assert_eq!(lines.len() as u64 + launch.prints.dropped, 8 * 2000, "{target:?}");
        assert_eq!(lines.len() as u64, fit, "{target:?}: the buffer holds {fit} records");
        // What was kept of each program is a prefix of its prints, in order.
        let mut next: HashMap<String, i32> = HashMap::new();
        for l in lines {
            let prog = l.split(' ').nth(1).unwrap().to_string();
            let i: i32 = l.split("i = ").nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
            let n = next.entry(prog).or_insert(0);
            assert_eq!(i, *n, "{target:?}: {l}");
            *n += 1;
        }
    }
    // The command line warns (W0106) and succeeds.
    let dir = std::env::temp_dir().join(format!("tilec-flood-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (file, x) = (dir.join("flood.tile"), dir.join("x.npy"));
    std::fs::write(&file, src).unwrap();
    tilec_runtime::write_npy_atomic(&x, &HostArray::from_f64(&vec![0.5; 8 * 64], &[8, 64]).unwrap()).unwrap();
    let (code, out, err) = cli(&[
        "run",
        file.to_str().unwrap(),
        "--kernel",
        "flood",
        "--arg",
        &format!("X={}", x.display()),
        "--arg",
        "n=2000",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("W0106") && err.contains(&format!("{} `print` line(s) dropped", 16000 - fit)), "{err}");
    assert_eq!(out.lines().count() as u64, fit + 1);
    let _ = std::fs::remove_dir_all(dir);
}

fn cli(args: &[&str]) -> (i32, String, String) {
    let mut argv = vec!["tilec".to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tilec::cli::main_with(argv, &mut out, &mut err, false);
    (code, String::from_utf8(out).unwrap(), String::from_utf8(err).unwrap())
}

#[test]
fn a_failed_assert_is_e0445_with_the_first_program_and_its_source() {
    for target in targets() {
        let (code, text) = launch(target, Some(3)).expect_err("the assertion fails");
        assert_eq!(code, "E0445", "{target:?}");
        assert!(text.contains("assertion failed in show[3]: Y is not negative"), "{target:?}: {text}");
        assert!(text.contains("prints.tile:16:5"), "{target:?}: {text}");
    }
}

#[test]
fn the_command_line_writes_no_output_when_an_assert_fails() {
    let dir = std::env::temp_dir().join(format!("tilec-assert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("prints.tile");
    std::fs::write(&file, PROGRAM).unwrap();
    let (x, y, out) = (dir.join("x.npy"), dir.join("y.npy"), dir.join("out.npy"));
    tilec_runtime::write_npy_atomic(&x, &HostArray::from_f32(&x_data(), &[B as u64, 4]).unwrap()).unwrap();
    tilec_runtime::write_npy_atomic(&y, &HostArray::from_f64(&y_data(Some(1)), &[B as u64]).unwrap()).unwrap();
    let run = |extra: &[&str]| {
        let (xa, ya, oa) = (format!("X={}", x.display()), format!("Y={}", y.display()), format!("X={}", out.display()));
        let mut a = vec!["run", file.to_str().unwrap(), "--kernel", "show", "--arg", &xa, "--arg", &ya, "--arg", "n=1"];
        a.extend(["--out", &oa]);
        a.extend_from_slice(extra);
        cli(&a)
    };
    let (code, _, err) = run(&[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("[E0445]") && err.contains("show[1]"), "{err}");
    assert!(!out.exists(), "no output is written when an assertion fails");
    // Without asserts the run succeeds; without prints too, it prints only its summary.
    let (code, stdout, err) = run(&["--no-asserts"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.exists());
    // Per program: the first line, one of the loop (`n=1`) and the `fn`'s; then the summary.
    assert_eq!(stdout.lines().count(), B * 3 + 1, "{stdout}");
    let (code, stdout, err) = run(&["--no-asserts", "--quiet-prints"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn turned_off_they_leave_no_buffer_and_no_trace_in_the_code() {
    let s = session(PROGRAM, DebugOptions { prints: false, asserts: false });
    let a = args(Some(0));
    let request = InstanceRequest::of_arrays(a.iter().map(|(n, a)| (n, a)), []);
    let inst = s.instance("show", Target::CPU, &request).unwrap();
    assert!(inst.kernel().params.iter().all(|p| p.name != BUFFER_PARAM));
    let ir = tilec_midend::print::print_module(inst.module());
    assert!(!ir.contains("atomic_rmw") && !ir.contains("print") && !ir.contains("assert"), "{ir}");
    let (launch, bound) = s.run(&inst, a, 1).unwrap();
    assert!(launch.prints.lines.is_empty());
    assert_eq!(bound.array("X").unwrap().as_f32().unwrap()[0], x_data()[0] * 2.0);
}

#[cfg(feature = "llvm")]
#[test]
fn print_and_assert_assemble_with_ptxas() {
    let ptxas = tilec::find_ptxas().expect("ptxas (tools/install-deps.sh installs nvidia-cuda-nvcc-cu12)");
    let s = session(PROGRAM, DebugOptions::default());
    let a = args(None);
    let request = InstanceRequest::of_arrays(a.iter().map(|(n, a)| (n, a)), []);
    let inst = s.instance("show", Target::CPU, &request).unwrap();
    for lanes in [4, 32] {
        let simt = tilec_midend::simt::lower_kernel_with(inst.module(), inst.kernel(), lanes, true).unwrap();
        let p = tilec_codegen_ptx::compile(&simt, "sm_80").unwrap();
        tilec::ptxas(&ptxas, &p.text, "sm_80").unwrap_or_else(|e| panic!("{lanes} lanes: {e}"));
        assert!(p.text.contains("atom.global.add.u32"), "the records are reserved with an atomic add");
    }
}

/// Small matrices (language §3.6) print as tiles of their entries: one matrix as its rows, a
/// tile of them as a row of entries per matrix (zeros past the array), on every target.
#[test]
fn small_matrices_print_as_tiles_of_their_entries() {
    let src = "
kernel k(A: f32[P, 2, 2], B: mut f32[P]) grid(cdiv(P, 2)) {
    let p = program_id(0);
    let m = A[p];
    print(\"m\", m, m[0, :]);
    let t = A[2 * p:2 * p + 2];
    print(\"t\", t);
    B[p] = determinant(m);
}
";
    let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let want = [
        "k[0] m: m = [[0.0, 1.0], [2.0, 3.0]], m[0, :] = [0.0, 1.0]",
        "k[0] t: t = [[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]",
        "k[1] m: m = [[4.0, 5.0], [6.0, 7.0]], m[0, :] = [4.0, 5.0]",
        "k[1] t: t = [[8.0, 9.0, 10.0, 11.0], [0.0, 0.0, 0.0, 0.0]]",
    ];
    let s = Session::new(SourceSet::with_stdlib("mats.tile", src), SessionOptions::default());
    for target in targets() {
        let args: HashMap<String, ArgValue> = [
            ("A".to_string(), ArgValue::Array(HostArray::from_f32(&a, &[3, 2, 2]).unwrap())),
            ("B".to_string(), ArgValue::Array(HostArray::from_f32(&[0.0; 3], &[3]).unwrap())),
        ]
        .into_iter()
        .collect();
        let inst = s.instance("k", target, &InstanceRequest::of_args(&args, &HashMap::new())).expect("compiles");
        let (report, _) = s.run(&inst, args, 1).expect("runs");
        let lines: Vec<String> =
            report.prints.lines.iter().map(|l| l.split_once(' ').map_or(l.clone(), |x| x.1.to_string())).collect();
        assert_eq!(lines, want, "{target:?}");
    }
}
