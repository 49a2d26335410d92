//! The tilec driver, as a library: source sets (a main file plus the standard library), the
//! whole compile pipeline (parse, check, lower, passes with the verifier), diagnostic
//! rendering (terminal and JSON), and one-call CPU launches on your own buffers.
//!
//! ```no_run
//! use std::collections::HashMap;
//! use tilec::{SourceSet, CpuRunner};
//! use tilec_runtime::{ArgValue, HostArray};
//!
//! let src = SourceSet::with_stdlib("prog.tile", std::fs::read_to_string("prog.tile").unwrap());
//! let mut args = HashMap::new();
//! args.insert("A".to_string(), ArgValue::Array(HostArray::from_f32(&[4.0], &[1, 1, 1]).unwrap()));
//! args.insert("eps".to_string(), ArgValue::Scalar(tilec_midend::Const::Float(1e-6, tilec_midend::Scalar::F32)));
//! let runner = CpuRunner::new(&src, "potrf_batched", &args, &HashMap::new()).unwrap();
//! let (bound, _) = runner.run(args).unwrap();
//! ```

mod api;
pub mod cli;
pub mod driver;
mod explain;
pub mod lsp;
mod render;
mod version;

pub use api::{Args, Element, Launched, Program, ScalarArg};
pub use driver::{cuda_launch, find_ptxas, find_ptxas_13, ptxas, vulkan_launch, PtxasReport};
pub use driver::{dtypes_of, shapes_of, CpuRunner, RunOutcome};
pub use driver::{Error, ErrorKind, GenericSig, Instance, KernelSig, ParamSig, SessionOptions, Target};
/// The `half` crate, whose `f16` and `bf16` slices are `f16`/`bf16` array arguments.
pub use half;
pub use render::{render_diagnostics, ErrorFormat};
pub use tilec_codegen_cpu::CpuBackend;
pub use tilec_frontend::GenericArg;
pub use version::BuildInfo;

use std::collections::HashMap;
use tilec_frontend::{Instances, Sources};
use tilec_grammar::ast;
use tilec_grammar::diag::{Diagnostic, Severity};
use tilec_midend::passes::{run_pipeline, PipelineOptions};
use tilec_midend::{Module, Scalar};

/// The standard library modules, by import name, with their source text.
pub const STDLIB: &[(&str, &str)] = &[("linalg", include_str!("../../stdlib/linalg.tile"))];

/// A program's sources: the main file and the modules it may import.
#[derive(Debug, Clone)]
pub struct SourceSet {
    /// File name of the main source, for diagnostics.
    pub main_name: String,
    pub main_src: String,
    /// `(import name, source text)` of every importable module.
    pub modules: Vec<(String, String)>,
}

/// A parsed source set.
pub struct Parsed {
    pub main: ast::File,
    pub modules: Vec<(String, ast::File)>,
    /// Whether parsing reported errors.
    pub syntax_errors: bool,
}

impl SourceSet {
    /// A main file with the standard library importable.
    pub fn with_stdlib(name: impl Into<String>, src: impl Into<String>) -> SourceSet {
        SourceSet {
            main_name: name.into(),
            main_src: src.into(),
            modules: STDLIB.iter().map(|(n, s)| (n.to_string(), s.to_string())).collect(),
        }
    }

    /// The text of the module a diagnostic points into (`None`: the main file), with its
    /// display name.
    pub fn text_of(&self, source: Option<&str>) -> (String, &str) {
        match source.and_then(|s| self.modules.iter().find(|(n, _)| n == s)) {
            Some((n, t)) => (format!("stdlib/{n}.tile"), t.as_str()),
            None => (self.main_name.clone(), self.main_src.as_str()),
        }
    }

    /// Parses every source. Syntax errors of modules are tagged with the module name.
    pub fn parse(&self) -> (Parsed, Vec<Diagnostic>) {
        let (main, mut diags) = tilec_grammar::parse(&self.main_src);
        let mut modules = Vec::new();
        for (n, s) in &self.modules {
            let (f, ds) = tilec_grammar::parse(s);
            diags.extend(ds.into_iter().map(|mut d| {
                d.source = Some(n.clone());
                d
            }));
            modules.push((n.clone(), f));
        }
        let syntax_errors = !diags.is_empty();
        (Parsed { main, modules, syntax_errors }, diags)
    }
}

impl Parsed {
    /// The frontend's view of the parsed sources.
    pub fn sources(&self) -> Sources<'_> {
        Sources {
            main: &self.main,
            modules: self.modules.iter().map(|(n, f)| (n.clone(), f)).collect(),
            syntax_errors: self.syntax_errors,
        }
    }
}

/// Options of [`compile`].
#[derive(Debug, Clone, Default)]
pub struct CompileOptions {
    /// Run the IR verifier before and after every pass.
    pub verify: bool,
    /// Capture the IR after the named pass.
    pub dump_after: Option<String>,
    /// Treat warnings as errors (`--deny warnings`).
    pub deny_warnings: bool,
    /// The target whose resource limits apply (default: the CPU's).
    pub limits: Option<tilec_frontend::TargetLimits>,
    /// Which of `print` and `assert` the code keeps (default: both).
    pub debug: tilec_midend::debug::DebugOptions,
}

