//! The language features, each a function from a document (and a position) to the protocol's
//! answer. Everything comes from the checker's semantic model and diagnostics; nothing here
//! re-checks the program.

use super::doc::Document;
use super::docs;
use super::text::LineIndex;
use lsp_types::*;
use std::collections::HashMap;
use std::str::FromStr;
use tilec_frontend::semantic::{Def, DefKind, Place};
use tilec_grammar::ast::Item;
use tilec_grammar::diag::{Diagnostic as TDiag, Severity};
use tilec_grammar::span::Span;
use tilec_midend::Type;

/// Lanes of the GPU targets, for register costs: CUDA warps and Vulkan subgroups on NVIDIA
/// (32), Vulkan subgroups on AMD (64).
const LANES: &[(u32, &str)] = &[(32, "CUDA; Vulkan on NVIDIA"), (64, "Vulkan on AMD")];

use tilec_frontend::semantic::{registers_per_lane, GPU_REGISTER_LIMIT as REG_LIMIT};

/// The URI of a place: the document itself, or the written-out copy of a stdlib module.
fn uri_of(doc_uri: &Uri, source: Option<&str>) -> Option<Uri> {
    match source {
        None => Some(doc_uri.clone()),
        Some(m) => {
            let path = docs::materialized()?.join("stdlib").join(format!("{m}.tile"));
            file_uri(&path)
        }
    }
}

/// A `file://` URI for an absolute path (spaces and `%` escaped).
fn file_uri(path: &std::path::Path) -> Option<Uri> {
    let p = path.to_str()?.replace('%', "%25").replace(' ', "%20");
    Uri::from_str(&format!("file://{p}")).ok()
}

fn location(doc_uri: &Uri, doc: &Document, p: &Place) -> Option<Location> {
    let text = doc.text_of(p.source.as_deref());
    Some(Location { uri: uri_of(doc_uri, p.source.as_deref())?, range: LineIndex::new(text).range(p.span) })
}

/// The document's diagnostics in protocol form: ranges in UTF-16, secondary labels as related
/// information, the code with a link to its entry of docs/errors.md.
pub(crate) fn diagnostics(uri: &Uri, doc: &Document) -> Vec<Diagnostic> {
    let ix = LineIndex::new(&doc.text);
    doc.diags.iter().map(|d| diagnostic(uri, &ix, d)).collect()
}

