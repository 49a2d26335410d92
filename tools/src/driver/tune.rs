//! Autotuning: a kernel's const parameters declared with candidates
//! (`const BM: i32 = 64 in [32, 64, 128]`) are tried on the caller's arguments and target, each
//! configuration checked against the default's outputs, and the fastest recorded in the cache
//! folder, keyed by the program's sources, the kernel, the target and device, the dtypes and the
//! extents rounded up to powers of two. Launches that fix none of the tuned parameters then
//! use the record ([`Session::instance`]).

use super::{cache, Error, InstanceRequest, Session, Target};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;
use tilec_frontend::GenericArg;
use tilec_midend::Scalar;
use tilec_runtime::{ArgValue, HostArray};

/// A tuning space: each tuned parameter with its candidates, in declaration order.
pub type Space = Vec<(String, Vec<GenericArg>)>;

/// How long each configuration is timed.
#[derive(Debug, Clone, Copy)]
pub struct TuneOptions {
    /// Timed launches of each configuration (their median counts); a configuration whose
    /// first launch takes more than twice the best median so far is not launched again.
    pub repeat: u32,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions { repeat: 5 }
    }
}

/// What became of one configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Timed, outputs agreeing with the default configuration's.
    Timed,
    /// Stopped after one launch: more than twice as slow as the best so far.
    Slower,
    /// Does not fit the target (its error or W0103 register warning, as `code: message`);
    /// not launched.
    Pruned(String),
    /// Compiled but failed to generate code or launch (`code: message`).
    Failed(String),
    /// Its outputs differ from the default configuration's beyond the dtype's tolerance: a bug
    /// in the kernel or in tilec, never chosen (what differs).
    Disagrees(String),
}

/// One configuration tried.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The tuned parameters' values.
    pub config: Vec<(String, GenericArg)>,
    pub verdict: Verdict,
    /// The median launch time (the one launch of a [`Verdict::Slower`] configuration).
    pub median: Option<Duration>,
}

/// The result of [`Session::tune`]: every configuration tried (the default first), the
/// fastest agreeing one, and the record written.
#[derive(Debug, Clone)]
pub struct Tuning {
    pub trials: Vec<Trial>,
    /// The index of the fastest [`Verdict::Timed`] trial.
    pub best: Option<usize>,
    /// Where the winner was recorded (`None` without a cache folder).
    pub record: Option<PathBuf>,
    /// The machine the trials ran on ([`Target::device_name`]).
    pub device: String,
}

/// `g` as `--generic` writes it: `64`, `f32`, `0.5`.
pub fn arg_text(g: &GenericArg) -> String {
    match g {
        GenericArg::Type(s) => s.name().to_string(),
        GenericArg::Const(v) => v.to_string(),
        GenericArg::Float(bits) => format!("{:?}", f64::from_bits(*bits)),
    }
}

/// A configuration as `BM=64, BN=32`.
pub fn config_text(config: &[(String, GenericArg)]) -> String {
    config.iter().map(|(n, g)| format!("{n}={}", arg_text(g))).collect::<Vec<_>>().join(", ")
}

impl Session {
    /// The tuning space of `kernel` (empty when it declares no candidates). Errors: no such
    /// kernel (E0107).
    pub fn tuning_space(&self, kernel: &str) -> Result<Space, Error> {
        let mut spaces = self.spaces().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = spaces.get(kernel) {
            return Ok(s.clone());
        }
        let space = crate::with_stack(|| tilec_frontend::tuning_space(&self.parsed().sources(), kernel))
            .map_err(|d| Error::compile(vec![d]))?;
        spaces.insert(kernel.to_string(), space.clone());
        Ok(space)
    }