/// The result of [`compile`]: the module after all passes, the IR dump if asked, and the
/// warnings (W0xxx) of the program.
pub struct Compiled {
    pub module: Module,
    pub dump: Option<String>,
    pub warnings: Vec<Diagnostic>,
}

/// Bytes of stack the frontend and the passes run on ([`with_stack`]): their recursion over
/// a statement's expression tree, which E0005 bounds at 1024 operators, needs more than the
/// 2 MiB that Rust gives spawned threads; virtual memory, committed only as it is touched.
pub const COMPILER_STACK: usize = 256 << 20;

/// Runs `f` on a thread of its own with a [`COMPILER_STACK`]-byte stack and returns its result
/// (a panic in `f` resumes in the caller), so that a deep but legal source never overflows
/// the caller's stack, whatever thread an embedder compiles from (the way rustc runs its
/// driver on a thread with a stack of its choosing). Where no thread can be started, `f`
/// runs on the caller's stack.
pub fn with_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let job = std::sync::Mutex::new(Some(f));
    let run = || job.lock().unwrap_or_else(|p| p.into_inner()).take().map(|f| f());
    let spawned = std::thread::scope(|s| {
        let h =
            std::thread::Builder::new().name("tilec-compile".into()).stack_size(COMPILER_STACK).spawn_scoped(s, run);
        h.map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
    });
    match spawned {
        Ok(Some(r)) => r,
        _ => run().expect("the job runs once"),
    }
}

/// Parses, checks and lowers `src` and runs the pass pipeline ([`with_stack`]). Errors are
/// diagnostics (with the warnings after them); a verifier failure (a compiler bug) is
/// reported as E0900.
pub fn compile(src: &SourceSet, instances: &Instances, opts: &CompileOptions) -> Result<Compiled, Vec<Diagnostic>> {
    with_stack(|| {
        let (parsed, diags) = src.parse();
        compile_here(&parsed, diags, instances, opts)
    })
}

/// [`compile`] of sources already parsed (`parsed`, with the syntax errors `parse_diags`),
/// as a [`driver::Session`] keeps them.
pub(crate) fn compile_parsed(
    parsed: &Parsed,
    parse_diags: &[Diagnostic],
    instances: &Instances,
    opts: &CompileOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    with_stack(|| compile_here(parsed, parse_diags.to_vec(), instances, opts))
}

/// [`compile`] on the caller's stack.
fn compile_here(
    parsed: &Parsed,
    mut diags: Vec<Diagnostic>,
    instances: &Instances,
    opts: &CompileOptions,
) -> Result<Compiled, Vec<Diagnostic>> {
    let limits = opts.limits.unwrap_or(tilec_frontend::TargetLimits::CPU);
    let (mut module, more) = tilec_frontend::compile_for(&parsed.sources(), instances, &limits);
    diags.extend(more);
    if opts.deny_warnings {
        for d in diags.iter_mut().filter(|d| d.severity == Severity::Warning) {
            d.severity = Severity::Error;
            d.notes.push("`--deny warnings` makes every warning an error".to_string());
        }
    }
    let (errors, warnings): (Vec<Diagnostic>, Vec<Diagnostic>) =
        diags.into_iter().partition(|d| d.severity == Severity::Error);
    if !errors.is_empty() {
        // Report in source order: the main file first, then imported modules.
        let mut diags = errors;
        diags.sort_by_key(|d| (d.source.clone(), d.labels.first().map(|l| l.span.start)));
        diags.extend(warnings);
        return Err(diags);
    }
    tilec_midend::debug::strip(&mut module, opts.debug);
    let popts = PipelineOptions { verify: opts.verify || cfg!(debug_assertions), dump_after: opts.dump_after.clone() };
    match run_pipeline(&mut module, &popts) {
        Ok(dump) => Ok(Compiled { module, dump, warnings }),
        Err(e) => Err(vec![verifier_failure(e)]),
    }
}

/// E0900 for IR that fails the verifier after a pass (a compiler bug), with the first ten
/// errors as notes.
pub(crate) fn verifier_failure((pass, errs): tilec_midend::passes::PassError) -> Diagnostic {
    let mut d = Diagnostic::error("E0900", format!("internal compiler error: the IR verifier failed after `{pass}`"));
    for e in errs.iter().take(10) {
        d = d.note(e.to_string());
    }
    d.help("this is a bug in tilec; please report it with the program")
}

/// Infers a kernel's generic parameters from argument dtypes and shapes (see
/// [`tilec_frontend::infer_generics`]).
pub fn infer_generics(
    src: &SourceSet,
    kernel: &str,
    dtypes: &HashMap<String, Scalar>,
    shapes: &HashMap<String, Vec<u64>>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<HashMap<String, GenericArg>, Vec<Diagnostic>> {
    with_stack(|| {
        let (parsed, diags) = src.parse();
        if !diags.is_empty() {
            return Err(diags);
        }
        tilec_frontend::infer_generics(&parsed.sources(), kernel, dtypes, shapes, fixed).map_err(|d| vec![d])
    })
}