fn diagnostic(uri: &Uri, ix: &LineIndex<'_>, d: &TDiag) -> Diagnostic {
    let range = d.labels.first().map_or(Range::default(), |l| ix.range(l.span));
    let mut message = d.message.clone();
    if let Some(l) = d.labels.first().filter(|l| !l.text.is_empty()) {
        message.push_str(&format!("\n{}", l.text));
    }
    for n in &d.notes {
        message.push_str(&format!("\nnote: {n}"));
    }
    if let Some(h) = &d.help {
        message.push_str(&format!("\nhelp: {h}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .skip(1)
        .map(|l| DiagnosticRelatedInformation {
            location: Location { uri: uri.clone(), range: ix.range(l.span) },
            message: l.text.clone(),
        })
        .collect();
    let href = docs::materialized().zip(docs::error_anchor(d.code)).and_then(|(dir, anchor)| {
        let u = file_uri(&dir.join("errors.md"))?;
        Uri::from_str(&format!("{}#{anchor}", u.as_str())).ok()
    });
    Diagnostic {
        range,
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        code_description: href.map(|href| CodeDescription { href }),
        source: Some("tilec".to_string()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        tags: matches!(d.code, "W0101" | "W0102" | "W0104").then(|| vec![DiagnosticTag::UNNECESSARY]),
        data: None,
    }
}

/// The identifier around byte `offset`, with its span.
fn word_at(text: &str, offset: usize) -> Option<(Span, &str)> {
    let is_id = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = text.as_bytes();
    let offset = offset.min(b.len());
    let mut s = offset;
    while s > 0 && is_id(b[s - 1]) {
        s -= 1;
    }
    let mut e = offset;
    while e < b.len() && is_id(b[e]) {
        e += 1;
    }
    (s < e).then(|| (Span::new(s, e), &text[s..e]))
}

/// Lines about a type: its bytes and, for a tile or small matrices, its registers per lane on
/// each GPU target.
fn type_lines(t: &Type) -> Vec<String> {
    let mut out = Vec::new();
    let head = match t {
        Type::Tile { elem, .. } => {
            let bytes = t.tile_len() as u64 * elem.bytes() as u64;
            Some(format!("register tile, {} elements, {bytes} bytes", t.tile_len()))
        }
        Type::Mat { elem, .. } => {
            let n = t.mat_entries() as u64 * t.tile_len() as u64;
            Some(format!(
                "small matrices, {n} entries, {} bytes; each lane holds its matrices whole",
                n * elem.bytes() as u64
            ))
        }
        _ => None,
    };
    if let Some(head) = head {
        out.push(head);
        for (lanes, where_) in LANES {
            let r = registers_per_lane(t, *lanes as u64).unwrap_or(0);
            let mut line = format!("{r} registers per lane at {lanes} lanes ({where_})");
            if r > REG_LIMIT {
                line.push_str(&format!(": over the {REG_LIMIT}-register limit of a GPU thread, it will spill"));
            }
            out.push(line);
        }
    }
    out
}

fn markdown(value: String) -> Hover {
    Hover { contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }), range: None }
}

/// A type as the hover shows it: an array with the extents written in the definition's
/// detail (`f32[M, K]`, `shared<f32, 16>`), which its type does not hold, else as displayed.
fn shown_type(t: &Type, detail: &str) -> String {
    let Type::Array { elem, mutable, .. } = t else { return t.to_string() };
    let written = detail.split_once(": ").map_or("", |(_, w)| w);
    if let Some(dims) = written.strip_prefix("shared<").and_then(|w| w.split_once(", ")).map(|(_, d)| d) {
        return format!("shared<{}, {dims}", elem.name());
    }
    match (written.find('['), written.rfind(']')) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{}[{}]", if *mutable { "mut " } else { "" }, elem.name(), &written[a + 1..b])
        }
        _ => t.to_string(),
    }
}

/// The hover text of a definition.
fn def_hover(d: &Def) -> String {
    let mut s = format!("```tile\n{}\n```\n{}", d.detail, d.kind.describe());
    if d.at.source.is_some() {
        s.push_str(&format!(" from `{}`", d.at.source.as_deref().unwrap_or("")));
    }
    if !d.types.is_empty() && !matches!(d.kind, DefKind::ShapeVar | DefKind::Param) || d.types.len() > 1 {
        let ts: Vec<String> = d.types.iter().map(|t| shown_type(t, &d.detail)).collect();
        s.push_str(&format!(": `{}`", ts.join("` / `")));
    }
    if d.types.len() > 1 {
        s.push_str(" (one per instance)");
    }
    s.push('\n');
    if let Some(t) = d.types.first() {
        for l in type_lines(t) {
            s.push_str(&format!("\n- {l}"));
        }
    }
    if let Some(doc) = &d.doc {
        s.push_str(&format!("\n\n---\n{doc}"));
    }
    s
}

