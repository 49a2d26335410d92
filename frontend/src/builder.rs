//! The function builder: emits Tile IR operations into nested regions while the checker walks
//! the syntax tree, and keeps the scopes that map names to SSA values.

use crate::items::Program;
use crate::semantic::{Analysis, DefKind, Place};
use std::collections::HashMap;
use tilec_grammar::ast::{GenericParam, Ident};
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;
use tilec_midend::{Const, FuncKind, Function, Loc, Module, Op, OpKind, Region, Scalar, Type, Value};

/// What a name means in a body.
#[derive(Debug, Clone)]
pub(crate) enum Binding {
    /// A scalar or tile variable, currently holding this value.
    Var(Value),
    /// A global array parameter.
    Array { value: Value, mutable: bool, name: String, fixed: Vec<Option<u64>> },
    /// A variable whose initializer had an error (reported): uses are silently errors.
    Poisoned,
}

/// A generic argument of an instance.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GenericVal {
    Type(Scalar),
    Const(Const),
}

/// The state shared by every body being lowered: the program, the output module, the
/// diagnostics and the table of `fn` instances.
pub(crate) struct Checker<'s> {
    pub(crate) program: &'s Program<'s>,
    pub(crate) module: Module,
    pub(crate) diags: Vec<Diagnostic>,
    /// Mangled instance name to index in `module.funcs`.
    pub(crate) instances: HashMap<String, u32>,
    /// Instances being built, to reject recursion.
    pub(crate) in_progress: Vec<String>,
    /// Memoised values of const items (`None`: failed).
    pub(crate) consts: HashMap<String, Option<Const>>,
    /// Names of the `fn`s that some checked body calls (whether or not the call checked).
    pub(crate) called: std::collections::HashSet<String>,
    /// `fn`s whose const-parameter default failed and was reported (once, not per call).
    pub(crate) bad_defaults: std::collections::HashSet<String>,
    /// What the checker learns for tools: definitions, uses, expression types.
    pub(crate) sem: Analysis,
    /// The target's limits: tile extents and sizes (E0204) and shared memory (E0227).
    pub(crate) limits: crate::TargetLimits,
}

/// How a body ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BodyKind {
    Kernel {
        grid_rank: u8,
    },
    /// A `fn` returning `ret` (empty: no value; two or more: a tuple).
    Fn {
        ret: Vec<Type>,
    },
    Launch,
}

/// Builds one function.
pub(crate) struct FnBuilder<'c, 's> {
    pub(crate) cx: &'c mut Checker<'s>,
    pub(crate) f: Function,
    stack: Vec<Vec<Op>>,
    scopes: Vec<HashMap<String, Binding>>,
    /// The definitions (indices into the analysis) that names resolve to, per scope.
    def_scopes: Vec<HashMap<String, usize>>,
    /// The number of scopes open when each enclosing loop body began (innermost last).
    loop_scopes: Vec<usize>,
    pub(crate) generics: HashMap<String, GenericVal>,
    pub(crate) body: BodyKind,
    /// The module the body's source text belongs to, for diagnostics.
    pub(crate) source: Option<String>,
    /// Set once the current op list ended with `return`.
    pub(crate) terminated: bool,
    /// Set once a statement after that `return` was reported (W0104).
    pub(crate) unreachable_noted: bool,
    /// The value returned by a `fn` body's `return e;` (only as its last statement).
    pub(crate) returned: Option<Option<Vec<Value>>>,
    /// Static shapes of the shared arrays allocated in this body.
    pub(crate) shared_shapes: HashMap<Value, Vec<u32>>,
    /// Values known at compile time (constants and integer arithmetic on them), to report
    /// overflow where the program would silently wrap.
    pub(crate) known: HashMap<Value, Const>,
    /// The span of the expression statement being lowered (its value is dropped): an
    /// `atomic_add(A[..], v);` there needs no old values.
    pub(crate) discarded: Option<Span>,
}

impl<'c, 's> FnBuilder<'c, 's> {
    /// The type of a float literal without context (language §6.2): the float type of the
    /// instance's type parameters when they have exactly one (`f64` in the `f64` instance of
    /// `k<T: float>`; `f32` for a storage type), else `f32`.
    pub(crate) fn default_float(&self) -> Scalar {
        let mut found: Option<Scalar> = None;
        for g in self.generics.values() {
            if let GenericVal::Type(s) = g {
                if !s.is_float() {
                    continue;
                }
                let s = if s.is_half() { Scalar::F32 } else { *s };
                if found.is_some_and(|f| f != s) {
                    return Scalar::F32;
                }
                found = Some(s);
            }
        }
        found.unwrap_or(Scalar::F32)
    }

