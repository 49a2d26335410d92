//! The pass pipeline: named passes with one-line summaries, run in order, with the verifier
//! after each pass (when asked) and the IR text captured after a named pass (`--dump-after`).

use crate::ir::Module;
use crate::verify::{verify, VerifyError};

/// A pass: its name, a one-line summary and its entry point.
pub struct Pass {
    pub name: &'static str,
    pub summary: &'static str,
    pub run: fn(&mut Module),
}

/// The passes of the CPU path, in order.
pub const PASSES: &[Pass] = &[
    Pass { name: "inline", summary: "replace every call of a `fn` by its body", run: crate::inline::run },
    Pass {
        name: "lower-debug",
        summary: "turn print and assert into writes of the kernel's debug buffer",
        run: crate::debug::lower::run,
    },
    Pass { name: "const-fold", summary: "evaluate scalar operations on constants", run: crate::fold::run },
    Pass {
        name: "fuse-maps",
        summary:
            "merge chains of element-wise maps (and of large tiles' arithmetic) and maps of filled tiles into one map",
        run: crate::mapfuse::run,
    },
    Pass {
        name: "cse",
        summary: "compute an op that repeats an earlier one (same operands) once",
        run: crate::cse::run,
    },
    Pass {
        name: "simplify",
        summary: "fuse t -/+ outer(u, v) into rank1 updates; remove dead code",
        run: crate::simplify::run,
    },
];

/// Passes that both CPU backends run after [`PASSES`], on their own copy of the module
/// ([`for_cpu`]): rewrites that keep every result's bits (up to the sign and payload of NaNs)
/// and pay off in CPU code but not in the GPU lowerings', which keep the form the shared
/// pipeline leaves.
pub const CPU_PASSES: &[Pass] = &[
    Pass {
        name: "guard-select",
        summary: "compute a select's exp/log/sin/.. operand only when it is chosen",
        run: crate::selectguard::run,
    },
    Pass {
        name: "gather-rows",
        summary: "load a gather of whole rows (`A[ids, lo:lo+C]`) a row at a time",
        run: crate::rowgather::run,
    },
];

/// Passes that the LLVM CPU backend runs after [`CPU_PASSES`] ([`for_cpu`] with `llvm`): they
/// pay off in its code, but not with Cranelift.
pub const LLVM_CPU_PASSES: &[Pass] = &[Pass {
    name: "block-rank1",
    summary: "turn loops of rank-1 updates read from arrays into tile products over blocks of 16",
    run: crate::rank1blocks::run,
}];

/// The passes a CPU backend runs after [`PASSES`]: [`CPU_PASSES`], then for the LLVM backend
/// (`llvm`) [`LLVM_CPU_PASSES`].
pub fn cpu_passes(llvm: bool) -> impl Iterator<Item = &'static Pass> {
    CPU_PASSES.iter().chain(LLVM_CPU_PASSES.iter().filter(move |_| llvm))
}

/// Runs [`cpu_passes`] over `m`, with `opts` as [`run_pipeline`] (no verifier run before the
/// first: `m` has been through [`PASSES`]).
pub fn run_cpu_passes(m: &mut Module, llvm: bool, opts: &PipelineOptions) -> Result<Option<String>, PassError> {
    run_passes(m, cpu_passes(llvm), opts)
}

/// A copy of `m` after [`cpu_passes`], verified after each pass in debug builds. Errors: the
/// verifier's, with the name of the pass (a compiler bug).
pub fn for_cpu(m: &Module, llvm: bool) -> Result<Module, PassError> {
    let mut m = m.clone();
    run_cpu_passes(&mut m, llvm, &PipelineOptions { verify: cfg!(debug_assertions), dump_after: None })?;
    Ok(m)
}

/// The verifier's errors, with the name of the pass after which they were found.
pub type PassError = (String, Vec<VerifyError>);

/// Options of [`run_pipeline`].
#[derive(Debug, Clone, Default)]
pub struct PipelineOptions {
    /// Run the verifier before the first pass and after every pass.
    pub verify: bool,
    /// Capture the printed IR after the pass with this name.
    pub dump_after: Option<String>,
}

/// Runs every pass over `m`. Returns the captured dump (if asked), or the verifier's errors
/// with the name of the pass after which they were found (`"frontend"` before the first).
pub fn run_pipeline(m: &mut Module, opts: &PipelineOptions) -> Result<Option<String>, PassError> {
    if opts.verify {
        verify(m).map_err(|e| ("frontend".to_string(), e))?;
    }
    run_passes(m, PASSES, opts)
}

/// Runs `passes` over `m` in order, verifying after each when asked and capturing the printed
/// module after the one named by `opts.dump_after`.
fn run_passes<'a>(
    m: &mut Module,
    passes: impl IntoIterator<Item = &'a Pass>,
    opts: &PipelineOptions,
) -> Result<Option<String>, PassError> {
    let mut dump = None;
    for p in passes {
        (p.run)(m);
        if opts.verify {
            verify(m).map_err(|e| (p.name.to_string(), e))?;
        }
        if opts.dump_after.as_deref() == Some(p.name) {
            dump = Some(crate::print::print_module(m));
        }
    }
    Ok(dump)
}
