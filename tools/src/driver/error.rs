//! The driver's one error type: coded diagnostics with a kind, which the command line maps to
//! its exit code and the APIs to their exception classes, and their rendering.

use crate::{render_diagnostics, ErrorFormat, SourceSet};
use tilec_grammar::diag::{Diagnostic, Severity};
use tilec_runtime::RunError;

/// What went wrong, by whose doing: the command line's exit code (1 for `Program`, 2 for the
/// rest) and the Python exception's class follow from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Errors in the program: syntax, names, types, shapes, limits (E00xx to E03xx), and
    /// code generation failures pointing at its source.
    Program,
    /// A command-line or option value that cannot be used (E0500 to E0503, E0506).
    Usage,
    /// The inputs of a launch: files, arrays, scalars, shapes (E04xx but the devices').
    Input,
    /// A missing or failing device or driver (E0420 to E0436).
    Device,
    /// A code generator that failed (E0504, E0901: a compiler limitation or bug) or is not
    /// part of this build (E0505).
    Backend,
}

impl ErrorKind {
    /// The kind of the errors with code `code` (for those made without one).
    pub fn of_code(code: &str) -> ErrorKind {
        match code.get(..3).zip(code.get(3..).and_then(|n| n.parse::<u32>().ok())) {
            Some(("E04", n)) if (20..=36).contains(&n) && n != 29 => ErrorKind::Device,
            Some(("E04", _)) => ErrorKind::Input,
            Some(("E05", 4 | 5)) => ErrorKind::Backend,
            Some(("E05", _)) => ErrorKind::Usage,
            Some(("E09", 1)) => ErrorKind::Backend,
            _ => ErrorKind::Program,
        }
    }

    /// The command line's exit status: 1 for errors in the program, 2 for the others.
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Program => 1,
            _ => 2,
        }
    }
}

/// A failure of compiling or launching: the diagnostics (each with its code, `E0xxx`), their
/// kind, and their rendering as `tilec` prints them, with the source lines they point at.
#[derive(Debug, Clone)]
pub struct Error {
    /// The diagnostics, errors first.
    pub diagnostics: Vec<Diagnostic>,
    kind: ErrorKind,
    rendered: String,
    /// The runtime's error it was made of, for callers that add advice in their own terms
    /// (the command line's `--arg NAME=FILE.npy`).
    cause: Option<Box<RunError>>,
}

impl Error {
    /// An error of `kind` made of `diagnostics`; rendered without source lines until
    /// [`Error::with_source`].
    pub(crate) fn bare(kind: ErrorKind, diagnostics: Vec<Diagnostic>) -> Error {
        let rendered = if diagnostics.iter().all(|d| d.labels.is_empty()) {
            render_diagnostics(&diagnostics, &SourceSet::with_stdlib("", ""), ErrorFormat::Human, false)
        } else {
            diagnostics.iter().map(|d| format!("error[{}]: {}\n", d.code, d.message)).collect()
        };
        Error { diagnostics, kind, rendered, cause: None }
    }

    /// Errors in the program (exit code 1).
    pub(crate) fn program(diagnostics: Vec<Diagnostic>) -> Error {
        Error::bare(ErrorKind::Program, diagnostics)
    }

    /// Diagnostics of a compile that a launch asked for: errors in the program where they
    /// point at it, else (an unknown kernel, a generic argument that fits nothing, with no
    /// source label) errors of the request.
    pub(crate) fn compile(diagnostics: Vec<Diagnostic>) -> Error {
        let kind = if diagnostics.iter().any(|d| !d.labels.is_empty()) { ErrorKind::Program } else { ErrorKind::Input };
        Error::bare(kind, diagnostics)
    }

    /// One coded error without a source location, of the kind of its code.
    pub(crate) fn coded(code: &'static str, message: impl Into<String>) -> Error {
        Error::bare(ErrorKind::of_code(code), vec![Diagnostic::error(code, message)])
    }

    /// A command-line or option value that cannot be used (E05xx; also the Python package's
    /// options).
    pub fn usage(code: &'static str, message: impl Into<String>) -> Error {
        Error::bare(ErrorKind::Usage, vec![Diagnostic::error(code, message)])
    }

    /// The coded error of reading, binding or launching (E04xx), which points at no source.
    pub(crate) fn run(e: RunError) -> Error {
        let mut err = Error::coded(e.code(), e.to_string());
        err.cause = Some(Box::new(e));
        err
    }

