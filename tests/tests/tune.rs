//! Autotuning through the driver (`Session::tune`, `tilec tune`): the fastest configuration
//! of a kernel's tuning candidates is found and recorded, configurations that disagree with
//! the default are never chosen, those that do not fit are pruned, and launches that fix no
//! tuned parameter use the record (a corrupt one is ignored).

use std::collections::HashMap;
use tilec::driver::{InstanceRequest, Session, TuneOptions, Verdict};
use tilec::{GenericArg, SessionOptions, SourceSet, Target};
use tilec_midend::Scalar;
use tilec_runtime::{ArgValue, HostArray};

/// `REPS` repeats the same work (2000 times by default: slow), `WRONG = 1` changes the result,
/// and `W = 65536` is a tile over the 32768 per extent that tiles may have on the CPU.
const PROGRAM: &str = "
kernel work<const REPS: i32 = 2000 in [1, 2000], const WRONG: i32 = 0 in [0, 1], const W: i32 = 1024 in [1024, 65536]>(
    X: f32[N], Y: mut f32[N]) grid(cdiv(N, W)) {
    let i0 = program_id(0) * W;
    let t = tile<f32, W>::zeros();
    t[:] = X[i0:i0+W];
    let acc = tile<f32, W>::zeros();
    for r in 0..REPS {
        acc = acc * 0.0 + t * 2.0;
    }
    Y[i0:i0+W] = acc + (WRONG as f32);
}
";

