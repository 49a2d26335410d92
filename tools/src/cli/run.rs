//! `tilec run`: read the `.npy` inputs, then through the driver's session infer the kernel's
//! generic arguments from their dtypes and extents and compile it for the target (the CPU,
//! Vulkan or CUDA), bind and check every argument, launch `--repeat` times from the same
//! inputs, report the median kernel time, and write the outputs atomically.

use super::{run_error, zeros_for_output};
use crate::Error;
use crate::SourceSet;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;
use tilec_midend::Scalar;
use tilec_runtime::{check_output_path, parse_scalar, read_npy, write_npys_atomic, ArgValue, HostArray};

/// A parsed `tilec run` request.
pub(crate) struct RunRequest<'a> {
    pub(crate) kernel: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) outs: &'a [String],
    /// `mut` arrays to print after the run (`--print`).
    pub(crate) prints: &'a [String],
    pub(crate) repeat: u32,
    pub(crate) fixed: &'a HashMap<String, GenericArg>,
    pub(crate) target: crate::Target,
}

fn split<'s>(flag: &str, s: &'s str, want: &str) -> Result<(&'s str, &'s str), Error> {
    s.split_once('=').ok_or_else(|| Error::usage("E0501", format!("`--{flag} {s}`: expected {want}")))
}

/// Scalar `--arg` values by name, as written.
pub(crate) type ScalarTexts = Vec<(String, String)>;

/// The `--arg` values: arrays read from their `.npy` files, scalars kept as text (their types
/// are their parameters', known once the kernel is instantiated: [`add_scalars`]). Errors:
/// E0501 for a malformed or repeated `--arg`, the `.npy` reader's.
pub(crate) fn read_args(flags: &[String]) -> Result<(HashMap<String, ArgValue>, ScalarTexts), Error> {
    let mut args: HashMap<String, ArgValue> = HashMap::new();
    let mut scalars: Vec<(String, String)> = Vec::new();
    for a in flags {
        let (n, v) = split("arg", a, "NAME=FILE.npy or NAME=VALUE")?;
        if args.contains_key(n) || scalars.iter().any(|(m, _)| m == n) {
            return Err(Error::usage("E0501", format!("`--arg {a}`: `{n}` is given twice")));
        }
        if v.ends_with(".npy") {
            args.insert(n.to_string(), ArgValue::Array(read_npy(v).map_err(run_error)?));
        } else {
            scalars.push((n.to_string(), v.to_string()));
        }
    }
    Ok((args, scalars))
}

/// Adds the scalar `--arg` values to `args`, parsed as their parameters' types (`f64` for a
/// name that is no parameter: binding reports it). Errors: E0414 naming the argument.
pub(crate) fn add_scalars(
    kernel: &tilec_midend::Kernel,
    scalars: ScalarTexts,
    args: &mut HashMap<String, ArgValue>,
) -> Result<(), Error> {
    for (n, v) in scalars {
        let ty = kernel.params.iter().find(|p| p.name == n).and_then(|p| p.kind.scalar_type()).unwrap_or(Scalar::F64);
        let value = parse_scalar(&v, ty).map_err(|e| run_error(e.for_argument(&n)))?;
        args.insert(n, ArgValue::Scalar(value));
    }
    Ok(())
}