/// Hover: the definition a name resolves to (its signature, type, register cost and docs),
/// else a built-in or method, else the type of the innermost expression.
pub(crate) fn hover(doc: &Document, pos: Position) -> Option<Hover> {
    let off = LineIndex::new(&doc.text).offset(pos);
    let a = &doc.analysis;
    if let Some(d) = a.def_at(None, off as u32) {
        return Some(markdown(def_hover(&a.defs[d])));
    }
    if let Some((span, w)) = word_at(&doc.text, off) {
        let before = doc.text[..span.start as usize].trim_end();
        if before.ends_with('.') {
            if let Some((_, m)) = docs::methods().into_iter().find(|(n, _)| n == w) {
                return Some(markdown(m));
            }
        }
        if before.ends_with("::") {
            if let Some((_, m)) = docs::CONSTRUCTORS.iter().find(|(n, _)| *n == w) {
                return Some(markdown(m.to_string()));
            }
        }
        let forms: Vec<String> = docs::builtins()
            .into_iter()
            .filter(|b| b.name == w)
            .map(|b| format!("```tile\n{}\n```\n{}\n\n{}", b.call, b.operands, b.result))
            .collect();
        if !forms.is_empty() {
            return Some(markdown(format!("built-in function\n\n{}", forms.join("\n\n"))));
        }
    }
    let (_, types) = a.expr_at(None, off as u32)?;
    let mut s = format!("```tile\n{}\n```", types.iter().map(Type::to_string).collect::<Vec<_>>().join(" / "));
    if let Some(t) = types.first() {
        for l in type_lines(t) {
            s.push_str(&format!("\n- {l}"));
        }
    }
    Some(markdown(s))
}

/// Go to definition: where a name of the program or the standard library is defined; for a
/// built-in function, method or constructor, its entry in docs/language.md (written out with
/// the standard library).
pub(crate) fn definition(uri: &Uri, doc: &Document, pos: Position) -> Option<GotoDefinitionResponse> {
    let off = LineIndex::new(&doc.text).offset(pos);
    if let Some(d) = doc.analysis.def_at(None, off as u32) {
        return location(uri, doc, &doc.analysis.defs[d].at).map(GotoDefinitionResponse::Scalar);
    }
    let (span, w) = word_at(&doc.text, off)?;
    let before = doc.text[..span.start as usize].trim_end();
    let kind = if before.ends_with('.') {
        docs::BuiltinKind::Method
    } else if before.ends_with("::") {
        docs::BuiltinKind::Constructor
    } else if tilec_frontend::BUILTINS.contains(&w) {
        docs::BuiltinKind::Function
    } else {
        return None;
    };
    let line = docs::doc_line(kind, w)? as u32;
    let uri = file_uri(&docs::materialized()?.join("language.md"))?;
    let at = Position { line, character: 0 };
    Some(GotoDefinitionResponse::Scalar(Location { uri, range: Range { start: at, end: at } }))
}

pub(crate) fn references(uri: &Uri, doc: &Document, pos: Position) -> Option<Vec<Location>> {
    let off = LineIndex::new(&doc.text).offset(pos);
    let d = doc.analysis.def_at(None, off as u32)?;
    Some(doc.analysis.references(d).iter().filter_map(|p| location(uri, doc, p)).collect())
}

pub(crate) fn prepare_rename(doc: &Document, pos: Position) -> Option<PrepareRenameResponse> {
    let ix = LineIndex::new(&doc.text);
    let off = ix.offset(pos);
    let d = doc.analysis.def_at(None, off as u32)?;
    if doc.analysis.defs[d].at.source.is_some() {
        return None;
    }
    let (span, _) = word_at(&doc.text, off)?;
    Some(PrepareRenameResponse::Range(ix.range(span)))
}

