//! The item table: every `const`, `fn` and `kernel` of the main file and of the modules it
//! imports, by name, with the module each came from.

use crate::errors;
use crate::Sources;
use std::collections::HashMap;
use tilec_grammar::ast::{ConstItem, File, FnItem, Ident, Item, KernelItem};
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;

/// An item with the module it was declared in (`None`: the main file).
pub(crate) struct From<'s, T> {
    pub(crate) item: &'s T,
    pub(crate) source: Option<&'s str>,
}

impl<T> Clone for From<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for From<'_, T> {}

/// Every item of a program, by name.
pub struct Program<'s> {
    pub(crate) consts: HashMap<String, From<'s, ConstItem>>,
    pub(crate) fns: HashMap<String, From<'s, FnItem>>,
    pub(crate) kernels: Vec<From<'s, KernelItem>>,
}

impl<'s> Program<'s> {
    /// Collects the items of the main file and of the modules it imports (transitively).
    /// Reports unknown modules (E0105) and duplicate names (E0104).
    pub(crate) fn collect(sources: &'s Sources<'s>) -> (Program<'s>, Vec<Diagnostic>) {
        let mut p = Program { consts: HashMap::new(), fns: HashMap::new(), kernels: Vec::new() };
        let mut diags = Vec::new();
        let mut seen: Vec<Option<&'s str>> = vec![None];
        let mut queue: Vec<(Option<&'s str>, &'s File)> = vec![(None, sources.main)];
        // Item names are global to a program: a name defined twice, in one file or in two
        // modules, is an error (the first definition is kept).
        let mut names: HashMap<&str, (Span, Option<&'s str>)> = HashMap::new();
        while let Some((source, file)) = queue.pop() {
            for item in &file.items {
                let (name, span) = match item {
                    Item::Import(m) => {
                        match sources.modules.iter().find(|(n, _)| *n == m.name) {
                            Some((n, f)) => {
                                if !seen.contains(&Some(n.as_str())) {
                                    seen.push(Some(n.as_str()));
                                    queue.push((Some(n.as_str()), f));
                                }
                            }
                            None => {
                                let mut d = errors::unknown_module(m, sources.modules.iter().map(|m| m.0.as_str()));
                                d.source = source.map(str::to_string);
                                diags.push(d);
                            }
                        }
                        continue;
                    }
                    Item::Const(c) => {
                        p.consts.entry(c.name.name.clone()).or_insert(From { item: c, source });
                        (&c.name.name, c.name.span)
                    }
                    Item::Fn(f) => {
                        p.fns.entry(f.name.name.clone()).or_insert(From { item: f, source });
                        (&f.name.name, f.name.span)
                    }
                    Item::Kernel(k) => {
                        // Kernels of imported modules can be launched by name too.
                        p.kernels.push(From { item: k, source });
                        (&k.name.name, k.name.span)
                    }
                    Item::Error(_) => continue,
                };
                match names.get(name.as_str()) {
                    Some((first, first_source)) if *first_source == source => {
                        let mut d = errors::duplicate(name, *first, span);
                        d.source = source.map(str::to_string);
                        diags.push(d);
                    }
                    Some((first, first_source)) => {
                        // Point at the main file's definition; name the module.
                        let (at, module) = match (first_source, source) {
                            (None, Some(m)) => (*first, m),
                            (Some(m), _) => (span, *m),
                            (None, None) => (span, ""),
                        };
                        diags.push(errors::duplicate_across(name, at, module));
                    }
                    None => {
                        names.insert(name.as_str(), (span, source));
                    }
                }
            }
        }
        (p, diags)
    }

    /// The kernel named `name`.
    pub(crate) fn kernel(&self, name: &str) -> Option<From<'s, KernelItem>> {
        self.kernels.iter().find(|k| k.item.name.name == name).copied()
    }

    /// Names of all kernels, in declaration order.
    pub fn kernel_names(&self) -> Vec<String> {
        self.kernels.iter().map(|k| k.item.name.name.clone()).collect()
    }
}

/// Records every `const`, `fn` and `kernel` of the program as a definition of the analysis,
/// with its signature or declared type and its `///` docs.
pub(crate) fn define_items(cx: &mut crate::builder::Checker<'_>) {
    use crate::semantic::{expr_text, generics_text, type_text, DefKind, Place};
    let p = cx.program;
    let params = |ps: &[tilec_grammar::ast::Param]| {
        ps.iter().map(|p| format!("{}: {}", p.name.name, type_text(&p.ty, &expr_text))).collect::<Vec<_>>().join(", ")
    };
    /// An item's name, kind, module, detail and docs.
    type ItemDef<'a> = (&'a Ident, DefKind, Option<&'a str>, String, Option<&'a String>);
    let mut items: Vec<ItemDef<'_>> = Vec::new();
    for c in p.consts.values() {
        let detail =
            format!("const {}: {} = {}", c.item.name.name, type_text(&c.item.ty, &expr_text), expr_text(&c.item.value));
        items.push((&c.item.name, DefKind::Const, c.source, detail, c.item.doc.as_ref()));
    }
    for f in p.fns.values() {
        let i = f.item;
        let mut detail = format!("fn {}{}({})", i.name.name, generics_text(&i.generics), params(&i.params));
        if let Some(r) = &i.ret {
            detail.push_str(&format!(" -> {}", type_text(r, &expr_text)));
        }
        items.push((&i.name, DefKind::Fn, f.source, detail, i.doc.as_ref()));
    }
    for k in &p.kernels {
        let i = k.item;
        let mut detail = format!("kernel {}{}({})", i.name.name, generics_text(&i.generics), params(&i.params));
        detail.push_str(&format!(" grid({})", i.grid.iter().map(expr_text).collect::<Vec<_>>().join(", ")));
        items.push((&i.name, DefKind::Kernel, k.source, detail, i.doc.as_ref()));
    }
    // Deterministic order: by module, then position.
    items.sort_by_key(|(n, _, s, _, _)| (s.map(str::to_string), n.span.start));
    for (name, kind, source, detail, doc) in items {
        let at = Place { source: source.map(str::to_string), span: name.span };
        let d = cx.sem.define(&name.name, kind, at, detail);
        cx.sem.defs[d].doc = doc.cloned();
    }
}
