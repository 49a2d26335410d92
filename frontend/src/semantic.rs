//! The semantic model: what the checker learned while lowering, kept for tools (the language
//! server, warnings). For every definition (local, parameter, loop variable, shape symbol,
//! generic parameter, `const`, `fn`, `kernel`) its span, kind and types; for every use of a
//! name the definition it resolves to; for every checked expression its type. It is filled by
//! the same code that lowers, so it agrees with the compiler by construction. A generic body is
//! lowered once per instance: a span then has one type per instance (`f32` and `f64`).

use std::collections::HashMap;
use tilec_grammar::ast::{GenericParam, TypeExpr};
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;
use tilec_midend::Type;

/// What a definition is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DefKind {
    /// `let x = ...;`
    Local,
    /// A `fn` or `kernel` parameter.
    Param,
    /// The variable of a `for` loop.
    LoopVar,
    /// A symbol in an array parameter's shape (`A: f32[B, N, N]` defines `B` and `N`).
    ShapeVar,
    /// A type parameter (`T: float`).
    TypeParam,
    /// A const parameter (`const BM: i32 = 64`).
    ConstParam,
    /// A `const` item.
    Const,
    /// A `fn` item.
    Fn,
    /// A `kernel` item.
    Kernel,
}

impl DefKind {
    /// The word used for it in hovers and outlines.
    pub fn describe(self) -> &'static str {
        match self {
            DefKind::Local => "variable",
            DefKind::Param => "parameter",
            DefKind::LoopVar => "loop variable",
            DefKind::ShapeVar => "shape symbol",
            DefKind::TypeParam => "type parameter",
            DefKind::ConstParam => "const parameter",
            DefKind::Const => "const",
            DefKind::Fn => "fn",
            DefKind::Kernel => "kernel",
        }
    }
}

/// A place in the program's sources: the module (`None`: the main file) and a byte span.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place {
    pub source: Option<String>,
    pub span: Span,
}

/// One definition.
#[derive(Debug, Clone)]
pub struct Def {
    pub name: String,
    pub kind: DefKind,
    /// The span of the defining identifier.
    pub at: Place,
    /// Its types, one per distinct instance type (empty for items and type parameters).
    pub types: Vec<Type>,
    /// A one-line description: a signature, a value, a shape (`A: [mut] f32[B, N, N]`).
    pub detail: String,
    /// The `///` documentation of an item.
    pub doc: Option<String>,
    /// How often its value is read (summed over instances).
    pub reads: u32,
    /// How often it is assigned after its definition.
    pub writes: u32,
    /// For a `let` inside a loop body: the outer definition of the same name that it shadows.
    pub shadows_in_loop: Option<usize>,
}

/// One use of a name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Use {
    pub at: Place,
    /// Index into [`Analysis::defs`].
    pub def: usize,
    /// An assignment target (`x = ...`) rather than a read.
    pub write: bool,
}

/// What the checker knows about a program (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    pub defs: Vec<Def>,
    pub uses: Vec<Use>,
    /// Types of checked expressions, by place (one entry per distinct type).
    pub exprs: HashMap<Place, Vec<Type>>,
    by_place: HashMap<Place, usize>,
    /// The span of a `let` statement without a written type, by the place of its name.
    pub(crate) let_spans: HashMap<Place, Span>,
    /// Statements after a `return` (not lowered, so not fully analysed).
    unreachable: Vec<Place>,
    items: HashMap<String, usize>,
    seen_uses: std::collections::HashSet<Use>,
}

impl Analysis {
    /// Adds a definition, or returns the existing one at the same place (another instance).
    pub(crate) fn define(&mut self, name: &str, kind: DefKind, at: Place, detail: String) -> usize {
        if let Some(&i) = self.by_place.get(&at) {
            return i;
        }
        self.defs.push(Def {
            name: name.to_string(),
            kind,
            at: at.clone(),
            types: Vec::new(),
            detail,
            doc: None,
            reads: 0,
            writes: 0,
            shadows_in_loop: None,
        });
        let i = self.defs.len() - 1;
        self.by_place.insert(at, i);
        if matches!(kind, DefKind::Const | DefKind::Fn | DefKind::Kernel) {
            self.items.entry(name.to_string()).or_insert(i);
        }
        i
    }

