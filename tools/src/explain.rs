//! `tilec explain CODE`: the entry of `docs/errors.md` for an error or warning code, embedded
//! at build time so that the installed binary needs no docs folder.

use crate::Error;
use std::io::Write;

/// The text of `docs/errors.md`.
pub(crate) const ERRORS_MD: &str = include_str!("../../docs/errors.md");

/// The section of `docs/errors.md` for `code` (`E0201`, `W0101`; case-insensitive): from its
/// `## CODE:` heading up to the next heading of that level, trimmed.
pub(crate) fn entry(code: &str) -> Option<&'static str> {
    let code = code.trim().to_ascii_uppercase();
    let head = format!("## {code}:");
    let start = ERRORS_MD.find(&head)?;
    let rest = &ERRORS_MD[start..];
    let end = rest[head.len()..].find("\n## ").map_or(rest.len(), |i| i + head.len() + 1);
    Some(rest[..end].trim_end())
}

pub(crate) fn explain(code: &str, out: &mut dyn Write) -> Result<(), Error> {
    match entry(code) {
        Some(text) => {
            let _ = writeln!(out, "{text}");
            Ok(())
        }
        None => Err(Error::usage("E0501", format!("`{code}` is not an error code of tilec (see docs/errors.md)"))),
    }
}
