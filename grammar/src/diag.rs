//! Diagnostics as data (code, severity, message, labels, notes, help) and their one terminal
//! renderer (ariadne). Every phase turns its own errors into [`Diagnostic`]s; no phase prints.

use crate::span::Span;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// A labelled source span of a diagnostic.
#[derive(Debug, Clone, PartialEq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

/// One diagnostic: an error code from `docs/errors.md`, a message, labelled spans, notes, help.
#[derive(Debug, Clone, PartialEq)]
pub struct Diagnostic {
    /// `E0001`-style code, documented in `docs/errors.md`.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    /// The first label is the primary one.
    pub labels: Vec<Label>,
    pub notes: Vec<String>,
    pub help: Option<String>,
    /// The imported module whose text the labels point into; `None` for the main file.
    pub source: Option<String>,
    /// Machine-applicable fixes (editors offer them as code actions).
    pub suggestions: Vec<Suggestion>,
}

/// A fix: replace the text of `span` by `replacement`.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// What the fix does, e.g. "prefix it with an underscore".
    pub message: String,
    pub span: Span,
    pub replacement: String,
}

impl Diagnostic {
    /// An error with a code and message and no labels yet.
    pub fn error(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: Severity::Error,
            message: message.into(),
            labels: Vec::new(),
            notes: Vec::new(),
            help: None,
            source: None,
            suggestions: Vec::new(),
        }
    }

    /// A warning with a code and message and no labels yet.
    pub fn warning(code: &'static str, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(code, message) }
    }

    /// Adds a machine-applicable fix.
    pub fn suggest(mut self, message: impl Into<String>, span: Span, replacement: impl Into<String>) -> Diagnostic {
        self.suggestions.push(Suggestion { message: message.into(), span, replacement: replacement.into() });
        self
    }

    /// Adds a labelled span.
    pub fn label(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.labels.push(Label { span, text: text.into() });
        self
    }

    /// Adds a note.
    pub fn note(mut self, text: impl Into<String>) -> Diagnostic {
        self.notes.push(text.into());
        self
    }

    /// Sets the help line.
    pub fn help(mut self, text: impl Into<String>) -> Diagnostic {
        self.help = Some(text.into());
        self
    }

    /// Renders to plain text (no colour) with ariadne, against the named source.
    /// A diagnostic without labels renders as `error[CODE]: message` plus notes and help.
    pub fn render(&self, file_name: &str, src: &str, color: bool) -> String {
        use ariadne::{Config, Label as ALabel, Report, ReportKind, Source};
        if self.labels.is_empty() {
            let word = if self.severity == Severity::Error { "error" } else { "warning" };
            let mut s = format!("{word}[{}]: {}\n", self.code, self.message);
            for n in &self.notes {
                s.push_str(&format!("  = note: {n}\n"));
            }
            if let Some(h) = &self.help {
                s.push_str(&format!("  = help: {h}\n"));
            }
            return s;
        }
        let kind = match self.severity {
            Severity::Error => ReportKind::Error,
            Severity::Warning => ReportKind::Warning,
        };
        let len = src.len();
        let clamp = |s: Span| {
            let a = (s.start as usize).min(len);
            let b = (s.end as usize).clamp(a, len);
            (file_name, a..b)
        };
        let mut report = Report::build(kind, clamp(self.labels[0].span))
            .with_config(Config::default().with_color(color).with_index_type(ariadne::IndexType::Byte))
            .with_code(self.code)
            .with_message(&self.message);
        for l in &self.labels {
            report = report.with_label(ALabel::new(clamp(l.span)).with_message(&l.text));
        }
        for n in &self.notes {
            report = report.with_note(n);
        }
        if let Some(h) = &self.help {
            report = report.with_help(h);
        }
        let mut out = Vec::new();
        let _ = report.finish().write((file_name, Source::from(src)), &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}
