//! A session: one program's sources, parsed once, with its options and its cache of compiled
//! kernel instances; everything from the element types and extents of a launch's arguments to
//! a launched kernel goes through it, on every target and from every entry point (the command
//! line's `run`, [`crate::Program`] and so Python, the tests).

use super::launcher::Launcher;
use super::signature::{sig, KernelSig};
use super::{Error, Target};
use crate::{CpuRunner, Parsed, SourceSet};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tilec_frontend::{GenericArg, Instances, TargetLimits};
use tilec_grammar::ast;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::{Kernel, Module, ParamKind, Scalar};
use tilec_runtime::{convert_scalar, ArgValue, Bound, LaunchValues, RunError};

/// Options that hold for every compile of a session.
#[derive(Debug, Clone, Default)]
pub struct SessionOptions {
    /// Treat warnings as errors (`--deny warnings`).
    pub deny_warnings: bool,
    /// Run the IR verifier before and after every pass (always in debug builds).
    pub verify: bool,
    /// The cache folder: the tuning records ([`Session::tune`]) that launches use for the tuned
    /// parameters the caller does not give, and the LLVM CPU backend's object code (a second
    /// process links it instead of compiling again); `None`: nothing is read or written (the
    /// command line, `Program::new` and Python use [`super::cache::default_dir`]).
    pub cache_dir: Option<std::path::PathBuf>,
    /// Tiered CPU code: an LLVM instance whose object is not in the compile cache runs
    /// Cranelift's code while LLVM compiles it in the background, and LLVM's once it is
    /// ready; launches of more than one timed run wait for it (`driver/tiered.rs`). The two
    /// give the same bits. The command line and Python use it when no CPU backend is named,
    /// [`crate::Program::new`] always.
    pub tiered: bool,
    /// Which of `print` and `assert` compiled code keeps (default: both; `--quiet-prints`
    /// and `--no-asserts` turn them off, and then they cost nothing).
    pub debug: tilec_midend::debug::DebugOptions,
    /// The lanes GPU programs are spread over when no device says it (`tilec build --lanes`),
    /// for the register counts of W0103; `None`: the target's ([`TargetLimits::lanes`]).
    /// Launches on Vulkan use the device's subgroup size.
    pub lanes: Option<u32>,
}

/// What a launch asks of an instance: the element types and extents of its array arguments,
/// by parameter name, and the generic arguments its caller gives (`T = f64`, `BM = 64`).
#[derive(Debug, Clone, Default)]
pub struct InstanceRequest {
    pub dtypes: Vec<(String, Scalar)>,
    pub shapes: Vec<(String, Vec<u64>)>,
    pub generics: Vec<(String, GenericArg)>,
}

/// The cache key of a compiled instance: the generic arguments given, then the const
/// parameters that take an argument's extent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct InstanceKey {
    kernel: String,
    target: Target,
    dtypes: Vec<(String, Scalar)>,
    generics: Vec<(String, GenericArg)>,
}

/// A kernel compiled for one target and one set of generic arguments, with what launches it.
pub struct Instance {
    pub(crate) module: Module,
    pub(crate) kernel: Kernel,
    /// The tuned configuration it was compiled with (from a tuning record), if any.
    pub(crate) tuned: Vec<(String, GenericArg)>,
    launcher: Launcher,
}

impl Instance {
    /// The kernel instance (its symbol, parameters with their types after instantiation).
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The tuned parameters it was compiled with, from the cache's tuning record for its
    /// kernel, target, device, dtypes and shapes (`BM = 64`); empty when none was used.
    pub fn tuned(&self) -> &[(String, GenericArg)] {
        &self.tuned
    }

    /// Waits until the instance runs its final code: with tiered CPU code
    /// ([`SessionOptions::tiered`]), until LLVM's is compiled. Errors: LLVM's code generation
    /// (E0901).
    pub fn settle(&self) -> Result<(), Error> {
        self.launcher.settle()
    }

