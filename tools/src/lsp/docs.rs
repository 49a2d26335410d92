//! Documentation the language server shows, taken from the project's own docs at build time
//! (one source of truth): built-in functions from docs/language.md §8, error codes from
//! docs/errors.md, tile methods and constructors from §9.

use std::path::PathBuf;

const LANGUAGE_MD: &str = include_str!("../../../docs/language.md");

/// A built-in function: its call form as documented, its operands and its result.
pub(crate) struct Builtin {
    pub(crate) name: String,
    pub(crate) call: String,
    pub(crate) operands: String,
    pub(crate) result: String,
}

/// The rows of the built-in function table of docs/language.md §8.
pub(crate) fn builtins() -> Vec<Builtin> {
    let Some(start) = LANGUAGE_MD.find("## 8. Built-in functions") else {
        return Vec::new();
    };
    let section = &LANGUAGE_MD[start..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    let mut out: Vec<Builtin> = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        if cells.len() < 3 {
            continue;
        }
        // A row may document several calls: `min(a, b)`, `max(a, b)`; each is in backticks.
        for form in cells[0].split('`').skip(1).step_by(2).filter(|f| f.contains('(')) {
            let name = form[..form.find('(').unwrap_or(form.len())].trim().to_string();
            out.push(Builtin {
                name,
                call: form.trim().to_string(),
                operands: cells[1].to_string(),
                result: cells[2..].join(" | "),
            });
        }
    }
    out
}

/// Tile methods (`t.NAME(..)`) with a one-line description, for completion and hover.
pub(crate) fn methods() -> Vec<(String, String)> {
    let mut out = vec![
        ("cholesky_".to_string(), "`a.cholesky_(eps)`: replaces `a: tile<T, N, N>` by its lower Cholesky factor, pivots clamped below by `eps` (§9.2)".to_string()),
        ("lu_".to_string(), "`a.lu_()`: replaces `a: tile<T, N, N>` by its LU factors without pivoting: unit-lower `L`'s multipliers below the diagonal, `U` on and above it (§9.2)".to_string()),
        ("eye_".to_string(), "`t.eye_()`: sets `t` to the identity (§9.2)".to_string()),
        ("solve_triangular_".to_string(), "`l.solve_triangular_(b)`: `b <- b L^-T`, the same as `solve_right_lower_t_` (§9.2)".to_string()),
    ];
    for t in tilec_midend::Trsm::all() {
        let (side, eq) = if t.left { ("left", "op(A) X = B") } else { ("right", "X op(A) = B") };
        let tri = if t.lower { "lower" } else { "upper" };
        let op = if t.trans { "op(A) = A^T" } else { "op(A) = A" };
        let unit = if t.unit { ", unit diagonal (not read)" } else { "" };
        out.push((
            t.name(),
            format!(
                "`a.{}(b)`: solves {eq} ({side}), A the {tri} triangle of `a`, {op}{unit}; `b` is replaced by X (§9.2)",
                t.name()
            ),
        ));
    }
    out
}

/// Tile constructors (`tile<T, R, C>::NAME(..)`, §9.1).
pub(crate) const CONSTRUCTORS: &[(&str, &str)] = &[
    ("zeros", "`::zeros()`: every element 0"),
    ("eye", "`::eye()`: 1 on the diagonal, 0 elsewhere"),
    ("full", "`::full(x)`: every element `x`, a scalar of type `T`"),
    ("iota", "`::iota(axis)`: every element its index along `axis` (a constant below the rank), converted to `T`; for index masks, like Triton's `tl.arange`"),
];

/// The constructors of small matrices and vectors (`mat<T, R, C>::NAME(..)`, §3.6).
pub(crate) const MAT_CONSTRUCTORS: &[(&str, &str)] = &[
    ("zeros", "`::zeros()`: every entry 0"),
    ("eye", "`::eye()`: the identity (a vector: `[1, 0, ..]`)"),
    ("full", "`::full(x)`: every entry `x`"),
    ("new", "`::new(x0, x1, ..)`: the entries row by row, scalars or tiles of one shape (§3.6)"),
];

/// The constructors of shared arrays (`shared<T, R, C>::NAME()`, §3.4): `zeros` only.
pub(crate) const SHARED_CONSTRUCTORS: &[(&str, &str)] =
    &[("zeros", "`::zeros()`: a shared array of the program, every element 0 (§3.4)")];

/// The element types, in the order completion offers them after `tile<` and `shared<`.
pub(crate) const ELEMENT_TYPES: &[&str] = &["f32", "f64", "f16", "bf16", "i32", "i64", "u32", "bool"];

/// Scalar type names and bounds (not reserved words; `tile` and `shared` are keywords).
pub(crate) const TYPES: &[&str] = &["f32", "f64", "i32", "i64", "u32", "bool", "f16", "bf16", "float", "int"];

