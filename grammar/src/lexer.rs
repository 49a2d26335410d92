//! The logos lexer: source text to tokens with byte offsets; `///` doc comments are set aside
//! so that the parser never sees them and they can be attached to items afterwards.

use logos::Logos;
use std::fmt;

/// A lexical error: a character that starts no token, or a number out of range.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexError {
    #[default]
    BadChar,
    BadNumber,
    /// A string literal with an escape other than `\"`, `\\`, `\n`, `\t`.
    BadEscape,
}

/// The tokens of `.tile`.
#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\r\n\f]+")]
pub enum Tok {
    #[token("fn")]
    Fn,
    #[token("kernel")]
    Kernel,
    #[token("let")]
    Let,
    #[token("const")]
    Const,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("step")]
    Step,
    #[token("while")]
    While,
    #[token("if")]
    If,
    #[token("else")]
    Else,
    #[token("return")]
    Return,
    #[token("import")]
    Import,
    #[token("mut")]
    Mut,
    #[token("tile")]
    Tile,
    #[token("shared")]
    Shared,
    #[token("mat")]
    Mat,
    #[token("vec")]
    Vec,
    #[token("grid")]
    Grid,
    #[token("block")]
    Block,
    #[token("flops")]
    Flops,
    #[token("as")]
    As,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Ident(String),
    #[regex(r"[0-9][0-9_]*", |lex| lex.slice().replace('_', "").parse::<u64>().map_err(|_| LexError::BadNumber))]
    Int(u64),
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?", parse_float)]
    #[regex(r"[0-9][0-9_]*[eE][+-]?[0-9]+", parse_float)]
    #[token("inf", |_| f64::INFINITY)]
    #[token("nan", |_| f64::NAN)]
    Float(f64),
    /// `"..."`: a string literal, the label of `print` and the message of `assert` (no other
    /// place takes one). Escapes: `\"`, `\\`, `\n`, `\t`; one line.
    #[regex(r#""([^"\\\n]|\\[^\n])*""#, unescape)]
    Str(String),
    #[regex(r"///[^\n]*", allow_greedy = true, callback = |lex| lex.slice()[3..].trim().to_string())]
    DocComment(String),
    #[regex(r"//([^/\n][^\n]*)?", logos::skip, allow_greedy = true)]
    Comment,
    /// `/* ... */`, not nested.
    #[regex(r"/\*([^*]|\*+[^*/])*\*+/", logos::skip)]
    BlockComment,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("<")]
    Lt,
    #[token(">")]
    Gt,
    #[token("<=")]
    Le,
    #[token(">=")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    Ne,
    #[token("=")]
    Eq,
    #[token("+=")]
    PlusEq,
    #[token("-=")]
    MinusEq,
    #[token("*=")]
    StarEq,
    #[token("/=")]
    SlashEq,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("@")]
    At,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
    #[token(",")]
    Comma,
    #[token(";")]
    Semi,
    #[token(":")]
    Colon,
    #[token("::")]
    ColonColon,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("->")]
    Arrow,
    #[token("?")]
    Question,
}

/// The text of a string literal without its quotes, its escapes replaced; an unknown escape
/// is a lexical error.
fn unescape(lex: &mut logos::Lexer<Tok>) -> Result<String, LexError> {
    let raw = lex.slice();
    let mut out = String::new();
    let mut chars = raw[1..raw.len() - 1].chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('"') => '"',
            Some('\\') => '\\',
            Some('n') => '\n',
            Some('t') => '\t',
            _ => return Err(LexError::BadEscape),
        });
    }
    Ok(out)
}

fn parse_float(lex: &mut logos::Lexer<Tok>) -> Result<f64, LexError> {
    lex.slice().replace('_', "").parse::<f64>().map_err(|_| LexError::BadNumber)
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "identifier `{s}`"),
            Tok::Int(v) => write!(f, "integer `{v}`"),
            Tok::Float(v) => write!(f, "number `{v}`"),
            Tok::Str(s) => write!(f, "string `{s:?}`"),
            Tok::DocComment(_) => write!(f, "doc comment"),
            other => write!(f, "`{}`", tok_text(other)),
        }
    }
}