/// Renames a definition and all its uses. Refuses names that are not identifiers, keywords,
/// and items of the standard library (their uses in other files are unknown).
pub(crate) fn rename(uri: &Uri, doc: &Document, pos: Position, new: &str) -> Result<Option<WorkspaceEdit>, String> {
    let ix = LineIndex::new(&doc.text);
    let off = ix.offset(pos);
    let Some(d) = doc.analysis.def_at(None, off as u32) else {
        return Ok(None);
    };
    let ident = new.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && new.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident || tilec_grammar::lexer::KEYWORDS.contains(&new) || docs::TYPES.contains(&new) {
        return Err(format!("`{new}` is not a valid name"));
    }
    let a = &doc.analysis;
    let old = &a.defs[d];
    if tilec_frontend::BUILTINS.contains(&new) {
        return Err(format!("`{new}` is a built-in function: calls of `{}` would call it instead", old.name));
    }
    let scopes = super::scopes::Scopes::new(&doc.ast);
    let scope = scopes.scope(old);
    let clash = a.defs.iter().enumerate().find(|(i, o)| {
        *i != d
            && o.name == new
            && (matches!(o.kind, DefKind::Const | DefKind::Fn | DefKind::Kernel)
                || o.at.source.is_none() && scope.is_none_or(|s| s.start <= o.at.span.start && o.at.span.end <= s.end))
    });
    if let Some((_, o)) = clash {
        return Err(format!("`{new}` is already the name of a {} here", o.kind.describe()));
    }
    // Every occurrence of the old name must be one the checker resolved; one in code it did
    // not analyse (a `fn` nothing instantiates, a body after an error) would be left behind.
    let resolved: std::collections::HashSet<u32> = a
        .defs
        .iter()
        .map(|x| &x.at)
        .chain(a.uses.iter().map(|u| &u.at))
        .filter(|p| p.source.is_none())
        .map(|p| p.span.start)
        .collect();
    for (s, t, _) in tilec_grammar::lexer::lex(&doc.text).tokens {
        if matches!(&t, tilec_grammar::lexer::Tok::Ident(n) if *n == old.name) && !resolved.contains(&(s as u32)) {
            let line = ix.position(s).line + 1;
            return Err(format!(
                "cannot rename `{}`: its occurrence on line {line} is in code the checker did not analyse \
                 (fix the errors first, or instantiate the `fn` it is in)",
                old.name
            ));
        }
    }
    let refs = a.references(d);
    if refs.iter().any(|p| p.source.is_some()) {
        return Err(format!(
            "`{}` is defined in the standard library and cannot be renamed",
            doc.analysis.defs[d].name
        ));
    }
    let edits: Vec<TextEdit> =
        refs.iter().map(|p| TextEdit { range: ix.range(p.span), new_text: new.to_string() }).collect();
    Ok(Some(workspace_edit(uri, edits)))
}

/// Edits of one document.
// `lsp-types` keys edits by `Uri`, whose parsed form clippy takes for interior mutability; the
// key is never changed while in the map.
#[allow(clippy::mutable_key_type)]
fn workspace_edit(uri: &Uri, edits: Vec<TextEdit>) -> WorkspaceEdit {
    let mut changes = HashMap::new();
    changes.insert(uri.clone(), edits);
    WorkspaceEdit { changes: Some(changes), ..Default::default() }
}

fn completion_kind(k: DefKind) -> CompletionItemKind {
    match k {
        DefKind::Local | DefKind::LoopVar => CompletionItemKind::VARIABLE,
        DefKind::Param | DefKind::ShapeVar => CompletionItemKind::VARIABLE,
        DefKind::TypeParam => CompletionItemKind::TYPE_PARAMETER,
        DefKind::ConstParam | DefKind::Const => CompletionItemKind::CONSTANT,
        DefKind::Fn | DefKind::Kernel => CompletionItemKind::FUNCTION,
    }
}

/// The definitions of the program visible at byte `off`, innermost first, one per name. While
/// the text does not parse, the last analysis that did gives them (an edit in progress, `A[0] =
/// a` without its `;`, must still complete `acc`).
fn visible_defs(doc: &Document, off: usize) -> Vec<&Def> {
    let (analysis, ast) = match (&doc.fallback, doc.syntax_errors) {
        (Some(f), true) => (&f.0, &f.1),
        _ => (&doc.analysis, &doc.ast),
    };
    let scopes = super::scopes::Scopes::new(ast);
    let mut defs: Vec<&Def> = analysis.defs.iter().collect();
    // Innermost first: later definitions shadow earlier ones.
    defs.sort_by_key(|d| std::cmp::Reverse(d.at.span.start));
    let mut seen = std::collections::HashSet::new();
    defs.into_iter().filter(|d| scopes.visible(d, off) && seen.insert(d.name.clone())).collect()
}