    /// Records a statement that follows a `return` (the caller reports the first of a block).
    pub(crate) fn note_unreachable(&mut self, at: Place) {
        if !self.unreachable.contains(&at) {
            self.unreachable.push(at);
        }
    }

    /// The `const`, `fn` or `kernel` item named `name`.
    pub(crate) fn item(&self, name: &str) -> Option<usize> {
        self.items.get(name).copied()
    }

    /// Adds a type to a definition (once per distinct type).
    pub(crate) fn add_def_type(&mut self, def: usize, t: &Type) {
        let d = &mut self.defs[def];
        if !d.types.contains(t) {
            d.types.push(t.clone());
        }
    }

    /// Records a use of `def` at `at`. Reads are counted per instance; places once.
    pub(crate) fn note_use(&mut self, def: usize, at: Place, write: bool) {
        if write {
            self.defs[def].writes += 1;
        } else {
            self.defs[def].reads += 1;
        }
        let u = Use { at, def, write };
        if self.seen_uses.insert(u.clone()) {
            self.uses.push(u);
        }
    }

    /// Records the type of an expression.
    pub(crate) fn note_expr(&mut self, at: Place, t: &Type) {
        let ts = self.exprs.entry(at).or_default();
        if !ts.contains(t) {
            ts.push(t.clone());
        }
    }

    /// The definition whose identifier or one of whose uses covers byte `offset` of `source`.
    pub fn def_at(&self, source: Option<&str>, offset: u32) -> Option<usize> {
        let covers = |p: &Place| p.source.as_deref() == source && p.span.start <= offset && offset <= p.span.end;
        if let Some(i) = self.defs.iter().position(|d| covers(&d.at)) {
            return Some(i);
        }
        self.uses.iter().find(|u| covers(&u.at)).map(|u| u.def)
    }

    /// Every place that names definition `def`: its identifier first, then its uses in
    /// source order.
    pub fn references(&self, def: usize) -> Vec<Place> {
        let mut out: Vec<Place> = self.uses.iter().filter(|u| u.def == def).map(|u| u.at.clone()).collect();
        out.sort();
        out.dedup();
        out.insert(0, self.defs[def].at.clone());
        out
    }

    /// The innermost checked expression covering byte `offset`, with its types.
    pub fn expr_at(&self, source: Option<&str>, offset: u32) -> Option<(Span, &[Type])> {
        self.exprs
            .iter()
            .filter(|(p, _)| p.source.as_deref() == source && p.span.start <= offset && offset < p.span.end)
            .min_by_key(|(p, _)| (p.span.end - p.span.start, p.span.start))
            .map(|(p, t)| (p.span, t.as_slice()))
    }

    /// Warnings about the main file's bindings: variables and parameters never read (W0101,
    /// W0102), with a special help for a `let` in a loop that shadows the accumulator it was
    /// meant to update. Names starting with `_` are exempt. Tiles too big for GPU registers
    /// at `lanes` lanes (W0103) and small matrices past 144 entries (W0107) are always
    /// reported; the unused ones only if `unused`.
    pub(crate) fn warnings(&self, unused: bool, lanes: u64) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for p in self.unreachable.iter().filter(|p| p.source.is_none()) {
            out.push(
                Diagnostic::warning("W0104", "unreachable statement".to_string())
                    .label(p.span, "this comes after a `return` and never runs")
                    .help("remove it, or move the `return` after it"),
            );
        }
        // Reads in unreachable code are not seen, so unused-binding warnings would be wrong.
        let unused = unused && self.unreachable.is_empty();
        for d in &self.defs {
            if d.at.source.is_none() && d.kind == DefKind::Local {
                if let Some(w) = register_warning(d, lanes) {
                    out.push(w);
                }
                if let Some(w) = mat_warning(d) {
                    out.push(w);
                }
            }
            if !unused || d.at.source.is_some() || d.reads > 0 || d.name.starts_with('_') {
                continue;
            }
            let w = match d.kind {
                DefKind::Local | DefKind::LoopVar if d.writes > 0 => {
                    Diagnostic::warning("W0101", format!("variable `{}` is assigned but never read", d.name))
                        .label(d.at.span, "assigned here and later, never read")
                }
                DefKind::Local | DefKind::LoopVar => {
                    let mut w = Diagnostic::warning("W0101", format!("unused variable `{}`", d.name));
                    match d.shadows_in_loop {
                        Some(outer) => {
                            w = w
                                .label(d.at.span, "this `let` declares a new variable, which is never read")
                                .label(self.defs[outer].at.span, "it shadows this variable, which keeps its value")
                                .help(format!(
                                    "to update `{0}` in the loop, assign instead: `{0} = ...;` (or `{0} += ...;`)",
                                    d.name
                                ));
                            let same_type = self.defs[outer].types == d.types;
                            if let Some(let_kw) = self.let_spans.get(&d.at).filter(|_| same_type) {
                                w = w.suggest(
                                    format!("assign to `{}` instead", d.name),
                                    Span { start: let_kw.start, end: d.at.span.start },
                                    "",
                                );
                            }
                        }
                        None => {
                            w = w
                                .label(d.at.span, "never read")
                                .help(format!("if this is intentional, prefix it with an underscore: `_{}`", d.name))
                                .suggest("prefix it with an underscore", d.at.span, format!("_{}", d.name))
                        }
                    }
                    w
                }
                DefKind::Param => Diagnostic::warning("W0102", format!("unused parameter `{}`", d.name))
                    .label(d.at.span, "never read")
                    .help(format!("if this is intentional, prefix it with an underscore: `_{}`", d.name))
                    .suggest("prefix it with an underscore", d.at.span, format!("_{}", d.name)),
                _ => continue,
            };
            out.push(w);
        }
        out.sort_by_key(|d| d.labels.first().map(|l| l.span.start));
        out
    }
}