    /// The module of the instance after the pass pipeline (its body, launch and `fn`s): what
    /// the SIMT lowering and the code generators start from.
    pub fn module(&self) -> &Module {
        &self.module
    }
}

impl InstanceRequest {
    /// The request of a launch of `args` (the element types and extents of its arrays) with
    /// the generic arguments `generics` given.
    pub fn of_args(
        args: &HashMap<String, tilec_runtime::ArgValue>,
        generics: &HashMap<String, GenericArg>,
    ) -> InstanceRequest {
        InstanceRequest::of_arrays(args, generics.iter().map(|(n, g)| (n.clone(), *g)))
    }

    /// The request of a launch whose arguments are `args` (by name; scalars are skipped), with
    /// the generic arguments `generics` given.
    pub fn of_arrays<'a>(
        args: impl IntoIterator<Item = (&'a String, &'a tilec_runtime::ArgValue)>,
        generics: impl IntoIterator<Item = (String, GenericArg)>,
    ) -> InstanceRequest {
        let typed = args.into_iter().filter_map(|(n, a)| Some((n.clone(), a.array_type()?)));
        let (dtypes, shapes) = typed.map(|(n, (e, s))| ((n.clone(), e), (n, s.to_vec()))).unzip();
        InstanceRequest { dtypes, shapes, generics: generics.into_iter().collect() }
    }
}

/// What one call of [`Session::launch`] did: the grid and flop count, the time of each run,
/// the device it ran on (`None` for the CPU), and the code generator whose code ran (on the
/// CPU with tiered code, Cranelift's until LLVM's is ready).
pub struct Launch {
    pub values: LaunchValues,
    pub times: Vec<Duration>,
    pub device: Option<String>,
    pub code: super::CodeGenerator,
    /// What the kernel's `print`s wrote in the last run (nothing for a kernel without).
    pub prints: super::Prints,
}

/// A program: its sources parsed once, its kernels' signatures, the session's options, and
/// the instances compiled so far.
pub struct Session {
    src: SourceSet,
    parsed: Parsed,
    /// The syntax errors, reported by every compile.
    parse_diags: Vec<Diagnostic>,
    sigs: Vec<KernelSig>,
    opts: SessionOptions,
    cache: Mutex<HashMap<InstanceKey, Arc<Instance>>>,
    /// Warnings of the instances compiled so far, for the command line to print.
    warnings: Mutex<Vec<Diagnostic>>,
    /// The tuning space of each kernel asked about so far.
    spaces: Mutex<HashMap<String, super::tune::Space>>,
    /// Tuning records looked up or written so far, by record key: launches read each file once.
    records: Mutex<HashMap<u64, Vec<(String, GenericArg)>>>,
    /// The digest of the sources, part of every record key (computed once).
    sources_key: OnceLock<u64>,
}

impl Session {
    /// Parses `src` (syntax errors are reported by the first compile or check) and reads its
    /// kernels: the main file's, then those of the modules it imports, transitively, which
    /// run by name too (docs/language.md §2.1).
    pub fn new(src: SourceSet, opts: SessionOptions) -> Session {
        let (parsed, parse_diags) = crate::with_stack(|| src.parse());
        let sigs = {
            let mut files: Vec<(&ast::File, &str)> = vec![(&parsed.main, src.main_src.as_str())];
            let mut i = 0;
            while i < files.len() {
                for item in &files[i].0.items {
                    let ast::Item::Import(m) = item else { continue };
                    let found = parsed.modules.iter().zip(&src.modules).find(|((n, _), _)| *n == m.name);
                    if let Some(((_, f), (_, t))) = found {
                        if !files.iter().any(|(g, _)| std::ptr::eq(*g, f)) {
                            files.push((f, t));
                        }
                    }
                }
                i += 1;
            }
            let kernels = files.iter().flat_map(|(f, t)| {
                f.items.iter().filter_map(move |i| if let ast::Item::Kernel(k) = i { Some(sig(k, t)) } else { None })
            });
            kernels.collect()
        };
        Session {
            src,
            parsed,
            parse_diags,
            sigs,
            opts,
            cache: Mutex::new(HashMap::new()),
            warnings: Mutex::default(),
            spaces: Mutex::default(),
            records: Mutex::default(),
            sources_key: OnceLock::new(),
        }
    }

