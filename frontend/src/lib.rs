//! The tilec frontend: name resolution, type and shape checking, constant evaluation and
//! lowering of a parsed `.tile` program to Tile IR, one instance per kernel and element type.
//! Checking goes on after an error, so one run reports every error of a file; the module it
//! returns is only meaningful when no error was reported.

mod builder;
mod calls;
mod consteval;
mod errors;
mod expr;
mod instance;
mod items;
mod kernel;
mod memops;
mod places;
mod stmt;
mod types;

use std::collections::HashMap;
use tilec_grammar::ast;
use tilec_grammar::diag::Diagnostic;
use tilec_midend::{Module, Scalar};

pub use items::Program;

/// The value of a kernel's generic parameter: an element type or a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenericArg {
    Type(Scalar),
    Const(i64),
}

impl GenericArg {
    /// Parses `f32`, `f64`, ... as a type, an integer as a constant.
    pub fn parse(s: &str) -> Option<GenericArg> {
        Scalar::from_name(s).map(GenericArg::Type).or_else(|| s.parse().ok().map(GenericArg::Const))
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
}

/// Checks the program and lowers the requested kernel instances to Tile IR.
/// Returns the module and every diagnostic; the module must not be used if any is an error.
pub fn compile(sources: &Sources<'_>, instances: &Instances) -> (Module, Vec<Diagnostic>) {
    let (program, mut diags) = Program::collect(sources);
    let (module, more) = kernel::lower_program(&program, instances);
    diags.extend(more);
    dedup(&mut diags);
    (module, diags)
}

/// Infers the element-type parameters of `kernel` from the dtypes of its array arguments
/// (`args`: argument name to dtype). Parameters fixed by `fixed` win. Errors (E0216) when
/// a type parameter is bound to two dtypes or to none.
pub fn infer_generics(
    sources: &Sources<'_>,
    kernel: &str,
    args: &HashMap<String, Scalar>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<HashMap<String, GenericArg>, Diagnostic> {
    let (program, _) = Program::collect(sources);
    kernel::infer_generics(&program, kernel, args, fixed)
}

/// Removes repeated diagnostics (the same error found in two instances of a generic item).
fn dedup(diags: &mut Vec<Diagnostic>) {
    let mut seen = Vec::new();
    diags.retain(|d| {
        // One error per code and place: instances of a generic item differ only in types.
        let key = (
            d.code,
            d.labels.is_empty().then(|| d.message.clone()),
            d.labels.first().map(|l| l.span),
            d.source.clone(),
        );
        if seen.contains(&key) {
            false
        } else {
            seen.push(key);
            true
        }
    });
}
