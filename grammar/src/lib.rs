//! Front of the `.tile` pipeline: source spans, diagnostics, the logos lexer, the lalrpop
//! parser and the syntax tree. Parsing never fails: it returns a tree (with `Error` nodes
//! where the text could not be read) and every syntax error found.

#![forbid(unsafe_code)]

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
    let mut string_end = 0;
    for (s, e, err) in &lexed.errors {
        if *s < string_end {
            continue; // the closing quote of a string already reported
        }
        let mut span = Span::new(*s, *e);
        // A double-quoted string (`import "linalg";`) is one error, not one per quote.
        if matches!(err, LexError::BadChar) && &src[*s..*e] == "\"" {
            let q = &src[*s..*e];
            if let Some(n) = src[*e..].lines().next().and_then(|l| l.find(q)) {
                string_end = *e + n + 1;
                span = Span::new(*s, string_end);
            }
        }
        diags.push(match err {
            LexError::BadChar => {
                let c = &src[*s..*e];
                let d = if span.end as usize > *e {
                    let inner = &src[span.start as usize + 1..span.end as usize - 1];
                    Diagnostic::error("E0001", format!("unexpected string `{}`", &src[span.range()]))
                        .label(span, "not a token")
                        .suggest("remove the quotes", span, inner)
                } else {
                    Diagnostic::error("E0001", format!("unexpected character `{c}`"))
                        .label(span, "no token starts with this character")
                };
                match c {
                    "\"" | "'" => d.help(STRING_HELP),
                    "/" if src[*s..].starts_with("/*") => d.help("this block comment is not closed: add `*/`"),
                    _ => d,
                }
            }
            LexError::BadNumber => Diagnostic::error("E0001", "number literal out of range")
                .label(span, "this literal does not fit in 64 bits"),
            LexError::BadEscape => Diagnostic::error("E0001", "unknown escape in a string")
                .label(span, "this string has an escape other than `\\\"`, `\\\\`, `\\n`, `\\t`"),
        });
    }
    let mut recovered = Vec::new();
    // Brace positions, to point at the `{` that a missing `}` leaves open.
    let braces: Vec<(usize, bool)> = lexed
        .tokens
        .iter()
        .filter_map(|(s, t, _)| match t {
            Tok::LBrace => Some((*s, true)),
            Tok::RBrace => Some((*s, false)),
            _ => None,
        })
        .collect();
    // Text nested deeper than the checker's recursion can take is refused before parsing.
    if let Some(d) = nesting_error(&lexed.tokens) {
        diags.push(d);
        return (File { items: Vec::new() }, diags);
    }
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
    let missing_brace =
        |d: &Diagnostic| d.code == "E0002" || d.help.as_deref().is_some_and(|h| h.contains("`}` is probably missing"));
    for d in diags.iter_mut().filter(|d| missing_brace(d)) {
        let at = d.labels[0].span.start as usize;
        let mut open = Vec::new();
        for &(p, is_open) in braces.iter().take_while(|(p, _)| *p < at) {
            if is_open {
                open.push(p);
            } else {
                open.pop();
            }
        }
        if let Some(&p) = open.last() {
            d.labels.push(diag::Label { span: Span::new(p, p + 1), text: "this `{` is not closed".to_string() });
        }
    }
    attach_docs(&mut file, &lexed.docs);
    (file, diags)
}

/// The most brackets of any kind open at once, and the most `else if`s in one block.
pub const MAX_NESTING: usize = 256;

/// The most operators (and opening brackets) in one statement, between `;`, `{` and `}`.
pub const MAX_EXPR_OPERATORS: usize = 1024;

