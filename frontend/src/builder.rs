//! The function builder: emits Tile IR operations into nested regions while the checker walks
//! the syntax tree, and keeps the scopes that map names to SSA values.

use crate::items::Program;
use std::collections::HashMap;
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
}

/// How a body ends.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum BodyKind {
    Kernel { grid_rank: u8 },
    Fn { ret: Option<Type> },
    Launch,
}

/// Builds one function.
pub(crate) struct FnBuilder<'c, 's> {
    pub(crate) cx: &'c mut Checker<'s>,
    pub(crate) f: Function,
    stack: Vec<Vec<Op>>,
    scopes: Vec<HashMap<String, Binding>>,
    pub(crate) generics: HashMap<String, GenericVal>,
    pub(crate) body: BodyKind,
    /// The module the body's source text belongs to, for diagnostics.
    pub(crate) source: Option<String>,
    /// Set once the current op list ended with `return`.
    pub(crate) terminated: bool,
    /// The value returned by a `fn` body's `return e;` (only as its last statement).
    pub(crate) returned: Option<Option<Value>>,
    /// Static shapes of the shared arrays allocated in this body.
    pub(crate) shared_shapes: HashMap<Value, Vec<u32>>,
}

impl<'c, 's> FnBuilder<'c, 's> {
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
            generics,
            body,
            source,
            terminated: false,
            returned: None,
            shared_shapes: HashMap::new(),
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
            if t.is_tile() && len > crate::types::MAX_TILE_ELEMS {
                self.error(crate::errors::tile_too_large(span, len, crate::types::MAX_TILE_ELEMS));
            }
        }
        let results: Vec<Value> = tys.into_iter().map(|t| self.f.new_value(t)).collect();
        let op = Op { kind, args, results: results.clone(), regions, loc: loc(span) };
        if !self.terminated {
            self.stack.last_mut().expect("op list").push(op);
        }
        results
    }

    /// Emits a scalar constant.
    pub(crate) fn constant(&mut self, c: Const, span: Span) -> Value {
        self.emit1(OpKind::Const(c), vec![], Type::Scalar(c.ty()), span)
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
    }

    /// Closes the innermost lexical scope.
    pub(crate) fn pop_scope(&mut self) {
        self.scopes.pop();
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

/// Converts a span to an IR location.
pub(crate) fn loc(span: Span) -> Loc {
    Loc { start: span.start, end: span.end }
}