/// Runs the request; prints one line with the grid and the median time.
pub(crate) fn run(
    src: &SourceSet,
    req: &RunRequest<'_>,
    out: &mut dyn Write,
    lints: &mut super::Lints,
) -> Result<(), Error> {
    // Outputs first: a missing or read-only directory is reported before a long run.
    let mut outputs: Vec<(String, PathBuf)> = Vec::new();
    for o in req.outs {
        let (n, p) = split("out", o, "NAME=FILE.npy")?;
        let p = PathBuf::from(p);
        if let Some((m, _)) = outputs.iter().find(|(_, q)| same_file(q, &p)) {
            return Err(Error::usage("E0501", format!("`--out {o}`: `{m}` is written to the same file")));
        }
        check_output_path(&p).map_err(run_error)?;
        outputs.push((n.to_string(), p));
    }
    // Arrays are read next: their dtypes choose the kernel's element types.
    let (mut args, scalars) = read_args(req.args)?;
    let session = crate::driver::Session::new(
        src.clone(),
        crate::driver::SessionOptions {
            deny_warnings: lints.deny,
            verify: false,
            cache_dir: lints.cache_dir.clone(),
            tiered: lints.tiered,
            debug: lints.debug,
            lanes: None,
        },
    );
    let request = crate::driver::InstanceRequest::of_args(&args, req.fixed);
    let inst = session.instance(req.kernel, req.target, &request);
    lints.found.append(&mut session.take_warnings());
    let inst = inst?;
    let kernel = inst.kernel().clone();
    add_scalars(&kernel, scalars, &mut args)?;
    for (n, _) in &outputs {
        if !args.contains_key(n) {
            let arr = zeros_for_output(&kernel, &args, n)?;
            args.insert(n.clone(), ArgValue::Array(arr));
        }
    }
    // (The command line's advice for a missing argument: `--arg NAME=FILE.npy`.)
    let mut bound = session.bind(&inst, args).map_err(|e| e.run_error().map_or(e.clone(), |r| run_error(r.clone())))?;
    for n in outputs.iter().map(|(n, _)| n).chain(req.prints) {
        bound.output(&kernel, n).map_err(run_error)?;
    }
    let crate::driver::Launch { values: launch, mut times, device, prints, .. } =
        session.launch(&inst, &mut bound, req.repeat)?;
    // The kernel's `print` lines, in program order, before anything else of the run.
    for l in &prints.lines {
        let _ = writeln!(out, "{l}");
    }
    if prints.dropped > 0 {
        lints.found.push(crate::driver::Prints::dropped_warning(prints.dropped));
    }
    // All outputs or none: every file is written to a temporary first, then all are renamed.
    let mut arrays: Vec<(&Path, &HostArray)> = Vec::new();
    for (n, p) in &outputs {
        arrays.push((p.as_path(), bound.output(&kernel, n).map_err(run_error)?));
    }
    write_npys_atomic(&arrays).map_err(run_error)?;
    times.sort();
    let median = times[times.len() / 2].as_secs_f64();
    let g = launch.grid;
    let runs = times.len();
    let mut line = format!(
        "{}: grid [{}, {}, {}], {runs} run{}, median {:.3} ms",
        kernel.symbol,
        g[0],
        g[1],
        g[2],
        if runs == 1 { "" } else { "s" },
        median * 1e3
    );
    if let Some(f) = launch.flops {
        line.push_str(&format!(", {:.2} GFLOP/s", f / median / 1e9));
    }
    if let Some(d) = device {
        line.push_str(&format!(" on {d}"));
    }
    if !inst.tuned().is_empty() {
        line.push_str(&format!(" (tuned: {})", crate::driver::config_text(inst.tuned())));
    }
    let _ = writeln!(out, "{line}");
    for n in req.prints {
        let _ = writeln!(out, "{n} = {}", summary(bound.output(&kernel, n).map_err(run_error)?));
    }
    Ok(())
}

/// `--print`: an array's values in its element type's shortest form, all of them up to 16
/// elements (`[1.5, -2]`), else the first and last three with the shape, minimum and maximum
/// (`f32[4096, 92] [0.1, 0.2, 0.3, .., 0.7, 0.8, 0.9] min -1 max 1`).
fn summary(a: &HostArray) -> String {
    let v = a.to_f64_vec();
    let show = |x: f64| {
        let sci = x != 0.0 && x.is_finite() && !(1e-4..1e16).contains(&x.abs()) && a.elem().is_any_float();
        match a.elem() {
            Scalar::F32 | Scalar::F16 | Scalar::BF16 if sci => format!("{:e}", x as f32),
            Scalar::F32 | Scalar::F16 | Scalar::BF16 => format!("{}", x as f32),
            _ if sci => format!("{x:e}"),
            _ => format!("{x}"),
        }
    };
    let list = |xs: &[f64]| xs.iter().map(|x| show(*x)).collect::<Vec<_>>().join(", ");
    if v.len() <= 16 {
        return format!("[{}]", list(&v));
    }
    let dims: Vec<String> = a.shape().iter().map(u64::to_string).collect();
    let (min, max) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    format!(
        "{}[{}] [{}, .., {}] min {} max {}",
        a.elem().name(),
        dims.join(", "),
        list(&v[..3]),
        list(&v[v.len() - 3..]),
        show(min),
        show(max)
    )
}

/// Whether `a` and `b` name the same file: the same name in the same directory (after
/// resolving the directories), or the same text when a directory cannot be resolved.
fn same_file(a: &Path, b: &Path) -> bool {
    let resolve = |p: &Path| {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        Some(std::fs::canonicalize(dir).ok()?.join(p.file_name()?))
    };
    match (resolve(a), resolve(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}