    /// The recorded configuration of the tuned parameters that `request` does not give, for a
    /// launch of `kernel` on `target`, if the session has a cache folder and a valid record
    /// (tuned with the same given generic arguments) exists (one naming another kernel, a parameter not tuned or a value not among
    /// its candidates is ignored: records are never trusted).
    pub(crate) fn tuned(&self, kernel: &str, target: Target, request: &InstanceRequest) -> Vec<(String, GenericArg)> {
        let Some(dir) = &self.options().cache_dir else { return Vec::new() };
        let Ok(space) = self.tuning_space(kernel) else { return Vec::new() };
        // The parameters the caller gives are not tuned (the record is one made with them).
        let space: Space = space.into_iter().filter(|(n, _)| request.generics.iter().all(|(m, _)| m != n)).collect();
        if space.is_empty() {
            return Vec::new();
        }
        let Ok(device) = target.device_name() else { return Vec::new() };
        let key = self.record_key(kernel, target, &device, request);
        if let Some(known) = self.records().lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
            return known.clone();
        }
        let text = cache::read(dir, "tune", key).and_then(|b| String::from_utf8(b).ok());
        let found = text.and_then(|t| parse_record(&t, kernel, &space)).unwrap_or_default();
        self.records().lock().unwrap_or_else(|p| p.into_inner()).insert(key, found.clone());
        found
    }

    /// The key of the tuning record of `kernel` on `target`'s `device` for `request`.
    fn record_key(&self, kernel: &str, target: Target, device: &str, request: &InstanceRequest) -> u64 {
        let mut parts: Vec<String> =
            vec![env!("CARGO_PKG_VERSION").into(), kernel.into(), format!("{:016x}", self.sources_key())];
        parts.push(format!("{target:?}"));
        parts.push(device.into());
        // What the arrays given say, in terms of the declaration, so that a launch that gives
        // fewer arrays (`tilec run --out Y=..` makes `Y` itself) finds the same record: the
        // element type of each type parameter, and each shape variable's extent rounded up
        // to a power of two.
        let mut facts: Vec<String> = Vec::new();
        let sig = self.kernels().iter().find(|k| k.name == kernel);
        for p in sig.iter().flat_map(|k| &k.params).filter(|p| p.array) {
            let ty = p.ty.trim_start_matches("mut ").trim_end_matches('?');
            let Some((elem, dims)) = ty.split_once('[') else { continue };
            if let Some((_, d)) = request.dtypes.iter().find(|(n, _)| *n == p.name) {
                facts.push(format!("{}={}", elem.trim(), d.name()));
            }
            let shape = request.shapes.iter().find(|(n, _)| *n == p.name).map_or(&[][..], |(_, s)| &s[..]);
            for (dim, x) in dims.trim_end_matches(']').split(',').zip(shape) {
                facts.push(format!("{}={}", dim.trim(), x.next_power_of_two()));
            }
        }
        facts.sort();
        facts.dedup();
        parts.extend(facts);
        let mut fixed: Vec<String> = request.generics.iter().map(|(n, g)| format!("{n}={}", arg_text(g))).collect();
        fixed.sort();
        parts.extend(fixed);
        cache::key(&parts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Tunes `kernel` on `target` with the launch arguments `args` (host arrays and scalars;
    /// every configuration starts from copies of them, so they are not written) and the
    /// generic arguments `fixed` (whose tuned parameters are not tuned): every configuration of
    /// the tuning space, the default first, compiled (those that do not fit the target are
    /// pruned), launched `opts.repeat` times and its `mut` arrays compared with the default's;
    /// the fastest agreeing one is recorded in the cache folder. `progress` sees each trial as
    /// it is decided (with its index; the default's is 0). Errors: the default
    /// configuration's errors (it must compile and launch), E0444 for a kernel with nothing to
    /// tune or arguments in device memory.
    pub fn tune(
        &self,
        kernel: &str,
        target: Target,
        args: &HashMap<String, ArgValue>,
        fixed: &HashMap<String, GenericArg>,
        opts: &TuneOptions,
        progress: &mut dyn FnMut(usize, &Trial),
    ) -> Result<Tuning, Error> {
        let space: Space = self.tuning_space(kernel)?.into_iter().filter(|(n, _)| !fixed.contains_key(n)).collect();
        if space.is_empty() {
            let why = format!("kernel `{kernel}` has no const parameter with tuning candidates left to tune (`const BM: i32 = 64 in [32, 64, 128]`)");
            return Err(Error::coded("E0444", why));
        }
        if let Some(n) = args.iter().find(|(_, a)| matches!(a, ArgValue::Device(_))).map(|(n, _)| n) {
            let why = format!("argument `{n}` is in device memory: tuning launches on copies of host arrays");
            return Err(Error::coded("E0444", why));
        }
        let fixed_list: Vec<(String, GenericArg)> = fixed.iter().map(|(n, g)| (n.clone(), *g)).collect();
        let request = InstanceRequest::of_arrays(args, fixed_list.clone());
        // The default configuration: what a launch without a record compiles.
        let defaults = {
            let dtypes = request.dtypes.iter().cloned().collect();
            let shapes = request.shapes.iter().cloned().collect();
            crate::with_stack(|| {
                tilec_frontend::infer_generics(&self.parsed().sources(), kernel, &dtypes, &shapes, fixed)
            })
            .map_err(|d| Error::compile(vec![d]))?
        };
        let default: Vec<(String, GenericArg)> =
            space.iter().filter_map(|(n, _)| Some((n.clone(), *defaults.get(n)?))).collect();
        let mut configs = vec![default.clone()];
        for c in product(&space) {
            if c != default {
                configs.push(c);
            }
        }
        let gpu = !matches!(target, Target::Cpu(_));
        let mut trials: Vec<Trial> = Vec::with_capacity(configs.len());
        let mut reference: Option<Vec<(String, HostArray)>> = None;
        let mut best: Option<(usize, Duration)> = None;
        for config in configs {
            let mut req = request.clone();
            req.generics.extend(config.iter().cloned());
            self.take_warnings();
            let inst = self.instance_as(kernel, target, &req, Vec::new());
            let registers = self.take_warnings().into_iter().find(|w| gpu && w.code == "W0103");
            let first = trials.is_empty();
            let trial = |verdict, median| Trial { config: config.clone(), verdict, median };
            let inst = match (inst, registers) {
                (Err(e), _) if first => return Err(e),
                (Err(e), _) if e.kind() == super::ErrorKind::Program => {
                    trials.push(trial(Verdict::Pruned(first_line(&e)), None));
                    progress(trials.len() - 1, &trials[trials.len() - 1]);
                    continue;
                }
                (Err(e), _) => {
                    trials.push(trial(Verdict::Failed(first_line(&e)), None));
                    progress(trials.len() - 1, &trials[trials.len() - 1]);
                    continue;
                }
                (Ok(_), Some(w)) if !first => {
                    trials.push(trial(Verdict::Pruned(format!("{}: {}", w.code, w.message)), None));
                    progress(trials.len() - 1, &trials[trials.len() - 1]);
                    continue;
                }
                (Ok(i), _) => i,
            };
            let owned = args.iter().map(|(n, a)| (n.clone(), a.clone()));
            let launched = inst.settle().and_then(|()| self.run(&inst, owned, 1)).and_then(|(l1, bound)| {
                let slow = best.is_some_and(|(_, b)| l1.times[0] > 2 * b);
                if slow {
                    return Ok((vec![l1.times[0]], bound, l1.device, true));
                }
                let owned = args.iter().map(|(n, a)| (n.clone(), a.clone()));
                let (l, bound) = self.run(&inst, owned, opts.repeat.max(1))?;
                Ok((l.times, bound, l.device, false))
            });
            let (mut times, bound, _, slow) = match launched {
                Ok(x) => x,
                Err(e) if first => return Err(e),
                Err(e) => {
                    trials.push(trial(Verdict::Failed(first_line(&e)), None));
                    progress(trials.len() - 1, &trials[trials.len() - 1]);
                    continue;
                }
            };
            times.sort();
            let median = times[times.len() / 2];
            let outputs: Vec<(String, HostArray)> = inst
                .kernel()
                .params
                .iter()
                .filter(|p| matches!(p.kind, tilec_midend::ParamKind::Array { mutable: true, .. }))
                .filter_map(|p| Some((p.name.clone(), bound.array(&p.name)?.clone())))
                .collect();
            let verdict = match &reference {
                None => {
                    reference = Some(outputs);
                    Verdict::Timed
                }
                Some(r) => match disagreement(r, &outputs) {
                    Some(d) => Verdict::Disagrees(d),
                    None if slow => Verdict::Slower,
                    None => Verdict::Timed,
                },
            };
            if verdict == Verdict::Timed && best.is_none_or(|(_, b)| median < b) {
                best = Some((trials.len(), median));
            }
            trials.push(trial(verdict, Some(median)));
            progress(trials.len() - 1, &trials[trials.len() - 1]);
        }
        let best = best.map(|(i, _)| i);
        let name = target.device_name()?;
        let mut record = None;
        if let (Some(dir), Some(b)) = (&self.options().cache_dir, best) {
            let key = self.record_key(kernel, target, &name, &request);
            let config: serde_json::Map<String, serde_json::Value> =
                trials[b].config.iter().map(|(n, g)| (n.clone(), arg_text(g).into())).collect();
            let text = serde_json::json!({
                "tilec": env!("CARGO_PKG_VERSION"),
                "kernel": kernel,
                "target": format!("{target:?}"),
                "device": name,
                "config": config,
                "median_s": trials[b].median.map(|d| d.as_secs_f64()),
            });
            let written = cache::write(dir, "tune", key, format!("{text:#}\n").as_bytes()).map_err(|e| {
                Error::coded("E0400", format!("cannot write the tuning record in `{}`: {e}", dir.display()))
            })?;
            record = Some(written);
            self.records().lock().unwrap_or_else(|p| p.into_inner()).insert(key, trials[b].config.clone());
        }
        Ok(Tuning { trials, best, record, device: name })
    }
}

/// Every combination of the candidates of `space`, the first parameter varying slowest.
fn product(space: &Space) -> Vec<Vec<(String, GenericArg)>> {
    space.iter().fold(vec![Vec::new()], |acc, (name, values)| {
        acc.iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((name.clone(), *v));
                    c
                })
            })
            .collect()
    })
}