/// The identifier that ends at byte `end` of `text` (before `.`, `::` or `<`), if any.
fn word_before(text: &str, end: usize) -> Option<&str> {
    let s = text[..end].trim_end();
    let w = s.len() - s.bytes().rev().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count();
    (w < s.len()).then(|| &s[w..])
}

/// Inside the `<..>` of a `tile<..>` or `shared<..>` type that is open at byte `end`: whether
/// the cursor is at its first argument (the element type) rather than at an extent.
fn in_tile_generics(text: &str, end: usize) -> Option<bool> {
    let b = text.as_bytes();
    let (mut depth, mut commas, mut i) = (0i32, 0u32, end);
    while i > 0 {
        i -= 1;
        match b[i] {
            b')' | b']' | b'>' => depth += 1,
            b'(' | b'[' if depth > 0 => depth -= 1,
            b'<' if depth > 0 => depth -= 1,
            b'<' => {
                return matches!(word_before(text, i), Some("tile" | "shared" | "mat" | "vec")).then_some(commas == 0)
            }
            b',' if depth == 0 => commas += 1,
            b'(' | b'[' | b';' | b'{' | b'}' => return None,
            _ => {}
        }
    }
    None
}

/// Whether method `name` applies to a receiver of type `t`: `eye_` to every tile, the
/// factorizations and triangular solves to square float matrices (§9.2).
fn method_applies(name: &str, t: &Type) -> bool {
    match t {
        Type::Tile { elem, shape } => name == "eye_" || elem.is_float() && shape.len() == 2 && shape[0] == shape[1],
        _ => false,
    }
}

fn doc_item(label: String, kind: CompletionItemKind, detail: Option<String>, doc: Option<String>) -> CompletionItem {
    CompletionItem {
        label,
        kind: Some(kind),
        detail,
        documentation: doc
            .map(|d| Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })),
        ..Default::default()
    }
}

