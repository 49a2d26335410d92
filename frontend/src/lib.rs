//! The tilec frontend: name resolution, type and shape checking, constant evaluation and
//! lowering of a parsed `.tile` program to Tile IR, one instance per kernel and element type.
//! Checking goes on after an error, so one run reports every error of a file; the module it
//! returns is only meaningful when no error was reported.

#![forbid(unsafe_code)]

mod atomics;
mod broadcast;
mod builder;
mod calls;
mod consteval;
mod debug;
mod errors;
mod expr;
mod fn_arrays;
mod gathers;
mod instance;
mod items;
mod kernel;
mod limits;
mod lines;
mod masks;
mod matfns;
mod mats;
mod memops;
mod places;
mod ranges;
mod scans;
pub mod semantic;
mod signs;
mod sorts;
mod stmt;
mod types;

use std::collections::HashMap;
use tilec_grammar::ast;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::{Module, Scalar};

pub use calls::BUILTINS;
pub use items::Program;
pub use kernel::extent_positions;
pub use limits::TargetLimits;

/// The value of a kernel's generic parameter: an element type or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenericArg {
    Type(Scalar),
    /// An integer constant (or a float parameter's integral value).
    Const(i64),
    /// A float constant, as the bits of its `f64` value (so that instances hash).
    Float(u64),
}

impl GenericArg {
    /// Parses `f32`, `f64`, ... as a type, an integer or a float (`1e-6`, `0.5`, `inf`) as a
    /// constant.
    pub fn parse(s: &str) -> Option<GenericArg> {
        Scalar::from_name(s)
            .map(GenericArg::Type)
            .or_else(|| s.parse().ok().map(GenericArg::Const))
            .or_else(|| s.parse::<f64>().ok().map(GenericArg::float))
    }

    /// The float constant `x`.
    pub fn float(x: f64) -> GenericArg {
        GenericArg::Float(x.to_bits())
    }
}

/// Which kernel instances to build.
#[derive(Debug, Clone)]
pub enum Instances {
    /// Every kernel, with every element type its type parameters allow (`float`: f32 and
    /// f64), unless `fixed` binds a parameter (`T=f32`).
    All { fixed: HashMap<String, GenericArg> },
    /// One kernel with its type parameters bound.
    One { kernel: String, generics: HashMap<String, GenericArg> },
}

/// Parsed modules of a program: the main file and the sources of imported modules.
pub struct Sources<'s> {
    pub main: &'s ast::File,
    /// `(module name, parsed file)` of every module that may be imported.
    pub modules: Vec<(String, &'s ast::File)>,
    /// Whether parsing reported errors (the tree then has holes, and unused-binding
    /// warnings are not given).
    pub syntax_errors: bool,
}

/// Checks the program and lowers the requested kernel instances to Tile IR.
/// Returns the module and every diagnostic; the module must not be used if any is an error.
/// Warnings (severity `Warning`) come after the errors; only errors make the module unusable.
/// Shared-memory limits are the CPU target's ([`compile_for`] picks another target's).
pub fn compile(sources: &Sources<'_>, instances: &Instances) -> (Module, Vec<Diagnostic>) {
    compile_for(sources, instances, &TargetLimits::CPU)
}

/// [`compile`] with the resource limits of a target (E0227).
pub fn compile_for(sources: &Sources<'_>, instances: &Instances, limits: &TargetLimits) -> (Module, Vec<Diagnostic>) {
    let (module, diags, _) = analyze_for(sources, instances, limits);
    (module, diags)
}

/// [`compile`], also returning the [`semantic::Analysis`] that the checker built on the way:
/// definitions, uses and expression types, for the language server.
pub fn analyze(sources: &Sources<'_>, instances: &Instances) -> (Module, Vec<Diagnostic>, semantic::Analysis) {
    analyze_for(sources, instances, &TargetLimits::CPU)
}

/// [`analyze`] with the resource limits of a target.
pub fn analyze_for(
    sources: &Sources<'_>,
    instances: &Instances,
    limits: &TargetLimits,
) -> (Module, Vec<Diagnostic>, semantic::Analysis) {
    let (program, mut diags) = Program::collect(sources);
    let (mut module, more, sem) = kernel::lower_program(&program, instances, limits);
    tilec_midend::mats::lower(&mut module);
    tilec_midend::halfarith::lower(&mut module);
    diags.extend(more);
    dedup(&mut diags);
    // A program with errors is not fully checked (an expression with an error stops before its
    // operands), so reads may be missing: unused-binding warnings only come for clean programs.
    let clean = !sources.syntax_errors && !diags.iter().any(|d| d.severity == tilec_grammar::diag::Severity::Error);
    diags.extend(sem.warnings(clean, limits.lanes as u64));
    (module, diags, sem)
}

/// Infers the generic parameters of `kernel` from its array arguments: element types from
/// their dtypes (`args`: argument name to dtype), const parameters written as an extent
/// (`A: T[B, N, N]` with `const N: i32`) from their shapes (`shapes`: argument name to
/// extents), other const parameters from their defaults. Parameters fixed by `fixed` win.
/// Errors (E0216) when a parameter is given two values or none.
pub fn infer_generics(
    sources: &Sources<'_>,
    kernel: &str,
    args: &HashMap<String, Scalar>,
    shapes: &HashMap<String, Vec<u64>>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<HashMap<String, GenericArg>, Diagnostic> {
    let (program, _) = Program::collect(sources);
    kernel::infer_generics(&program, kernel, args, shapes, fixed)
}

/// The tuning space of `kernel` in `sources`: each const parameter declared with candidates
/// (`const BM: i32 = 64 in [32, 64, 128]`, docs/language.md §2.4) and their values, in
/// declaration order; empty for a kernel without any. Errors: no such kernel (E0107).
pub fn tuning_space(sources: &Sources<'_>, kernel: &str) -> Result<Vec<(String, Vec<GenericArg>)>, Diagnostic> {
    let (program, _) = Program::collect(sources);
    kernel::tuning_space(&program, kernel)
}

/// What makes two diagnostics the same one found again: the code and the place (the message
/// only where there is no label), since the instances of a generic item differ only in types.
pub(crate) type SameKey = (&'static str, Option<String>, Option<tilec_grammar::span::Span>, Option<String>);

/// The [`SameKey`] of `d`.
pub(crate) fn same_key(d: &Diagnostic) -> SameKey {
    (d.code, d.labels.is_empty().then(|| d.message.clone()), d.labels.first().map(|l| l.span), d.source.clone())
}

/// Removes repeated diagnostics (the same error found in two instances of a generic item).
fn dedup(diags: &mut Vec<Diagnostic>) {
    let mut seen = Vec::new();
    diags.retain(|d| {
        let key = same_key(d);
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
}