/// E0005 at the first token that nests the text deeper than the limits: brackets open at
/// once (`MAX_NESTING`), operators, casts, field accesses and opening brackets in one
/// statement (`MAX_EXPR_OPERATORS`, which bounds the depth of an expression's tree, unary
/// chains `- - - x` and long `a + b + ..` included), and `else if` in one block (each one nests
/// the rest of the chain). The syntax tree and every recursive pass over it then stay far
/// from the stack's limit, and checking stays fast.
fn nesting_error(tokens: &[(usize, Tok, usize)]) -> Option<Diagnostic> {
    let mut open = 0usize;
    let mut ops = 0usize;
    // `else if` counts per open brace level (index 0: outside any brace).
    let mut else_ifs: Vec<usize> = vec![0];
    let too_deep = |s: usize, e: usize, what: String| {
        Some(
            Diagnostic::error("E0005", format!("nesting too deep: {what}"))
                .label(Span::new(s, e), "the limit is passed here")
                .help("split the expression with `let` bindings, or the nesting into `fn`s"),
        )
    };
    for (i, (s, t, e)) in tokens.iter().enumerate() {
        match t {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                open += 1;
                if open > MAX_NESTING {
                    return too_deep(*s, *e, format!("more than {MAX_NESTING} brackets open at once"));
                }
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => open = open.saturating_sub(1),
            _ => {}
        }
        match t {
            Tok::Semi | Tok::LBrace | Tok::RBrace => ops = 0,
            Tok::LParen
            | Tok::LBracket
            | Tok::Lt
            | Tok::Gt
            | Tok::Le
            | Tok::Ge
            | Tok::EqEq
            | Tok::Ne
            | Tok::Plus
            | Tok::Minus
            | Tok::Star
            | Tok::Slash
            | Tok::Percent
            | Tok::At
            | Tok::AndAnd
            | Tok::OrOr
            | Tok::Bang
            | Tok::Dot
            | Tok::DotDot
            | Tok::As => {
                ops += 1;
                if ops > MAX_EXPR_OPERATORS {
                    return too_deep(*s, *e, format!("more than {MAX_EXPR_OPERATORS} operators in one statement"));
                }
            }
            _ => {}
        }
        match t {
            Tok::LBrace => else_ifs.push(0),
            Tok::RBrace if else_ifs.len() > 1 => {
                else_ifs.pop();
            }
            Tok::Else if matches!(tokens.get(i + 1), Some((_, Tok::If, _))) => {
                let n = else_ifs.last_mut().expect("never empty");
                *n += 1;
                if *n > MAX_NESTING {
                    return too_deep(*s, *e, format!("more than {MAX_NESTING} `else if` in one block"));
                }
            }
            _ => {}
        }
    }
    None
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
        ParseError::UnrecognizedToken { token: (s, t, e), expected } => unexpected(s, t, e, &expected),
        ParseError::ExtraToken { token: (s, t, e) } => {
            Diagnostic::error("E0003", format!("unexpected {t}")).label(Span::new(s, e), "extra token")
        }
        ParseError::User { error } => Diagnostic::error("E0001", format!("lexical error: {error:?}")),
    }
}

/// The help of E0001 for a string where none is allowed.
const STRING_HELP: &str =
    "a string is only the label of `print(\"..\", ..)` or the message of `assert(cond, \"..\")`; \
     an import names its module bare: `import linalg;`";

/// E0003 for an unexpected token, with help for the usual causes (E0001 for a string literal
/// where none is allowed, as for any other quoted text).
fn unexpected(s: usize, t: Tok, e: usize, expected: &[String]) -> Diagnostic {
    if let Tok::Str(text) = &t {
        let span = Span::new(s, e);
        return Diagnostic::error("E0001", format!("unexpected string `{text:?}`"))
            .label(span, "not a token here")
            .suggest("remove the quotes", span, text)
            .help(STRING_HELP);
    }
    let d = Diagnostic::error("E0003", format!("unexpected {t}")).label(Span::new(s, e), "not expected here");
    let wants = |x: &str| expected.iter().any(|w| w == x);
    match t {
        // `let mut x`: every variable may be assigned.
        Tok::Mut if wants("ident") => d
            .help("variables can always be assigned in .tile: write `let x = ...;` without `mut`")
            .suggest("remove `mut`", Span::new(s, e), ""),
        // An item keyword where a statement was expected: a `}` is missing above.
        Tok::Kernel | Tok::Fn | Tok::Const | Tok::Import if wants("\"}\"") => {
            d.help("an item cannot start inside a block: a `}` is probably missing before it")
        }
        _ => d.help(format!("expected {}", expected_list(expected))),
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