/// Completion, by what the cursor follows: tile methods that apply to the receiver's type after
/// `.`; constructors after `tile<..>::` (and `zeros` after `shared<..>::`); element types and
/// type parameters as the first argument of `tile<` or `shared<`, constants and const parameters
/// as its extents; elsewhere the names visible at the position (the item's earlier definitions,
/// every item, built-ins), keywords and types.
pub(crate) fn completion(doc: &Document, pos: Position) -> Option<CompletionResponse> {
    let off = LineIndex::new(&doc.text).offset(pos);
    let start = word_at(&doc.text, off).map_or(off, |(s, _)| (s.start as usize).min(off));
    let before = doc.text[..start].trim_end();
    let array = |items: Vec<CompletionItem>| Some(CompletionResponse::Array(items));
    if let Some(recv) = before.strip_suffix('.') {
        // The receiver's types (one per instance); an expression or a name the checker did not
        // type gets every method.
        let types = word_before(recv, recv.len())
            .filter(|w| recv.ends_with(w))
            .and_then(|w| visible_defs(doc, off).into_iter().find(|d| d.name == w))
            .map(|d| d.types.clone())
            .unwrap_or_default();
        let items = docs::methods()
            .into_iter()
            .filter(|(n, _)| types.is_empty() || types.iter().any(|t| method_applies(n, t)))
            .map(|(n, d)| doc_item(n, CompletionItemKind::METHOD, None, Some(d)));
        return array(items.collect());
    }
    if let Some(ty) = before.strip_suffix("::") {
        let open = ty.strip_suffix('>').and_then(|t| t.rfind('<'));
        let list = match open.and_then(|i| word_before(ty, i)) {
            Some("shared") => docs::SHARED_CONSTRUCTORS,
            Some("mat" | "vec") => docs::MAT_CONSTRUCTORS,
            _ => docs::CONSTRUCTORS,
        };
        let items = list
            .iter()
            .map(|(n, d)| doc_item(n.to_string(), CompletionItemKind::CONSTRUCTOR, None, Some(d.to_string())));
        return array(items.collect());
    }
    if let Some(first) = in_tile_generics(&doc.text, start) {
        let defs = visible_defs(doc, off);
        let items: Vec<CompletionItem> = if first {
            let types = docs::ELEMENT_TYPES
                .iter()
                .map(|t| doc_item(t.to_string(), CompletionItemKind::TYPE_PARAMETER, None, None));
            let params = defs
                .iter()
                .filter(|d| d.kind == DefKind::TypeParam)
                .map(|d| doc_item(d.name.clone(), completion_kind(d.kind), Some(d.detail.clone()), None));
            types.chain(params).collect()
        } else {
            defs.iter()
                .filter(|d| matches!(d.kind, DefKind::Const | DefKind::ConstParam))
                .map(|d| doc_item(d.name.clone(), completion_kind(d.kind), Some(d.detail.clone()), d.doc.clone()))
                .collect()
        };
        return array(items);
    }
    let mut out: Vec<CompletionItem> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for d in visible_defs(doc, off) {
        seen.insert(d.name.clone());
        out.push(doc_item(d.name.clone(), completion_kind(d.kind), Some(d.detail.clone()), d.doc.clone()));
    }
    for b in docs::builtins() {
        if seen.insert(b.name.clone()) {
            let text = format!("{}\n\n{}", b.operands, b.result);
            out.push(doc_item(b.name.clone(), CompletionItemKind::FUNCTION, Some(b.call.clone()), Some(text)));
        }
    }
    for k in tilec_grammar::lexer::KEYWORDS {
        out.push(doc_item(k.to_string(), CompletionItemKind::KEYWORD, None, None));
    }
    for t in docs::TYPES {
        out.push(doc_item(t.to_string(), CompletionItemKind::TYPE_PARAMETER, None, None));
    }
    array(out)
}

/// Splits a parameter list at its top-level commas.
fn split_params(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut depth, mut cur) = (0i32, String::new());
    for c in s.chars() {
        match c {
            '(' | '[' | '<' => depth += 1,
            ')' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Signature help inside the parentheses of a call of a `fn`, a built-in or a tile method.
pub(crate) fn signature_help(doc: &Document, pos: Position) -> Option<SignatureHelp> {
    let off = LineIndex::new(&doc.text).offset(pos);
    let b = doc.text.as_bytes();
    let (mut depth, mut commas, mut i) = (0i32, 0u32, off);
    let open = loop {
        if i == 0 {
            return None;
        }
        i -= 1;
        match b[i] {
            b')' | b']' => depth += 1,
            b'(' | b'[' if depth > 0 => depth -= 1,
            b'(' => break i,
            b'[' => return None,
            b',' if depth == 0 => commas += 1,
            b';' | b'{' | b'}' => return None,
            _ => {}
        }
    };
    let (_, name) = word_at(&doc.text, open)?;
    let mut sigs: Vec<(String, Option<String>)> = Vec::new();
    if let Some(d) = doc.analysis.defs.iter().find(|d| d.kind == DefKind::Fn && d.name == name) {
        sigs.push((d.detail.clone(), d.doc.clone()));
    }
    for bi in docs::builtins().into_iter().filter(|bi| bi.name == name) {
        sigs.push((bi.call, Some(bi.result)));
    }
    if let Some((_, d)) = docs::methods().into_iter().find(|(n, _)| n == name) {
        let call = d.split('`').nth(1).unwrap_or(name).to_string();
        sigs.push((call, Some(d)));
    }
    if sigs.is_empty() {
        return None;
    }
    let signatures = sigs
        .into_iter()
        .map(|(label, doc)| {
            let inner = label.find('(').map_or("", |a| &label[a + 1..label.rfind(')').unwrap_or(label.len())]);
            let params = split_params(inner)
                .into_iter()
                .map(|p| ParameterInformation { label: ParameterLabel::Simple(p), documentation: None })
                .collect();
            SignatureInformation {
                label,
                documentation: doc
                    .map(|d| Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: d })),
                parameters: Some(params),
                active_parameter: Some(commas),
            }
        })
        .collect();
    Some(SignatureHelp { signatures, active_signature: Some(0), active_parameter: Some(commas) })
}