    /// The runtime's error (binding or launching) this error was made of, if any.
    pub fn run_error(&self) -> Option<&RunError> {
        self.cause.as_deref()
    }

    /// A code-generation failure of kernel `k` of `m` (E0504 GPU, E0901 CPU), pointing at the
    /// op's source location when the backend gives one (in the op's own source: an op inlined
    /// from a stdlib `fn` points into that module).
    pub(crate) fn codegen(
        code: &'static str,
        m: &tilec_midend::Module,
        k: &tilec_midend::Kernel,
        msg: String,
        loc: Option<tilec_midend::Loc>,
    ) -> Error {
        let mut d = Diagnostic::error(code, format!("kernel `{}`: {msg}", k.symbol));
        if let Some(l) = loc {
            d = d.label(tilec_grammar::span::Span { start: l.start, end: l.end }, "code generation failed here");
            d.source = m.source_of(l);
        }
        Error::bare(ErrorKind::Backend, vec![d])
    }

    /// The error rendered with the lines of `src` its labels point at.
    pub(crate) fn with_source(mut self, src: &SourceSet) -> Error {
        self.rendered = render_diagnostics(&self.diagnostics, src, ErrorFormat::Human, false);
        self
    }

    /// What went wrong, by whose doing.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The code of the first error (`E0410`, ...); every `Error` holds at least one.
    pub fn code(&self) -> &str {
        let first = self.diagnostics.iter().find(|d| d.severity == Severity::Error).or(self.diagnostics.first());
        first.map_or("", |d| d.code)
    }

    /// The diagnostics rendered as text, without color.
    pub fn rendered(&self) -> &str {
        &self.rendered
    }

    /// The error with the command line's advice in the terms of a Python caller (the `tilec`
    /// package): `--target cpu` becomes `target="cpu"`, `--backend llvm` `backend="llvm"`,
    /// `--generic BM=16` the keyword argument `BM=16`; the note that says which `build`
    /// command builds an instance is cut to the instance.
    pub fn in_python_terms(mut self) -> Error {
        for d in &mut self.diagnostics {
            d.message = python_terms(&d.message);
            d.help = d.help.as_deref().map(python_terms);
            d.notes.iter_mut().for_each(|n| *n = python_terms(n));
            d.labels.iter_mut().for_each(|l| l.text = python_terms(&l.text));
        }
        self.rendered = python_terms(&self.rendered);
        self
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for Error {}

impl From<RunError> for Error {
    /// The coded error of a launch argument or device (E04xx), which points at no source.
    fn from(e: RunError) -> Error {
        Error::run(e)
    }
}

/// [`Error::in_python_terms`] of one text.
fn python_terms(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        // "in the instance of `k` with T = f32 (`check` and `build` check every instance;
        // `build --generic T=f32` builds this one)": the instance is what a caller needs.
        let line = match (line.find(" (`check` and `build` check every instance"), line.find("builds this one)")) {
            (Some(a), Some(b)) if a < b => format!("{}{}", &line[..a], &line[b + "builds this one)".len()..]),
            _ => line.to_string(),
        };
        let mut rest = line.as_str();
        while let Some(at) = rest.find("--") {
            out.push_str(&rest[..at]);
            let after = &rest[at + 2..];
            let flag_len = after.find(|c: char| !(c.is_ascii_lowercase() || c == '-')).unwrap_or(after.len());
            let (flag, tail) = after.split_at(flag_len);
            let value = tail.strip_prefix(' ');
            let word = |v: &str| v.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(v.len());
            match (flag, value) {
                ("target" | "backend", Some(v)) if word(v) > 0 => {
                    out.push_str(&format!("{flag}=\"{}\"", &v[..word(v)]));
                    rest = &v[word(v)..];
                }
                ("generic", Some(v)) => rest = v,
                _ => {
                    out.push_str("--");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn python_terms() {
        let t = super::python_terms;
        assert_eq!(t("use --target cpu or --target vulkan, or"), "use target=\"cpu\" or target=\"vulkan\", or");
        assert_eq!(t("help: pass `--generic BM=16`"), "help: pass `BM=16`");
        assert_eq!(t("with --backend llvm."), "with backend=\"llvm\".");
        assert_eq!(
            t("note: in the instance of `k` with T = f32 (`check` and `build` check every instance; `build --generic T=f32` builds this one)\n"),
            "note: in the instance of `k` with T = f32\n"
        );
        assert_eq!(t("x -- y --deny warnings"), "x -- y --deny warnings");
    }
}