/// What a name outside the program's own definitions can be: a built-in function (§8), a tile
/// method (§9.2) or a constructor (§9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BuiltinKind {
    Function,
    Method,
    Constructor,
}

/// The 0-based line of docs/language.md that documents built-in `name`: its row of the §8
/// table, its paragraph or table row in §9.2 (a `_unit` solve the row of its non-unit
/// form), its row of §9.1.
pub(crate) fn doc_line(kind: BuiltinKind, name: &str) -> Option<usize> {
    let (section, patterns): (&str, Vec<String>) = match kind {
        BuiltinKind::Function => ("## 8. Built-in functions", vec![format!("`{name}(")]),
        BuiltinKind::Constructor => ("### 9.1 Constructors", vec![format!("| `::{name}(")]),
        BuiltinKind::Method => {
            ("### 9.2 In-place methods", vec![format!(".{name}("), format!(".{}(", name.replace("_unit_", "_"))])
        }
    };
    let start = LANGUAGE_MD.find(section)?;
    let first = LANGUAGE_MD[..start].lines().count();
    let body = &LANGUAGE_MD[start..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    let lines: Vec<&str> = body[..end].lines().collect();
    let table_row = |l: &str| kind != BuiltinKind::Function || l.starts_with("| `");
    patterns.iter().find_map(|p| lines.iter().position(|l| table_row(l) && l.contains(p.as_str()))).map(|i| first + i)
}

/// A folder with the embedded standard library, docs/errors.md and docs/language.md written
/// out, so that editors can open them (go to definition into `linalg` and onto built-ins, the
/// error code links). Written
/// once per tilec version; `None` if it cannot be written.
pub(crate) fn materialized() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tilec-{}", env!("CARGO_PKG_VERSION")));
        std::fs::create_dir_all(dir.join("stdlib")).ok()?;
        for (name, text) in crate::STDLIB {
            write_if_changed(&dir.join("stdlib").join(format!("{name}.tile")), text)?;
        }
        write_if_changed(&dir.join("errors.md"), crate::explain::ERRORS_MD)?;
        write_if_changed(&dir.join("language.md"), LANGUAGE_MD)?;
        Some(dir)
    })
    .clone()
}

fn write_if_changed(path: &std::path::Path, text: &str) -> Option<()> {
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Some(());
    }
    // Through a temporary file and a rename, so a reader never sees half a file.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, text).ok()?;
    std::fs::rename(&tmp, path).ok()
}

/// The anchor of an error code's heading in docs/errors.md, as Markdown renderers make it
/// (`## E0201: mismatched types` becomes `e0201-mismatched-types`).
pub(crate) fn error_anchor(code: &str) -> Option<String> {
    let entry = crate::explain::entry(code)?;
    let heading = entry.lines().next()?.trim_start_matches('#').trim();
    let mut a = String::new();
    for c in heading.chars() {
        if c.is_alphanumeric() || c == '-' || c == '_' {
            a.extend(c.to_lowercase());
        } else if c == ' ' {
            a.push('-');
        }
    }
    Some(a)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_builtin_is_documented() {
        let docs = super::builtins();
        for b in tilec_frontend::BUILTINS {
            assert!(docs.iter().any(|d| d.name == *b), "built-in `{b}` has no row in docs/language.md §8");
        }
    }

    #[test]
    fn builtin_forms_keep_their_parameters() {
        let docs = super::builtins();
        let calls: Vec<&str> = docs.iter().map(|b| b.call.as_str()).collect();
        for want in ["cdiv(a, b)", "min(a, b)", "max(a, b)", "min(t)", "fma(a, b, c)", "atomic_add(A[..], v)"] {
            assert!(calls.contains(&want), "{want} not in {calls:?}");
        }
    }

    #[test]
    fn every_builtin_method_and_constructor_has_a_line_in_the_docs() {
        use super::{doc_line, BuiltinKind, LANGUAGE_MD};
        let line = |k, n: &str| -> String {
            let i = doc_line(k, n).unwrap_or_else(|| panic!("{n}: no line"));
            LANGUAGE_MD.lines().nth(i).unwrap_or("").to_string()
        };
        for b in tilec_frontend::BUILTINS {
            assert!(line(BuiltinKind::Function, b).contains(&format!("`{b}(")), "{b}");
        }
        for (m, _) in super::methods() {
            let base = m.replace("_unit_", "_");
            assert!(line(BuiltinKind::Method, &m).contains(&format!(".{base}(")), "{m}");
        }
        for (c, _) in super::CONSTRUCTORS {
            assert!(line(BuiltinKind::Constructor, c).contains(&format!("`::{c}(")), "{c}");
        }
    }

    #[test]
    fn anchors() {
        assert_eq!(super::error_anchor("E0201").as_deref(), Some("e0201-mismatched-types"));
    }
}