/// The outline: kernels, `fn`s and `const`s of the document, with their parameters.
#[allow(deprecated)] // `DocumentSymbol::deprecated` must still be written
pub(crate) fn symbols(doc: &Document) -> Option<DocumentSymbolResponse> {
    let ix = LineIndex::new(&doc.text);
    let detail = |name: Span| {
        doc.analysis.defs.iter().find(|d| d.at.source.is_none() && d.at.span == name).map(|d| d.detail.clone())
    };
    let sym = |name: &str, kind, span: Span, sel: Span, children: Option<Vec<DocumentSymbol>>| DocumentSymbol {
        name: name.to_string(),
        detail: detail(sel),
        kind,
        tags: None,
        deprecated: None,
        range: ix.range(span),
        selection_range: ix.range(sel),
        children,
    };
    let params = |ps: &[tilec_grammar::ast::Param]| {
        Some(ps.iter().map(|p| sym(&p.name.name, SymbolKind::VARIABLE, p.span, p.name.span, None)).collect())
    };
    let out = doc
        .ast
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Kernel(k) => Some(sym(&k.name.name, SymbolKind::FUNCTION, k.span, k.name.span, params(&k.params))),
            Item::Fn(f) => Some(sym(&f.name.name, SymbolKind::FUNCTION, f.span, f.name.span, params(&f.params))),
            Item::Const(c) => Some(sym(&c.name.name, SymbolKind::CONSTANT, c.span, c.name.span, None)),
            Item::Import(m) => Some(sym(&m.name, SymbolKind::MODULE, m.span, m.span, None)),
            Item::Error(_) => None,
        })
        .collect();
    Some(DocumentSymbolResponse::Nested(out))
}

/// Inlay hints: the type of every `let` without a written type (`let acc = ..` shows
/// `: tile<f32, 16, 16>`), one per instance type.
pub(crate) fn inlay_hints(doc: &Document, range: Range) -> Vec<InlayHint> {
    let ix = LineIndex::new(&doc.text);
    let (lo, hi) = (ix.offset(range.start), ix.offset(range.end));
    let mut out = Vec::new();
    for d in &doc.analysis.defs {
        let s = d.at.span;
        if d.at.source.is_some() || d.kind != DefKind::Local || d.types.is_empty() {
            continue;
        }
        if (s.end as usize) < lo || (s.start as usize) > hi || doc.text[s.end as usize..].trim_start().starts_with(':')
        {
            continue;
        }
        let ts: Vec<String> = d.types.iter().map(Type::to_string).collect();
        out.push(InlayHint {
            position: ix.position(s.end as usize),
            label: InlayHintLabel::String(format!(": {}", ts.join(" / "))),
            kind: Some(InlayHintKind::TYPE),
            text_edits: None,
            tooltip: None,
            padding_left: None,
            padding_right: None,
            data: None,
        });
    }
    out
}

