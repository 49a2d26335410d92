//! Statements and structured control flow. Variables are SSA values rebound on assignment;
//! a `for`, `while` or `if` carries every outer variable that its body may assign as a
//! block parameter and result, so the IR stays in SSA form.

use crate::builder::{Binding, BodyKind, FnBuilder};
use crate::errors;
use crate::expr::Ev;
use crate::semantic::DefKind;
use tilec_grammar::ast::{Block, ElseBranch, Expr, ExprKind, IfStmt, IndexItem, Stmt, TypeExpr};
use tilec_grammar::span::Span;
use tilec_midend::{OpKind, Region, Scalar, Type, Value};

/// Names that a block may assign: assignment targets, in-place method receivers and the
/// right-hand side of `solve_triangular_`.
fn assigned_names(b: &Block, out: &mut Vec<String>) {
    fn expr(e: &Expr, out: &mut Vec<String>) {
        match &e.kind {
            ExprKind::Method(recv, m, args) => {
                let solve = m.name == "solve_triangular_" || tilec_midend::Trsm::from_name(&m.name).is_some();
                if let (ExprKind::Name(n), false) = (&recv.kind, solve) {
                    out.push(n.name.clone());
                }
                if solve {
                    if let Some(Expr { kind: ExprKind::Name(n), .. }) = args.first() {
                        out.push(n.name.clone());
                    }
                }
                expr(recv, out);
                args.iter().for_each(|a| expr(a, out));
            }
            ExprKind::Binary(_, a, b) => {
                expr(a, out);
                expr(b, out);
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => expr(a, out),
            ExprKind::Call(_, args) | ExprKind::TypeCall(_, _, args) => args.iter().for_each(|a| expr(a, out)),
            ExprKind::Index(base, items) => {
                expr(base, out);
                for i in items {
                    match i {
                        IndexItem::At(a) | IndexItem::RangeFrom(a) | IndexItem::RangeTo(a) => expr(a, out),
                        IndexItem::Range(a, b) => {
                            expr(a, out);
                            expr(b, out);
                        }
                        IndexItem::Full(_) => {}
                    }
                }
            }
            _ => {}
        }
    }
    fn if_stmt(s: &IfStmt, out: &mut Vec<String>) {
        expr(&s.cond, out);
        assigned_names(&s.then, out);
        match s.els.as_deref() {
            Some(ElseBranch::If(i)) => if_stmt(i, out),
            Some(ElseBranch::Block(b)) => assigned_names(b, out),
            None => {}
        }
    }
    for s in &b.stmts {
        match s {
            Stmt::Assign { target, value, .. } => {
                let root = match &target.kind {
                    ExprKind::Name(n) => Some(n),
                    ExprKind::Index(b, _) => match &b.kind {
                        ExprKind::Name(n) => Some(n),
                        _ => None,
                    },
                    _ => None,
                };
                if let Some(n) = root {
                    out.push(n.name.clone());
                }
                expr(target, out);
                expr(value, out);
            }
            Stmt::Let { value, .. } | Stmt::LetTuple { value, .. } => expr(value, out),
            Stmt::Expr(e) => expr(e, out),
            Stmt::For { body, lo, hi, .. } => {
                expr(lo, out);
                expr(hi, out);
                assigned_names(body, out);
            }
            Stmt::While { cond, body, .. } => {
                expr(cond, out);
                assigned_names(body, out);
            }
            Stmt::If(i) => if_stmt(i, out),
            Stmt::Return { .. } | Stmt::Error(_) => {}
        }
    }
    if let Some(t) = &b.tail {
        expr(t, out);
    }
}

/// The span of a statement.
fn stmt_span(s: &Stmt) -> Span {
    match s {
        Stmt::Let { span, .. }
        | Stmt::LetTuple { span, .. }
        | Stmt::Assign { span, .. }
        | Stmt::For { span, .. }
        | Stmt::While { span, .. }
        | Stmt::Return { span, .. }
        | Stmt::Error(span) => *span,
        Stmt::Expr(e) => e.span,
        Stmt::If(i) => i.span,
    }
}

impl FnBuilder<'_, '_> {
    /// Lowers the statements of a block in a new scope. A tail expression is only allowed in
    /// a `fn` body (handled by the caller), so here it is an error.
    pub(crate) fn block(&mut self, b: &Block) {
        self.push_scope();
        for s in &b.stmts {
            self.stmt(s, false);
        }
        if let Some(t) = &b.tail {
            self.error(errors::tail_not_allowed(t.span));
        }
        self.pop_scope();
    }

    /// Lowers one statement; `last_in_fn` is true for the final statement of a `fn` body.
    pub(crate) fn stmt(&mut self, s: &Stmt, last_in_fn: bool) {
        if self.terminated {
            // Not lowered: the program has returned. The analysis learns that the body is not
            // fully checked (W0104, and no unused-binding warnings).
            if !self.unreachable_noted {
                self.unreachable_noted = true;
                let at = self.place(stmt_span(s));
                self.cx.sem.note_unreachable(at);
            }
            return;
        }
        match s {
            Stmt::Let { name, ty: Some(t @ TypeExpr::Shared { .. }), value, span: _ } => {
                let v = self.value(value, None);
                if let Some(v) = v {
                    self.check_shared_annotation(t, v, value.span);
                }
                self.define_let(name, v, None);
                match v {
                    Some(v) if matches!(self.ty(v), Type::Array { .. }) => {
                        self.declare_shared(&name.name, v, name.span)
                    }
                    Some(v) => self.declare(&name.name, Binding::Var(v)),
                    None => self.declare(&name.name, Binding::Poisoned),
                }
            }
            Stmt::Let { name, ty, value, span: let_span } => {
                let want = match ty {
                    Some(t) => self.value_type(t),
                    None => None,
                };
                let v = self.value(value, want.as_ref().map(|t| t.elem()));
                if let (Some(v), Some(w)) = (v, &want) {
                    let tv = self.ty(v);
                    if &tv != w {
                        self.error(errors::assign_type(value.span, w, &tv));
                    }
                }
                self.define_let(name, v, ty.is_none().then_some(*let_span));
                match v {
                    Some(v) if matches!(self.ty(v), Type::Array { .. }) => {
                        self.declare_shared(&name.name, v, name.span)
                    }
                    Some(v) => self.declare(&name.name, Binding::Var(v)),
                    None => self.declare(&name.name, Binding::Poisoned),
                }
            }
            Stmt::LetTuple { names, value, span } => self.let_tuple(names, value, *span),
            Stmt::Assign { target, op, value, span } => self.assign(target, *op, value, *span),
            Stmt::Expr(e) => {
                self.discarded = Some(e.span);
                if let Ev::Val(_) = self.expr(e, None) {
                    // A value computed and dropped is allowed (it may be a user fn call).
                }
                self.discarded = None;
            }
            Stmt::For { var, lo, hi, step, body, span } => self.for_loop(var, lo, hi, step.as_ref(), body, *span),
            Stmt::While { cond, body, span } => self.while_loop(cond, body, *span),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::Return { value, span } => self.ret(value.as_ref(), *span, last_in_fn),
            Stmt::Error(_) => {}
        }
    }

    /// `let (a, b, ..) = e;`: binds the values of a call of a `fn` that returns several
    /// (E0228 when the counts differ or `e` is one value).
    fn let_tuple(&mut self, names: &[tilec_grammar::ast::Ident], value: &tilec_grammar::ast::Expr, span: Span) {
        let vals = match self.expr(value, None) {
            _ if names.len() < 2 => {
                self.error(errors::tuple_arity(span));
                None
            }
            Ev::Vals(vs) if vs.len() == names.len() => Some(vs),
            Ev::Vals(vs) => {
                self.error(errors::let_tuple_count(value.span, names.len(), vs.len()));
                None
            }
            Ev::Val(_) => {
                self.error(errors::let_tuple_count(value.span, names.len(), 1));
                None
            }
            Ev::Unit => {
                self.error(errors::no_value(value.span));
                None
            }
            Ev::Err => None,
        };
        for (i, n) in names.iter().enumerate() {
            let v = vals.as_ref().map(|vs| vs[i]);
            self.define_let(n, v, None);
            match v {
                Some(v) => self.declare(&n.name, Binding::Var(v)),
                None => self.declare(&n.name, Binding::Poisoned),
            }
        }
    }

    /// Records a `let`'s definition with its value's type.
    /// `untyped`: the statement's span when the `let` has no written type (the shadowing fix
    /// then rewrites it into an assignment).
    fn define_let(&mut self, name: &tilec_grammar::ast::Ident, v: Option<Value>, untyped: Option<Span>) {
        let t = v.map(|v| self.ty(v));
        let shared = v.and_then(|v| self.shared_shapes.get(&v));
        let detail = match (&t, shared) {
            (Some(t), Some(shape)) => format!("{}: {}", name.name, crate::memops::shared_name(t.elem(), shape)),
            (Some(t), None) => format!("{}: {t}", name.name),
            (None, _) => name.name.clone(),
        };
        self.define(name, DefKind::Local, t.as_ref(), detail);
        if let Some(let_span) = untyped {
            let at = self.place(name.span);
            self.cx.sem.let_spans.insert(at, let_span);
        }
    }

    fn ret(&mut self, value: Option<&Expr>, span: Span, last_in_fn: bool) {
        match self.body.clone() {
            BodyKind::Kernel { .. } => {
                if let Some(v) = value {
                    self.error(errors::kernel_return_value(v.span));
                    return;
                }
                self.emit(OpKind::Return, vec![], vec![], span);
                self.terminated = true;
            }
            BodyKind::Fn { ret } => {
                if !last_in_fn {
                    self.error(errors::early_return(span));
                    return;
                }
                let v = value.and_then(|e| self.returned_values(e, &ret));
                self.returned = Some(v);
            }
            BodyKind::Launch => {}
        }
    }

    /// Current values of the outer variables that `body` may assign.
    fn carried(&self, blocks: &[&Block]) -> Vec<(String, Value)> {
        let mut names = Vec::new();
        for b in blocks {
            assigned_names(b, &mut names);
        }
        self.visible_vars(&names)
    }

    /// Binds region parameters for carried variables in a new scope; returns them.
    fn bind_carried(&mut self, carried: &[(String, Value)]) -> Vec<Value> {
        let mut params = Vec::new();
        for (n, v) in carried {
            let t = self.ty(*v);
            let p = self.f.new_value(t);
            self.declare(n, Binding::Var(p));
            params.push(p);
        }
        params
    }

    /// Ends a region: yields the current values of the carried variables.
    fn yield_carried(&mut self, carried: &[(String, Value)], span: Span) {
        if self.terminated {
            return;
        }
        let vals: Vec<Value> = carried
            .iter()
            .map(|(n, v)| match self.lookup(n) {
                Some(Binding::Var(x)) => *x,
                _ => *v,
            })
            .collect();
        self.emit(OpKind::Yield, vals, vec![], span);
    }

    fn finish_region(&mut self, params: Vec<Value>) -> Region {
        let ops = self.pop_ops();
        self.terminated = false;
        self.unreachable_noted = false;
        Region { params, ops }
    }

    fn for_loop(
        &mut self,
        var: &tilec_grammar::ast::Ident,
        lo: &Expr,
        hi: &Expr,
        step: Option<&Expr>,
        body: &Block,
        span: Span,
    ) {
        let l = self.int_value(lo, "a loop bound");
        let h = l.and_then(|l| {
            let t = self.ty(l).elem();
            self.value(hi, Some(t))
        });
        let st = match step {
            Some(s) => {
                if let Ok(c) = self.const_eval(s) {
                    if c.as_i64() <= 0 {
                        self.error(errors::bad_step(s.span));
                    }
                }
                l.and_then(|l| {
                    let t = self.ty(l).elem();
                    self.value(s, Some(t))
                })
            }
            None => l.map(|l| {
                let t = self.ty(l).elem();
                self.constant(tilec_midend::Const::Int(1, t), span)
            }),
        };
        let (Some(l), Some(h), Some(st)) = (l, h, st) else {
            return;
        };
        let it = self.ty(l);
        if !matches!(it, Type::Scalar(Scalar::I32 | Scalar::I64)) {
            self.error(errors::loop_bounds(lo.span, &it, &it));
            return;
        }
        if self.ty(h) != it || self.ty(st) != it {
            let th = self.ty(h);
            self.error(errors::loop_bounds(hi.span, &it, &th));
            return;
        }
        let carried = self.carried(&[body]);
        self.push_scope();
        let iv = self.f.new_value(it.clone());
        self.define(var, DefKind::LoopVar, Some(&it), format!("{}: {}", var.name, it));
        self.declare(&var.name, Binding::Var(iv));
        let mut params = vec![iv];
        params.extend(self.bind_carried(&carried));
        self.push_ops();
        self.begin_loop();
        self.block(body);
        self.end_loop();
        self.yield_carried(&carried, body.span);
        let region = self.finish_region(params);
        self.pop_scope();
        self.close_structured(OpKind::For, vec![l, h, st], carried, vec![region], span);
    }

    /// Emits a structured op whose results are the carried variables and rebinds them.
    fn close_structured(
        &mut self,
        kind: OpKind,
        mut args: Vec<Value>,
        carried: Vec<(String, Value)>,
        regions: Vec<Region>,
        span: Span,
    ) {
        let is_if = kind == OpKind::If;
        if !is_if {
            args.extend(carried.iter().map(|(_, v)| *v));
        }
        let tys: Vec<Type> = carried.iter().map(|(_, v)| self.ty(*v)).collect();
        let results = self.emit_with_regions(kind, args, tys, regions, span);
        for ((n, _), r) in carried.iter().zip(results) {
            self.set_var(n, r);
        }
    }

    fn while_loop(&mut self, cond: &Expr, body: &Block, span: Span) {
        let carried = self.carried(&[body]);
        self.push_scope();
        let params = self.bind_carried(&carried);
        self.push_ops();
        if let Some(c) = self.value(cond, None) {
            let tc = self.ty(c);
            if tc != Type::Scalar(Scalar::Bool) {
                self.error(errors::expected_bool(cond.span, &tc));
            }
            self.emit(OpKind::Yield, vec![c], vec![], cond.span);
        }
        let before = self.finish_region(params);
        self.pop_scope();
        self.push_scope();
        let params = self.bind_carried(&carried);
        self.push_ops();
        self.begin_loop();
        self.block(body);
        self.end_loop();
        self.yield_carried(&carried, body.span);
        let region = self.finish_region(params);
        self.pop_scope();
        self.close_structured(OpKind::While, vec![], carried, vec![before, region], span);
    }

    fn if_stmt(&mut self, s: &IfStmt) {
        let c = self.value(&s.cond, None);
        if let Some(c) = c {
            let tc = self.ty(c);
            if tc != Type::Scalar(Scalar::Bool) {
                self.error(errors::expected_bool(s.cond.span, &tc));
            }
        }
        let mut blocks = vec![&s.then];
        let else_block;
        if let Some(e) = &s.els {
            else_block = match &**e {
                ElseBranch::Block(b) => b.clone(),
                ElseBranch::If(i) => Block { stmts: vec![Stmt::If(i.clone())], tail: None, span: i.span },
            };
            blocks.push(&else_block);
        } else {
            else_block = Block { stmts: vec![], tail: None, span: s.span };
        }
        let carried = self.carried(&blocks);
        let mut regions = Vec::new();
        for b in [&s.then, &else_block] {
            // Each branch starts from the values before the `if`.
            for (n, v) in &carried {
                self.set_var(n, *v);
            }
            self.push_ops();
            self.block(b);
            self.yield_carried(&carried, b.span);
            regions.push(self.finish_region(vec![]));
        }
        let Some(c) = c else { return };
        self.close_structured(OpKind::If, vec![c], carried, regions, s.span);
    }
}
