//! Rendering of diagnostics for people (ariadne, via `Diagnostic::render`) and for tools
//! (one JSON object per line).

use crate::SourceSet;
use tilec_grammar::diag::{Diagnostic, Severity};

/// How diagnostics are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorFormat {
    Human,
    Json,
}

/// Line and column (1-based) of a byte offset.
fn line_col(src: &str, off: usize) -> (usize, usize) {
    let off = off.min(src.len());
    let before = &src[..off];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The position fields of a span in JSON: byte offsets, and 1-based lines and columns of both
/// ends; `extra` adds the other fields.
fn span_json(text: &str, span: tilec_grammar::span::Span, extra: serde_json::Value) -> serde_json::Value {
    let (line, col) = line_col(text, span.start as usize);
    let (end_line, end_col) = line_col(text, span.end as usize);
    let mut v = serde_json::json!({"start": span.start, "end": span.end, "line": line, "column": col,
        "end_line": end_line, "end_column": end_col});
    if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        m.extend(e);
    }
    v
}

/// Renders every diagnostic against the source it points into.
pub fn render_diagnostics(diags: &[Diagnostic], src: &SourceSet, format: ErrorFormat, color: bool) -> String {
    let mut out = String::new();
    for d in diags {
        let (name, text) = src.text_of(d.source.as_deref());
        match format {
            ErrorFormat::Human => out.push_str(&d.render(&name, text, color)),
            ErrorFormat::Json => {
                let labels: Vec<serde_json::Value> =
                    d.labels.iter().map(|l| span_json(text, l.span, serde_json::json!({"text": l.text}))).collect();
                let suggestions: Vec<serde_json::Value> = d
                    .suggestions
                    .iter()
                    .map(|s| {
                        span_json(text, s.span, serde_json::json!({"message": s.message, "replacement": s.replacement}))
                    })
                    .collect();
                let v = serde_json::json!({
                    "code": d.code,
                    "severity": if d.severity == Severity::Error { "error" } else { "warning" },
                    "message": d.message,
                    "file": if d.labels.is_empty() { serde_json::Value::Null } else { serde_json::Value::String(name) },
                    "labels": labels,
                    "notes": d.notes,
                    "help": d.help,
                    "suggestions": suggestions,
                });
                out.push_str(&v.to_string());
                out.push('\n');
            }
        }
    }
    out
}