    /// The sources.
    pub fn source(&self) -> &SourceSet {
        &self.src
    }

    /// The options.
    pub fn options(&self) -> &SessionOptions {
        &self.opts
    }

    /// The parsed sources, for the frontend.
    pub(crate) fn parsed(&self) -> &Parsed {
        &self.parsed
    }

    /// The tuning spaces asked about so far, by kernel.
    pub(crate) fn spaces(&self) -> &Mutex<HashMap<String, super::tune::Space>> {
        &self.spaces
    }

    /// The tuning records looked up or written so far, by record key.
    pub(crate) fn records(&self) -> &Mutex<HashMap<u64, Vec<(String, GenericArg)>>> {
        &self.records
    }

    /// The digest of the program's sources (the main file's and every module's).
    pub(crate) fn sources_key(&self) -> u64 {
        *self.sources_key.get_or_init(|| {
            let mut parts: Vec<&str> = vec![&self.src.main_src];
            for (n, t) in &self.src.modules {
                parts.push(n);
                parts.push(t);
            }
            super::cache::key(&parts)
        })
    }

    /// The kernels: the main file's in source order, then the imported modules'.
    pub fn kernels(&self) -> &[KernelSig] {
        &self.sigs
    }

    /// The semantic model of the program, every kernel instance checked with the CPU's limits,
    /// and its diagnostics (syntax errors first): what the language server shows. Runs on the
    /// driver's stack ([`crate::with_stack`]).
    pub fn analyze(&self) -> (Vec<Diagnostic>, tilec_frontend::semantic::Analysis) {
        crate::with_stack(|| {
            let all = Instances::All { fixed: HashMap::new() };
            let (_, more, analysis) = tilec_frontend::analyze(&self.parsed.sources(), &all);
            let mut diags = self.parse_diags.clone();
            diags.extend(more);
            (diags, analysis)
        })
    }

    /// The main file's syntax tree, and whether the sources have syntax errors.
    pub fn main_ast(&self) -> (&ast::File, bool) {
        (&self.parsed.main, self.parsed.syntax_errors)
    }

    /// Takes the warnings of the compiles so far.
    pub fn take_warnings(&self) -> Vec<Diagnostic> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Checks every kernel instance (type parameters take every type their bound allows)
    /// under `target`'s limits. Errors: every diagnostic of the program.
    pub fn check(&self, target: Target) -> Result<crate::Compiled, Error> {
        self.compile_all(&HashMap::new(), target, None)
    }

    /// Compiles every kernel instance (type parameters not in `fixed` take every type their
    /// bound allows; const parameters their value in `fixed`, else their default) under
    /// `target`'s limits, with the IR after pass `dump_after` if asked: what `tilec check`
    /// and `tilec build` compile. Errors: every diagnostic of the program.
    pub fn compile_all(
        &self,
        fixed: &HashMap<String, GenericArg>,
        target: Target,
        dump_after: Option<String>,
    ) -> Result<crate::Compiled, Error> {
        let limits = match (target, self.opts.lanes) {
            (Target::Cpu(_), _) | (_, None) => target.limits(),
            (_, Some(lanes)) => target.limits().with_lanes(lanes),
        };
        self.compile(&Instances::All { fixed: fixed.clone() }, limits, dump_after).map_err(Error::program)
    }

