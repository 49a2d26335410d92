//! One open document and what the checker says about it: diagnostics and the semantic model,
//! recomputed on every change (the whole frontend takes milliseconds). A panic while
//! analysing becomes an internal-error diagnostic; the server keeps serving.

use crate::SourceSet;
use std::collections::HashMap;
use tilec_frontend::semantic::Analysis;
use tilec_grammar::ast;
use tilec_grammar::diag::Diagnostic;

/// Documents larger than this are not analysed (a diagnostic says so).
pub(crate) const MAX_BYTES: usize = 8 << 20;

/// An open document with its latest analysis.
pub(crate) struct Document {
    pub(crate) text: String,
    pub(crate) version: i32,
    /// Errors and warnings of the document itself (not of imported modules).
    pub(crate) diags: Vec<Diagnostic>,
    pub(crate) analysis: Analysis,
    pub(crate) ast: ast::File,
    /// Source text of imported modules, by name, for spans that point into them.
    pub(crate) modules: HashMap<String, String>,
    /// Whether the text has syntax errors.
    pub(crate) syntax_errors: bool,
    /// The analysis and tree of the last version without syntax errors, for completion while
    /// an edit is in progress.
    pub(crate) fallback: Option<Box<(Analysis, ast::File)>>,
}

impl Document {
    /// Analyses `text`; `name` is the file name used in messages.
    pub(crate) fn new(name: &str, text: String, version: i32) -> Document {
        let src = SourceSet::with_stdlib(name, text.clone());
        let modules = src.modules.iter().cloned().collect();
        if text.len() > MAX_BYTES {
            let d = Diagnostic::error(
                "E0500",
                format!("this file is {} MiB; the language server analyses files up to 8 MiB", text.len() >> 20),
            )
            .label(tilec_grammar::span::Span::new(0, 0), "not analysed");
            return Document {
                text,
                version,
                diags: vec![d],
                analysis: Analysis::default(),
                ast: ast::File { items: Vec::new() },
                modules,
                syntax_errors: true,
                fallback: None,
            };
        }
        // Through a driver session, as every command: the same sources, parsed once.
        let run = std::panic::catch_unwind(|| {
            let session = crate::driver::Session::new(src.clone(), crate::SessionOptions::default());
            let (diags, analysis) = session.analyze();
            let (ast, syntax_errors) = session.main_ast();
            (diags, analysis, ast.clone(), syntax_errors)
        });
        let (diags, analysis, ast, syntax_errors) = match run {
            Ok(r) => r,
            Err(p) => {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                let d =
                    Diagnostic::error("E0900", format!("internal compiler error while analysing this file: {what}"))
                        .label(tilec_grammar::span::Span::new(0, 0), "analysis stopped here")
                        .help("this is a bug in tilec; please report it with the program");
                (vec![d], Analysis::default(), tilec_grammar::parse(&text).0, true)
            }
        };
        let diags = diags.into_iter().filter(|d| d.source.is_none()).collect();
        Document { text, version, diags, analysis, ast, modules, syntax_errors, fallback: None }
    }

    /// This document as the next version of `prev`: keeps the last analysis without syntax
    /// errors as the fallback for completion.
    pub(crate) fn after(mut self, prev: Option<Document>) -> Document {
        if let Some(p) = prev {
            self.fallback = if p.syntax_errors { p.fallback } else { Some(Box::new((p.analysis, p.ast))) };
        }
        self
    }

    /// The text a place's span points into.
    pub(crate) fn text_of(&self, source: Option<&str>) -> &str {
        match source {
            None => &self.text,
            Some(m) => self.modules.get(m).map_or("", String::as_str),
        }
    }
}