/// Quick fixes from the compiler's structured suggestions (prefix with `_`, assign instead of
/// shadowing, spelling fixes) for diagnostics that touch `range`.
pub(crate) fn code_actions(uri: &Uri, doc: &Document, range: Range) -> Vec<CodeActionOrCommand> {
    let ix = LineIndex::new(&doc.text);
    let (lo, hi) = (ix.offset(range.start) as u32, ix.offset(range.end) as u32);
    let mut out = Vec::new();
    for d in &doc.diags {
        let Some(primary) = d.labels.first() else { continue };
        if primary.span.end < lo || primary.span.start > hi {
            continue;
        }
        for s in &d.suggestions {
            let edit = workspace_edit(uri, vec![TextEdit { range: ix.range(s.span), new_text: s.replacement.clone() }]);
            out.push(CodeActionOrCommand::CodeAction(CodeAction {
                title: s.message.clone(),
                kind: Some(CodeActionKind::QUICKFIX),
                diagnostics: Some(vec![diagnostic(uri, &ix, d)]),
                edit: Some(edit),
                is_preferred: Some(d.suggestions.len() == 1),
                ..Default::default()
            }));
        }
    }
    out
}

/// The semantic token types the server uses (indices into this list are sent).
pub(crate) const TOKEN_TYPES: &[SemanticTokenType] = &[
    SemanticTokenType::VARIABLE,
    SemanticTokenType::PARAMETER,
    SemanticTokenType::TYPE_PARAMETER,
    SemanticTokenType::FUNCTION,
];

/// Modifiers: the standard ones, then `tile` (a register tile), `shape` (a shape symbol) and
/// `kernel` (a kernel, not a `fn`).
pub(crate) const TOKEN_MODIFIERS: &[&str] = &["declaration", "readonly", "defaultLibrary", "tile", "shape", "kernel"];

/// Semantic tokens of every name that the checker resolved: variables (tiles marked `tile`),
/// parameters, shape symbols (`parameter` + `readonly shape`), type and const parameters,
/// `const` items (`variable` + `readonly`), `fn`s and kernels; items from the standard library
/// carry `defaultLibrary`.
pub(crate) fn semantic_tokens(doc: &Document) -> SemanticTokens {
    let ix = LineIndex::new(&doc.text);
    let a = &doc.analysis;
    let mut spans: Vec<(Span, usize, bool)> = a
        .defs
        .iter()
        .enumerate()
        .filter(|(_, d)| d.at.source.is_none())
        .map(|(i, d)| (d.at.span, i, true))
        .chain(a.uses.iter().filter(|u| u.at.source.is_none()).map(|u| (u.at.span, u.def, false)))
        .collect();
    spans.sort_by_key(|s| (s.0.start, s.0.end));
    spans.dedup_by_key(|s| s.0.start);
    let bit = |m: &str| 1u32 << TOKEN_MODIFIERS.iter().position(|x| *x == m).unwrap_or(0);
    let mut data = Vec::new();
    let (mut line, mut col) = (0u32, 0u32);
    for (span, def, is_decl) in spans {
        let d = &a.defs[def];
        let tile = d.types.iter().any(Type::is_tile);
        let (ty, mut mods) = match d.kind {
            DefKind::Local | DefKind::LoopVar => (0, 0),
            DefKind::Param => (1, 0),
            DefKind::ShapeVar => (1, bit("readonly") | bit("shape")),
            DefKind::TypeParam => (2, 0),
            DefKind::ConstParam => (2, bit("readonly")),
            DefKind::Const => (0, bit("readonly")),
            DefKind::Fn => (3, 0),
            DefKind::Kernel => (3, bit("kernel")),
        };
        if tile {
            mods |= bit("tile");
        }
        if is_decl {
            mods |= bit("declaration");
        }
        if d.at.source.is_some() {
            mods |= bit("defaultLibrary");
        }
        let p = ix.position(span.start as usize);
        let len = doc.text.get(span.range()).map_or(0, |t| t.encode_utf16().count() as u32);
        let (dl, dc) = if p.line == line { (0, p.character - col) } else { (p.line - line, p.character) };
        data.push(SemanticToken {
            delta_line: dl,
            delta_start: dc,
            length: len,
            token_type: ty,
            token_modifiers_bitset: mods,
        });
        (line, col) = (p.line, p.character);
    }
    SemanticTokens { result_id: None, data }
}