    fn compile(
        &self,
        instances: &Instances,
        limits: TargetLimits,
        dump_after: Option<String>,
    ) -> Result<crate::Compiled, Vec<Diagnostic>> {
        let opts = crate::CompileOptions {
            verify: self.opts.verify,
            dump_after,
            deny_warnings: self.opts.deny_warnings,
            limits: Some(limits),
            debug: self.opts.debug,
        };
        let mut c = crate::compile_parsed(&self.parsed, &self.parse_diags, instances, &opts)?;
        self.warnings.lock().unwrap_or_else(|p| p.into_inner()).append(&mut c.warnings);
        Ok(c)
    }

    /// The instance of `kernel` for `target` and `request`, compiled on first use and cached:
    /// the element types come from the arrays' dtypes unless given, const parameters written
    /// as an extent (`A: T[B, N, N]` with `const N`) from that extent unless given, the rest
    /// from their defaults (all inference is here). The program is checked for the instance
    /// under the target's limits before the device is opened. Errors: no such kernel (E0107), generic arguments that fit nothing, the
    /// program's errors for this instance under the target's limits, code generation (E0901
    /// CPU, E0504 GPU), no device (E0420/E0422 Vulkan, E0430/E0432 CUDA).
    pub fn instance(&self, kernel: &str, target: Target, request: &InstanceRequest) -> Result<Arc<Instance>, Error> {
        let tuned = self.tuned(kernel, target, request);
        if tuned.is_empty() {
            return self.instance_as(kernel, target, request, tuned);
        }
        let mut with_tuned = request.clone();
        with_tuned.generics.extend(tuned.iter().cloned());
        self.instance_as(kernel, target, &with_tuned, tuned)
    }

