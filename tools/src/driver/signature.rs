//! What a caller needs to know of a program's kernels: their parameters and generic
//! parameters as declared, for passing arguments by position or by name.

use tilec_grammar::ast;
use tilec_runtime::RunError;

/// How a kernel is declared: what a caller needs to pass arguments by position or by name.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSig {
    pub name: String,
    /// The doc comment (`///` lines) of the kernel.
    pub doc: Option<String>,
    pub params: Vec<ParamSig>,
    /// The generic parameters: element types (inferred from dtypes) and const parameters.
    pub generics: Vec<GenericSig>,
    /// `(const parameter, array parameter, axis)` where a const parameter is written as an
    /// extent (`A: T[B, N, N]`): it takes that extent of the argument unless given.
    pub extent_generics: Vec<(String, String, usize)>,
}

impl KernelSig {
    /// Checks that every name in `names` is a parameter or a generic parameter of the kernel:
    /// E0408 for the first one that is not (in the order given), listing both.
    pub fn check_names<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Result<(), RunError> {
        let known = |n: &str| self.params.iter().any(|p| p.name == n) || self.generics.iter().any(|g| g.name == n);
        match names.into_iter().find(|n| !known(n)) {
            Some(n) => Err(RunError::UnknownArg {
                kernel: self.name.clone(),
                name: n.to_string(),
                params: self
                    .params
                    .iter()
                    .map(|p| &p.name)
                    .chain(self.generics.iter().map(|g| &g.name))
                    .cloned()
                    .collect(),
            }),
            None => Ok(()),
        }
    }
}

/// A kernel parameter as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSig {
    pub name: String,
    /// Whether it is an array (`T[B, N, N]`), and one the kernel writes (`mut`).
    pub array: bool,
    pub mutable: bool,
    /// The type as written in the source (`mut T[B, N, N]`, `T`).
    pub ty: String,
}

/// A generic parameter of a kernel as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct GenericSig {
    pub name: String,
    /// A `const` parameter (set by the caller; it may have a default) rather than an element
    /// type (inferred from the arrays).
    pub is_const: bool,
    /// The declaration as written: `T: float`, `const BM: i32 = 32 in [16, 32, 64]`.
    pub text: String,
}

/// A generic parameter's declaration as written in `text` (`T: float`, `const BM: i32 = 32`).
fn generic_text(g: &ast::GenericParam, text: &str) -> String {
    let src = |s: tilec_grammar::span::Span| text.get(s.start as usize..s.end as usize).unwrap_or_default();
    match g {
        ast::GenericParam::Type { name, bound: Some(b) } => format!("{}: {}", name.name, b.name),
        ast::GenericParam::Type { name, bound: None } => name.name.clone(),
        ast::GenericParam::Const { name, ty, default, candidates } => {
            let mut s = format!("const {}: {}", name.name, src(ty.span()));
            if let Some(d) = default {
                s.push_str(&format!(" = {}", src(d.span)));
            }
            if !candidates.is_empty() {
                let c: Vec<&str> = candidates.iter().map(|e| src(e.span)).collect();
                s.push_str(&format!(" in [{}]", c.join(", ")));
            }
            s
        }
    }
}

/// The signature of kernel `k`, whose source is `text`.
pub(crate) fn sig(k: &ast::KernelItem, text: &str) -> KernelSig {
    KernelSig {
        name: k.name.name.clone(),
        doc: k.doc.clone(),
        params: k
            .params
            .iter()
            .map(|p| {
                let (array, mutable) = match &p.ty {
                    ast::TypeExpr::Array { mutable, .. } => (true, *mutable),
                    _ => (false, false),
                };
                let span = p.ty.span();
                let ty = text.get(span.start as usize..span.end as usize).unwrap_or_default().to_string();
                ParamSig { name: p.name.name.clone(), array, mutable, ty }
            })
            .collect(),
        generics: k
            .generics
            .iter()
            .map(|g| GenericSig {
                name: g.name().name.clone(),
                is_const: matches!(g, ast::GenericParam::Const { .. }),
                text: generic_text(g, text),
            })
            .collect(),
        extent_generics: k
            .generics
            .iter()
            .filter(|g| matches!(g, ast::GenericParam::Const { .. }))
            .flat_map(|g| {
                let name = g.name().name.as_str();
                tilec_frontend::extent_positions(k, name).map(move |(p, axis)| (name.to_string(), p.to_string(), axis))
            })
            .collect(),
    }
}