    pub(crate) fn new(
        cx: &'c mut Checker<'s>,
        name: String,
        kind: FuncKind,
        body: BodyKind,
        generics: HashMap<String, GenericVal>,
        source: Option<String>,
    ) -> Self {
        FnBuilder {
            cx,
            f: Function::new(name, kind),
            stack: vec![Vec::new()],
            scopes: vec![HashMap::new()],
            def_scopes: vec![HashMap::new()],
            loop_scopes: Vec::new(),
            generics,
            body,
            source,
            terminated: false,
            unreachable_noted: false,
            returned: None,
            shared_shapes: HashMap::new(),
            known: HashMap::new(),
            discarded: None,
        }
    }

    /// Reports a diagnostic against this body's source.
    pub(crate) fn error(&mut self, mut d: Diagnostic) {
        d.source = self.source.clone();
        self.cx.diags.push(d);
    }

    /// Emits an operation with results of the given types and returns the results.
    pub(crate) fn emit(&mut self, kind: OpKind, args: Vec<Value>, tys: Vec<Type>, span: Span) -> Vec<Value> {
        self.emit_with_regions(kind, args, tys, Vec::new(), span)
    }

    /// Emits an operation with one result.
    pub(crate) fn emit1(&mut self, kind: OpKind, args: Vec<Value>, ty: Type, span: Span) -> Value {
        self.emit(kind, args, vec![ty], span)[0]
    }

    /// Emits an operation with nested regions.
    pub(crate) fn emit_with_regions(
        &mut self,
        kind: OpKind,
        args: Vec<Value>,
        tys: Vec<Type>,
        regions: Vec<Region>,
        span: Span,
    ) -> Vec<Value> {
        // Every tile, however made (a slice, `outer`, `@`), respects the register-tile limit.
        for t in &tys {
            let len = t.tile_len() as u64;
            if t.is_tile() && len > self.cx.limits.max_tile_elems {
                let limits = self.cx.limits;
                self.error(crate::errors::tile_too_large(span, len, &limits));
            }
        }
        // Small matrices reach only the ops `mats::lower` splits: any other op given one is a
        // built-in that does not take them (E0232), not an IR for the verifier to reject.
        let carries = matches!(
            kind,
            OpKind::MatPart(_)
                | OpKind::MatBuild
                | OpKind::For
                | OpKind::If
                | OpKind::While
                | OpKind::Yield
                | OpKind::Call(_)
                | OpKind::Return
        );
        let mat = args.iter().map(|a| self.f.ty(*a)).chain(&tys).find(|t| matches!(t, Type::Mat { .. })).cloned();
        if let (Some(t), false) = (&mat, carries) {
            // Internal ops (`bitcast.i32` of a `copysign`) are not named.
            let name = tilec_midend::print::op_name(&kind);
            let what = if name.contains('.') { "this operation".to_string() } else { format!("`{name}`") };
            self.error(crate::errors::mat_operands(span, &what, t, None));
        }
        let results: Vec<Value> = tys.into_iter().map(|t| self.f.new_value(t)).collect();
        let op = Op { kind, args, results: results.clone(), regions, loc: self.loc(span) };
        if !self.terminated {
            self.stack.last_mut().expect("op list").push(op);
        }
        results
    }

    /// The location of `span` in this body's source.
    pub(crate) fn loc(&mut self, span: Span) -> Loc {
        let file = self.cx.file_id(&self.source);
        Loc { start: span.start, end: span.end, file }
    }

    /// Emits a scalar constant.
    pub(crate) fn constant(&mut self, c: Const, span: Span) -> Value {
        let v = self.emit1(OpKind::Const(c), vec![], Type::Scalar(c.ty()), span);
        self.known.insert(v, c);
        v
    }

    /// Starts a nested op list (a region body).
    pub(crate) fn push_ops(&mut self) {
        self.stack.push(Vec::new());
    }

    /// Ends a nested op list and returns its operations.
    pub(crate) fn pop_ops(&mut self) -> Vec<Op> {
        self.stack.pop().expect("balanced op lists")
    }