/// The most 32-bit registers a GPU thread may use (PTX ISA); a register tile that needs more
/// per lane spills to local memory.
pub const GPU_REGISTER_LIMIT: u64 = 255;

/// 32-bit registers per lane that a register tile of type `t` takes at `lanes` lanes: its
/// share of the elements; for small matrices every entry of each matrix the lane holds
/// (`ceil(B / lanes)` of a tile of `B`, language §3.6).
pub fn registers_per_lane(t: &Type, lanes: u64) -> Option<u64> {
    match t {
        Type::Tile { elem, .. } => Some((t.tile_len() as u64 * elem.bytes() as u64).div_ceil(4).div_ceil(lanes)),
        Type::Mat { elem, .. } => {
            let per_matrix = (t.mat_entries() as u64 * elem.bytes() as u64).div_ceil(4);
            Some(per_matrix * (t.tile_len() as u64).div_ceil(lanes))
        }
        _ => None,
    }
}

/// The most entries of a small matrix before W0107 (Quadrants warns past the same size).
pub const MAT_ENTRY_WARNING: u32 = 144;

/// The lane counts of the GPU targets that W0107 gives registers for: a CUDA warp, and the
/// smallest Vulkan subgroup (lavapipe's and Intel's 8).
const WARNING_LANES: [u64; 2] = [32, 8];

/// W0107: a `let` holding small matrices of more than [`MAT_ENTRY_WARNING`] entries, which
/// every lane keeps whole in registers.
fn mat_warning(d: &Def) -> Option<Diagnostic> {
    let t = d.types.iter().find(|t| t.mat_entries() > MAT_ENTRY_WARNING)?;
    let regs: Vec<String> =
        WARNING_LANES.iter().filter_map(|&l| Some(format!("{} at {l} lanes", registers_per_lane(t, l)?))).collect();
    Some(
        Diagnostic::warning(
            "W0107",
            format!("`{}` is a {t}: {} entries per matrix, more than {MAT_ENTRY_WARNING}", d.name, t.mat_entries()),
        )
        .label(d.at.span, format!("registers per lane on GPUs: {}", regs.join(", ")))
        .note("each lane holds every entry of its matrices in registers; past 255 a GPU lane spills to local memory and runs far slower (the CPU target is not affected)")
        .help("for larger matrices use register tiles (`tile<T, N, N>`, spread over the lanes) and the stdlib's batched kernels (`potrf_batched`, `getrf_batched`, `syevj_batched`)"),
    )
}