/// Held by the tests that time launches: the CPU launcher's one thread pool would otherwise
/// run two tests' launches in turn, and a short configuration's time would include the wait
/// for the other test's long one (REPS = 1 measured at 27 ms beside a tuning of REPS = 2000).
static TIMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timing() -> std::sync::MutexGuard<'static, ()> {
    TIMING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn cache_dir(test: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("tilec-tune-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn session(dir: &std::path::Path) -> Session {
    let opts = SessionOptions { cache_dir: Some(dir.to_path_buf()), ..Default::default() };
    Session::new(SourceSet::with_stdlib("work.tile", PROGRAM), opts)
}

fn args(n: usize) -> HashMap<String, ArgValue> {
    let x: Vec<f64> = (0..n).map(|i| (i % 7) as f64 - 3.0).collect();
    let arr = |v: &[f64]| ArgValue::Array(HostArray::from_f64_as(Scalar::F32, v, &[n as u64]).expect("array"));
    HashMap::from([("X".to_string(), arr(&x)), ("Y".to_string(), arr(&vec![0.0; n]))])
}

fn value(config: &[(String, GenericArg)], name: &str) -> Option<GenericArg> {
    config.iter().find(|(n, _)| n == name).map(|(_, g)| *g)
}

#[test]
fn tuning_picks_the_fastest_agreeing_configuration_and_launches_use_it() {
    let _serial = timing();
    let dir = cache_dir("fastest");
    let s = session(&dir);
    let args = args(1 << 16);
    let tuning =
        s.tune("work", Target::CPU, &args, &HashMap::new(), &TuneOptions { repeat: 3 }, &mut |_, _| {}).expect("tunes");
    assert_eq!(tuning.trials.len(), 8);
    let default = &tuning.trials[0];
    assert_eq!(value(&default.config, "REPS"), Some(GenericArg::Const(2000)));
    assert_eq!(default.verdict, Verdict::Timed);
    for t in &tuning.trials {
        let wrong = value(&t.config, "WRONG") == Some(GenericArg::Const(1));
        let wide = value(&t.config, "W") == Some(GenericArg::Const(65536));
        match &t.verdict {
            Verdict::Pruned(why) => assert!(wide && why.contains("65536"), "{t:?}"),
            Verdict::Disagrees(why) => assert!(wrong && !wide && why.contains("`Y`"), "{t:?}"),
            v => assert!(!wrong && !wide, "{v:?}: {t:?}"),
        }
    }
    let best = &tuning.trials[tuning.best.expect("a winner")];
    assert_eq!(value(&best.config, "REPS"), Some(GenericArg::Const(1)), "{tuning:#?}");
    assert_eq!(value(&best.config, "WRONG"), Some(GenericArg::Const(0)));
    let record = tuning.record.expect("recorded");
    assert!(record.starts_with(&dir));

    // A new session (another process) launches the recorded configuration, and the default
    // when the caller fixes a tuned parameter.
    let s2 = session(&dir);
    let req = InstanceRequest::of_args(&args, &HashMap::new());
    let inst = s2.instance("work", Target::CPU, &req).expect("an instance");
    assert_eq!(inst.tuned(), &best.config[..]);
    let (_, bound) = s2.run(&inst, args.clone(), 1).expect("runs");
    let y = bound.array("Y").expect("Y").to_f64_vec();
    assert_eq!(y[..7], [-6.0, -4.0, -2.0, 0.0, 2.0, 4.0, 6.0]);
    let fixed = HashMap::from([("REPS".to_string(), GenericArg::Const(2000))]);
    let inst = s2.instance("work", Target::CPU, &InstanceRequest::of_args(&args, &fixed)).expect("an instance");
    assert!(inst.tuned().is_empty());
    // Another extent bucket has no record.
    let inst = s2.instance("work", Target::CPU, &InstanceRequest::of_args(&self::args(1000), &HashMap::new()));
    assert!(inst.expect("an instance").tuned().is_empty());

    // A corrupt record is ignored, never trusted.
    std::fs::write(&record, "{\"tilec\": \"0.1.0\", \"kernel\": \"work\", \"config\": {\"REPS\": \"7\"")
        .expect("write");
    let s3 = session(&dir);
    assert!(s3.instance("work", Target::CPU, &req).expect("an instance").tuned().is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn tune_reports_kernels_without_candidates_and_fixed_spaces() {
    let dir = cache_dir("nothing");
    let s = session(&dir);
    let fixed: HashMap<String, GenericArg> = ["REPS", "WRONG", "W"]
        .iter()
        .map(|n| (n.to_string(), GenericArg::Const(if *n == "W" { 1024 } else { 1 })))
        .collect();
    let e = s
        .tune("work", Target::CPU, &args(64), &fixed, &TuneOptions::default(), &mut |_, _| {})
        .expect_err("nothing to tune");
    assert_eq!(e.code(), "E0444");
    let e = s
        .tune("wrok", Target::CPU, &args(64), &HashMap::new(), &TuneOptions::default(), &mut |_, _| {})
        .expect_err("no kernel");
    assert_eq!(e.code(), "E0107");
}

/// `tilec tune` prints every configuration and the record; `tilec run` then says it used it.
#[test]
fn tilec_tune_then_run_uses_the_winner() {
    let _serial = timing();
    let dir = cache_dir("cli");
    std::fs::create_dir_all(&dir).expect("dir");
    let prog = dir.join("work.tile");
    std::fs::write(&prog, PROGRAM).expect("program");
    let n = 1 << 16;
    let x: Vec<f32> = (0..n).map(|i| (i % 5) as f32).collect();
    let npy = |name: &str, v: &[f32]| {
        let a = HostArray::from_f64_as(Scalar::F32, &v.iter().map(|x| *x as f64).collect::<Vec<_>>(), &[n as u64]);
        let p = dir.join(name);
        tilec_runtime::write_npy_atomic(&p, &a.expect("array")).expect("npy");
        p.display().to_string()
    };
    let (xp, yp) = (npy("x.npy", &x), npy("y.npy", &vec![0.0; n]));
    let cache = dir.join("cache").display().to_string();
    let p = prog.display().to_string();
    let (xa, ya) = (format!("X={xp}"), format!("Y={yp}"));
    // `tilec CMD work.tile` on Cranelift (the default CPU backend is LLVM in builds with it)
    // with the cache, the kernel and X, then `rest`.
    let cli = |cmd: &str, rest: &[&str]| {
        let mut a = vec!["--cache-dir", &cache, cmd, &p, "--backend", "cranelift", "--kernel", "work", "--arg", &xa];
        a.extend_from_slice(rest);
        tilec_tests::cli_ok(&a)
    };
    let out = cli("tune", &["--arg", &ya, "--repeat", "2"]);
    assert!(out.starts_with("work: 8 configurations on cpu (Cranelift)\n"), "{out}");
    assert!(out.contains("REPS=2000, WRONG=0, W=1024") && out.contains("(default)"), "{out}");
    assert!(out.contains("DISAGREES") && out.contains("pruned: E0"), "{out}");
    assert!(out.contains("best: REPS=1, WRONG=0, W=1024 (") && out.contains("recorded in "), "{out}");
    let out = cli("run", &["--out", &ya]);
    assert!(out.contains("(tuned: REPS=1, WRONG=0, W=1024)"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