    /// Opens a lexical scope.
    pub(crate) fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
        self.def_scopes.push(HashMap::new());
    }

    /// Closes the innermost lexical scope.
    pub(crate) fn pop_scope(&mut self) {
        self.scopes.pop();
        self.def_scopes.pop();
    }

    /// Marks the start of a loop body (for the shadowing warning); pair with `end_loop`.
    pub(crate) fn begin_loop(&mut self) {
        self.loop_scopes.push(self.def_scopes.len());
    }

    /// Marks the end of a loop body.
    pub(crate) fn end_loop(&mut self) {
        self.loop_scopes.pop();
    }

    /// A span of this body's source, as a place for the analysis.
    pub(crate) fn place(&self, span: Span) -> Place {
        Place { source: self.source.clone(), span }
    }

    /// Records the definition of `name` in the innermost scope, with its type if it has one.
    pub(crate) fn define(&mut self, name: &Ident, kind: DefKind, ty: Option<&Type>, detail: String) -> usize {
        let shadows = match (kind, self.loop_scopes.last()) {
            (DefKind::Local, Some(&base)) => {
                self.def_scopes[..base].iter().rev().find_map(|s| s.get(&name.name)).copied()
            }
            _ => None,
        };
        let at = self.place(name.span);
        let d = self.cx.sem.define(&name.name, kind, at, detail);
        if let Some(t) = ty {
            self.cx.sem.add_def_type(d, t);
        }
        if shadows.is_some() {
            self.cx.sem.defs[d].shadows_in_loop = shadows;
        }
        self.def_scopes.last_mut().expect("scope").insert(name.name.clone(), d);
        d
    }

    /// Records the generic parameters of the item being lowered as definitions.
    pub(crate) fn define_generics(&mut self, gs: &[GenericParam]) {
        for g in gs {
            let kind = match g {
                GenericParam::Type { .. } => DefKind::TypeParam,
                GenericParam::Const { .. } => DefKind::ConstParam,
            };
            let text = crate::semantic::generics_text(std::slice::from_ref(g));
            let detail = text.trim_start_matches('<').trim_end_matches('>').to_string();
            let ty = match self.generics.get(&g.name().name) {
                Some(GenericVal::Const(c)) => Some(Type::Scalar(c.ty())),
                _ => None,
            };
            self.define(g.name(), kind, ty.as_ref(), detail);
        }
    }

    /// Records a use of the name `n`: the innermost definition in scope, else an item.
    pub(crate) fn resolve_use(&mut self, n: &Ident, write: bool) {
        let def =
            self.def_scopes.iter().rev().find_map(|s| s.get(&n.name)).copied().or_else(|| self.cx.sem.item(&n.name));
        if let Some(d) = def {
            let at = self.place(n.span);
            self.cx.sem.note_use(d, at, write);
        }
    }

    /// Declares a name in the innermost scope (shadowing).
    pub(crate) fn declare(&mut self, name: &str, b: Binding) {
        self.scopes.last_mut().expect("scope").insert(name.to_string(), b);
    }

    /// Looks a name up, innermost scope first.
    pub(crate) fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Rebinds an existing variable in the scope that declared it.
    pub(crate) fn set_var(&mut self, name: &str, v: Value) {
        for s in self.scopes.iter_mut().rev() {
            if let Some(b) = s.get_mut(name) {
                *b = Binding::Var(v);
                return;
            }
        }
    }

    /// Names of variables (not arrays or constants) visible here whose names are in `names`,
    /// sorted, with their current values.
    pub(crate) fn visible_vars(&self, names: &[String]) -> Vec<(String, Value)> {
        let mut out: Vec<(String, Value)> = Vec::new();
        for n in names {
            if out.iter().any(|(m, _)| m == n) {
                continue;
            }
            if let Some(Binding::Var(v)) = self.lookup(n) {
                out.push((n.clone(), *v));
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Every name bound in some scope.
    pub(crate) fn scope_names(&self) -> Vec<String> {
        self.scopes.iter().flat_map(|s| s.keys().cloned()).collect()
    }

    /// The type of a value.
    pub(crate) fn ty(&self, v: Value) -> Type {
        self.f.ty(v).clone()
    }

    /// Finishes the function: the outermost op list becomes the body.
    pub(crate) fn finish(mut self, params: Vec<Value>) -> Function {
        let ops = self.stack.pop().expect("body ops");
        self.f.body = Region { params, ops };
        self.f
    }
}

impl Checker<'_> {
    /// The `Loc::file` of `source` (`None`: the main file), added to `Module::sources` on first use.
    pub(crate) fn file_id(&mut self, source: &Option<String>) -> u32 {
        match self.module.sources.iter().position(|s| s == source) {
            Some(i) => i as u32,
            None => {
                self.module.sources.push(source.clone());
                self.module.sources.len() as u32 - 1
            }
        }
    }
}