fn tok_text(t: &Tok) -> &'static str {
    match t {
        Tok::Fn => "fn",
        Tok::Kernel => "kernel",
        Tok::Let => "let",
        Tok::Const => "const",
        Tok::For => "for",
        Tok::In => "in",
        Tok::Step => "step",
        Tok::While => "while",
        Tok::If => "if",
        Tok::Else => "else",
        Tok::Return => "return",
        Tok::Import => "import",
        Tok::Mut => "mut",
        Tok::Tile => "tile",
        Tok::Shared => "shared",
        Tok::Mat => "mat",
        Tok::Vec => "vec",
        Tok::Grid => "grid",
        Tok::Block => "block",
        Tok::Flops => "flops",
        Tok::As => "as",
        Tok::True => "true",
        Tok::False => "false",
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::LBracket => "[",
        Tok::RBracket => "]",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::Lt => "<",
        Tok::Gt => ">",
        Tok::Le => "<=",
        Tok::Ge => ">=",
        Tok::EqEq => "==",
        Tok::Ne => "!=",
        Tok::Eq => "=",
        Tok::PlusEq => "+=",
        Tok::MinusEq => "-=",
        Tok::StarEq => "*=",
        Tok::SlashEq => "/=",
        Tok::Plus => "+",
        Tok::Minus => "-",
        Tok::Star => "*",
        Tok::Slash => "/",
        Tok::Percent => "%",
        Tok::At => "@",
        Tok::AndAnd => "&&",
        Tok::OrOr => "||",
        Tok::Bang => "!",
        Tok::Comma => ",",
        Tok::Semi => ";",
        Tok::Colon => ":",
        Tok::ColonColon => "::",
        Tok::Dot => ".",
        Tok::DotDot => "..",
        Tok::Arrow => "->",
        Tok::Question => "?",
        Tok::Ident(_)
        | Tok::Int(_)
        | Tok::Float(_)
        | Tok::Str(_)
        | Tok::DocComment(_)
        | Tok::Comment
        | Tok::BlockComment => "?",
    }
}

/// The result of lexing a file: tokens for the parser, doc comments and lexical errors aside.
#[derive(Debug, Default)]
pub struct Lexed {
    /// `(start, token, end)` triples, without doc comments.
    pub tokens: Vec<(usize, Tok, usize)>,
    /// `(start, end, text)` of every `///` line.
    pub docs: Vec<(usize, usize, String)>,
    /// `(start, end, error)` of every lexical error.
    pub errors: Vec<(usize, usize, LexError)>,
}

/// The reserved words (docs/language.md §1): none of them can name anything.
pub const KEYWORDS: &[&str] = &[
    "fn", "kernel", "let", "const", "for", "in", "step", "while", "if", "else", "return", "import", "mut", "tile",
    "shared", "mat", "vec", "grid", "block", "flops", "as", "true", "false", "inf", "nan",
];

/// Lexes a whole file. Never fails: bad characters are recorded and skipped.
pub fn lex(src: &str) -> Lexed {
    let mut out = Lexed::default();
    let mut lexer = Tok::lexer(src);
    while let Some(tok) = lexer.next() {
        let span = lexer.span();
        match tok {
            Ok(Tok::DocComment(text)) => out.docs.push((span.start, span.end, text)),
            Ok(t) => out.tokens.push((span.start, t, span.end)),
            Err(e) => {
                // A malformed number still stands for a number, so the parser does not report
                // a second, spurious error.
                if e == LexError::BadNumber {
                    out.tokens.push((span.start, Tok::Int(0), span.end));
                }
                if e == LexError::BadEscape {
                    out.tokens.push((span.start, Tok::Str(String::new()), span.end));
                }
                out.errors.push((span.start, span.end, e))
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn strings_unescape_and_bad_escapes_are_errors() {
        let lexed = super::lex(r#"print("a \"b\" \\ \n\t", x) "\q""#);
        assert_eq!(lexed.tokens[2].1, super::Tok::Str("a \"b\" \\ \n\t".into()));
        assert_eq!(lexed.errors.len(), 1, "{:?}", lexed.errors);
        assert_eq!(lexed.errors[0].2, super::LexError::BadEscape);
        // An unclosed quote starts no token.
        assert_eq!(super::lex("\"abc").errors[0].2, super::LexError::BadChar);
    }

    #[test]
    fn every_keyword_is_reserved() {
        for k in super::KEYWORDS {
            let lexed = super::lex(k);
            assert_eq!(lexed.tokens.len(), 1, "{k}");
            assert!(!matches!(lexed.tokens[0].1, super::Tok::Ident(_)), "`{k}` lexes as an identifier");
        }
    }
}