/// W0103: a `let` whose tile needs more registers per lane than a GPU thread has, with the
/// target's `lanes` lanes to spread it over; not for tiles beyond the GPU targets' limits.
fn register_warning(d: &Def, lanes: u64) -> Option<Diagnostic> {
    // A tile beyond the GPU targets' limits is for the CPU alone (a GPU build reports E0204).
    let gpu = |t: &&Type| crate::TargetLimits::CUDA.holds(t);
    let (t, regs) =
        d.types.iter().filter(gpu).filter_map(|t| Some((t, registers_per_lane(t, lanes)?))).max_by_key(|x| x.1)?;
    (regs > GPU_REGISTER_LIMIT).then(|| {
        Diagnostic::warning(
            "W0103",
            format!(
                "`{}` is a {t} register tile: {regs} registers per lane on {} {lanes}-lane GPU",
                d.name,
                article(lanes)
            ),
        )
        .label(d.at.span, format!("{regs} registers per lane, over the {GPU_REGISTER_LIMIT} a GPU thread has"))
        .note("on GPU targets it spills to local memory and runs far slower; the CPU target is not affected")
        .help("use smaller tiles (loop over 16x16 or 32x32 blocks), or a shared array (`shared<T, R, C>::zeros()`)")
    })
}

/// "an" before a number read with a vowel sound (8, 11, 18, 80-89, 800-899, ..), else "a".
fn article(n: u64) -> &'static str {
    if n.to_string().starts_with('8') || n == 11 || n == 18 {
        "an"
    } else {
        "a"
    }
}

/// The text of a written type, for details (`f32[B, N, N]`, `tile<T, 16, 16>`).
pub(crate) fn type_text(t: &TypeExpr, src_dims: &dyn Fn(&tilec_grammar::ast::Expr) -> String) -> String {
    let dims = |ds: &[tilec_grammar::ast::Expr]| ds.iter().map(src_dims).collect::<Vec<_>>().join(", ");
    match t {
        TypeExpr::Named(n) => n.name.clone(),
        TypeExpr::Array { mutable, elem, dims: ds, optional, .. } => format!(
            "{}{}[{}]{}",
            if *mutable { "mut " } else { "" },
            type_text(elem, src_dims),
            dims(ds),
            if *optional { "?" } else { "" }
        ),
        TypeExpr::Tile { elem, dims: ds, .. } => format!("tile<{}, {}>", type_text(elem, src_dims), dims(ds)),
        TypeExpr::Shared { elem, dims: ds, .. } => format!("shared<{}, {}>", type_text(elem, src_dims), dims(ds)),
        TypeExpr::Mat { vector, elem, dims: ds, .. } => {
            format!("{}<{}, {}>", if *vector { "vec" } else { "mat" }, type_text(elem, src_dims), dims(ds))
        }
        TypeExpr::Tuple(ts, _) => {
            format!("({})", ts.iter().map(|t| type_text(t, src_dims)).collect::<Vec<_>>().join(", "))
        }
        TypeExpr::Error(_) => "?".to_string(),
    }
}

/// A short text of an expression as written, for details (names and literals; others `..`).
pub(crate) fn expr_text(e: &tilec_grammar::ast::Expr) -> String {
    use tilec_grammar::ast::ExprKind;
    match &e.kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Name(n) => n.name.clone(),
        ExprKind::Binary(op, a, b) => format!("{} {} {}", expr_text(a), op.symbol(), expr_text(b)),
        ExprKind::Call(f, args) => {
            format!("{}({})", f.name, args.iter().map(expr_text).collect::<Vec<_>>().join(", "))
        }
        _ => "..".to_string(),
    }
}

/// The signature line of a generic parameter list (`<T: float, const BM: i32 = 64>`).
pub(crate) fn generics_text(gs: &[GenericParam]) -> String {
    if gs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = gs
        .iter()
        .map(|g| match g {
            GenericParam::Type { name, bound: Some(b) } => format!("{}: {}", name.name, b.name),
            GenericParam::Type { name, bound: None } => name.name.clone(),
            GenericParam::Const { name, ty, default, candidates } => {
                let mut s = format!("const {}: {}", name.name, type_text(ty, &expr_text));
                if let Some(d) = default {
                    s.push_str(&format!(" = {}", expr_text(d)));
                }
                if !candidates.is_empty() {
                    let c: Vec<String> = candidates.iter().map(expr_text).collect();
                    s.push_str(&format!(" in [{}]", c.join(", ")));
                }
                s
            }
        })
        .collect();
    format!("<{}>", parts.join(", "))
}