/// `code: message` of an error's first diagnostic.
fn first_line(e: &Error) -> String {
    e.diagnostics.first().map_or_else(|| e.to_string(), |d| format!("{}: {}", d.code, d.message))
}

/// The configuration in a tuning record, if it is one for `kernel` whose parameters are all in
/// `space` with values among their candidates.
fn parse_record(text: &str, kernel: &str, space: &Space) -> Option<Vec<(String, GenericArg)>> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if v["tilec"].as_str()? != env!("CARGO_PKG_VERSION") || v["kernel"].as_str()? != kernel {
        return None;
    }
    let recorded = v["config"].as_object()?;
    if recorded.len() != space.len() {
        return None;
    }
    let mut config = Vec::new();
    for (name, candidates) in space {
        let g = GenericArg::parse(recorded.get(name)?.as_str()?)?;
        if !candidates.contains(&g) {
            return None;
        }
        config.push((name.clone(), g));
    }
    (config.len() == space.len()).then_some(config)
}

/// How far apart two launches' `mut` arrays are, if beyond the tolerance of their element type
/// (relative to the reference's largest magnitude: 1e-4 for f32, 1e-10 for f64, 1e-2 for f16
/// and bf16; integers exactly; NaNs where the reference has them).
fn disagreement(reference: &[(String, HostArray)], got: &[(String, HostArray)]) -> Option<String> {
    for ((name, r), (_, g)) in reference.iter().zip(got) {
        let tol = match r.elem() {
            Scalar::F64 => 1e-10,
            Scalar::F32 => 1e-4,
            Scalar::F16 | Scalar::BF16 => 1e-2,
            _ => 0.0,
        };
        let (a, b) = (r.to_f64_vec(), g.to_f64_vec());
        let scale = a.iter().filter(|x| x.is_finite()).fold(1.0f64, |m, x| m.max(x.abs()));
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            let same = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= tol * scale;
            if !same {
                return Some(format!("`{name}` element {i}: {y} where the default configuration gives {x}"));
            }
        }
    }
    None
}
