//! Front of the `.tile` pipeline: source spans, diagnostics, the logos lexer, the lalrpop
//! parser and the syntax tree. Parsing never fails: it returns a tree (with `Error` nodes
//! where the text could not be read) and every syntax error found.

pub mod ast;
pub mod diag;
pub mod lexer;
pub mod span;

use lalrpop_util::lalrpop_mod;
lalrpop_mod!(
    #[allow(clippy::all, unreachable_pub, unused)]
    parser
);

use ast::{File, Item};
use diag::Diagnostic;
use lalrpop_util::ParseError;
use lexer::{LexError, Tok};
use span::Span;

/// Lexes and parses a file. Returns the syntax tree and the lexical and syntax errors
/// (codes E0001 to E0003); the tree is usable for further checking even when errors exist.
pub fn parse(src: &str) -> (File, Vec<Diagnostic>) {
    let lexed = lexer::lex(src);
    let mut diags = Vec::new();
    for (s, e, err) in &lexed.errors {
        let span = Span::new(*s, *e);
        diags.push(match err {
            LexError::BadChar => Diagnostic::error("E0001", format!("unexpected character `{}`", &src[*s..*e]))
                .label(span, "no token starts with this character"),
            LexError::BadNumber => Diagnostic::error("E0001", "number literal out of range")
                .label(span, "this literal does not fit in 64 bits"),
        });
    }
    let mut recovered = Vec::new();
    let tokens = lexed.tokens.into_iter().map(Ok::<_, LexError>);
    let result = parser::FileParser::new().parse(&mut recovered, tokens);
    let mut file = match result {
        Ok(f) => f,
        Err(e) => {
            diags.push(parse_error(e, src.len()));
            File { items: Vec::new() }
        }
    };
    for r in recovered {
        diags.push(parse_error(r.error, src.len()));
    }
    attach_docs(&mut file, &lexed.docs);
    (file, diags)
}

fn expected_list(expected: &[String]) -> String {
    let mut e: Vec<&str> = expected.iter().map(|s| s.as_str()).collect();
    e.sort();
    e.dedup();
    if e.len() > 8 {
        format!("one of {} and {} more", e[..8].join(", "), e.len() - 8)
    } else {
        e.join(", ")
    }
}

fn parse_error(e: ParseError<usize, Tok, LexError>, len: usize) -> Diagnostic {
    match e {
        ParseError::InvalidToken { location } => Diagnostic::error("E0001", "invalid token")
            .label(Span::new(location, location + 1), "this does not start a token"),
        ParseError::UnrecognizedEof { location, expected } => Diagnostic::error("E0002", "unexpected end of file")
            .label(Span::new(location.min(len), len), "the file ends here")
            .help(format!("expected {}", expected_list(&expected))),
        ParseError::UnrecognizedToken { token: (s, t, e), expected } => {
            Diagnostic::error("E0003", format!("unexpected {t}"))
                .label(Span::new(s, e), "not expected here")
                .help(format!("expected {}", expected_list(&expected)))
        }
        ParseError::ExtraToken { token: (s, t, e) } => {
            Diagnostic::error("E0003", format!("unexpected {t}")).label(Span::new(s, e), "extra token")
        }
        ParseError::User { error } => Diagnostic::error("E0001", format!("lexical error: {error:?}")),
    }
}

/// Gives each item the `///` lines directly above it (between the previous item and it).
fn attach_docs(file: &mut File, docs: &[(usize, usize, String)]) {
    let mut prev_end = 0usize;
    for item in &mut file.items {
        let (start, end, slot) = match item {
            Item::Const(c) => (c.span.start, c.span.end, &mut c.doc),
            Item::Fn(f) => (f.span.start, f.span.end, &mut f.doc),
            Item::Kernel(k) => (k.span.start, k.span.end, &mut k.doc),
            Item::Import(i) => {
                prev_end = i.span.end as usize;
                continue;
            }
            Item::Error(s) => {
                prev_end = s.end as usize;
                continue;
            }
        };
        let lines: Vec<&str> =
            docs.iter().filter(|(s, _, _)| *s >= prev_end && *s < start as usize).map(|(_, _, t)| t.as_str()).collect();
        if !lines.is_empty() {
            *slot = Some(lines.join("\n"));
        }
        prev_end = end as usize;
    }
}