    /// [`Session::instance`] without a tuning record's configuration.
    pub(crate) fn instance_as(
        &self,
        kernel: &str,
        target: Target,
        request: &InstanceRequest,
        tuned: Vec<(String, GenericArg)>,
    ) -> Result<Arc<Instance>, Error> {
        // (An unknown kernel is the frontend's E0107, with its spelling suggestion.)
        let sig = self.sigs.iter().find(|k| k.name == kernel);
        let mut generics = request.generics.clone();
        for (g, param, axis) in sig.iter().flat_map(|s| &s.extent_generics) {
            if generics.iter().any(|(n, _)| n == g) {
                continue;
            }
            let extent = request.shapes.iter().find(|(n, _)| n == param).and_then(|(_, s)| s.get(*axis));
            if let Some(&x) = extent {
                generics.push((g.clone(), GenericArg::Const(x as i64)));
            }
        }
        generics.sort_by(|a, b| a.0.cmp(&b.0));
        let mut dtypes = request.dtypes.clone();
        dtypes.sort();
        let key = InstanceKey { kernel: kernel.to_string(), target, dtypes, generics };
        let cached = |c: &Mutex<HashMap<InstanceKey, Arc<Instance>>>| {
            c.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&key).cloned()
        };
        if let Some(inst) = cached(&self.cache) {
            return Ok(inst);
        }
        let inst = Arc::new(self.build_instance(&key, &request.shapes, tuned)?);
        let mut c = self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        Ok(c.entry(key).or_insert(inst).clone())
    }

    fn build_instance(
        &self,
        key: &InstanceKey,
        shapes: &[(String, Vec<u64>)],
        tuned: Vec<(String, GenericArg)>,
    ) -> Result<Instance, Error> {
        let dtypes: HashMap<String, Scalar> = key.dtypes.iter().cloned().collect();
        let shapes: HashMap<String, Vec<u64>> = shapes.iter().cloned().collect();
        let fixed: HashMap<String, GenericArg> = key.generics.iter().cloned().collect();
        let generics = crate::with_stack(|| {
            tilec_frontend::infer_generics(&self.parsed.sources(), &key.kernel, &dtypes, &shapes, &fixed)
        })
        .map_err(|d| Error::compile(vec![d]))?;
        let inst = Instances::One { kernel: key.kernel.clone(), generics };
        // The program's errors under the target's limits come first, whatever the machine has
        // (a Vulkan device's subgroup size, when one opens, for W0103); then the device,
        // before any code is generated for it.
        let module = self.compile(&inst, key.target.device_limits(), None).map_err(Error::compile)?.module;
        let Some(kernel) = module.kernels.first().cloned() else {
            return Err(Error::compile(vec![Diagnostic::error("E0107", format!("no kernel named `{}`", key.kernel))]));
        };
        let launcher = key.target.launcher(&module, self.opts.cache_dir.as_deref(), self.opts.tiered)?;
        Ok(Instance { module, kernel, tuned, launcher })
    }

    /// Launches `inst` on the arguments in `bound` `repeat` times (at least once), each run
    /// from the same inputs, and leaves the last run's results in `bound`. On a GPU a first,
    /// untimed launch comes before them, unless `repeat` is 0: then it is the one launch. On the CPU `mut`
    /// arrays are written in place; on a GPU they are copied to the device and back, except
    /// device arrays on CUDA, used in place. Errors: the E04xx codes of binding and launching,
    /// code generation for the device (E0504); an `assert` that failed (E0445).
    pub fn launch(&self, inst: &Instance, bound: &mut Bound, repeat: u32) -> Result<Launch, Error> {
        let mut launch = inst.launcher.launch(&inst.module, &inst.kernel, bound, repeat)?;
        launch.prints = super::prints::read(&self.src, &inst.module, &inst.kernel, bound)?;
        Ok(launch)
    }

    /// Binds `args` (by parameter name) to the parameters of `inst`: scalars are converted to
    /// their parameters' types (exactly, or E0414 naming the argument), then every argument is
    /// checked against its parameter (`tilec_runtime::bind`: dtypes, ranks, extents, `mut`
    /// arrays writable and not overlapping other arguments, optional arrays). Errors: an
    /// argument given twice (E0409), the E04xx codes of binding.
    pub fn bind(&self, inst: &Instance, args: impl IntoIterator<Item = (String, ArgValue)>) -> Result<Bound, Error> {
        let mut values: HashMap<String, ArgValue> = HashMap::new();
        for (name, value) in args {
            let value = match (value, inst.kernel.params.iter().find(|p| p.name == name).map(|p| &p.kind)) {
                (ArgValue::Scalar(c), Some(ParamKind::Scalar(ty))) => {
                    ArgValue::Scalar(convert_scalar(c, *ty).map_err(|e| Error::run(e.for_argument(&name)))?)
                }
                (v, _) => v,
            };
            if values.contains_key(&name) {
                let detail = format!("argument `{name}` is given twice");
                return Err(Error::run(RunError::Mismatch { detail }));
            }
            values.insert(name, value);
        }
        if super::prints::has_buffer(&inst.kernel) {
            let (name, buffer) = super::prints::buffer()?;
            values.insert(name, buffer);
        }
        Ok(tilec_runtime::bind(&inst.kernel, values)?)
    }

    /// Binds `args` to `inst` ([`Session::bind`]) and launches it `repeat` times
    /// ([`Session::launch`]); returns the launch and the arguments after it. Errors: those of
    /// both.
    pub fn run(
        &self,
        inst: &Instance,
        args: impl IntoIterator<Item = (String, ArgValue)>,
        repeat: u32,
    ) -> Result<(Launch, Bound), Error> {
        let mut bound = self.bind(inst, args)?;
        let launch = self.launch(inst, &mut bound, repeat)?;
        Ok((launch, bound))
    }
}

/// The CPU runner of an instance for the CPU that no session holds any more (its session
/// dropped): what [`CpuRunner::with_backend`] returns.
pub(super) fn into_cpu_runner(inst: Arc<Instance>) -> CpuRunner {
    match Arc::try_unwrap(inst).map(|i| i.launcher) {
        Ok(Launcher::Cpu(runner)) => *runner,
        _ => unreachable!("a CPU instance of a dropped session"),
    }
}
