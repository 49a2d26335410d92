//! User `fn` calls: generic arguments inferred from the argument types, one IR function per
//! instance (`name__f32__16`), a `Call` op at the call site (removed later by `inline`).

use crate::builder::{Binding, BodyKind, FnBuilder, GenericVal};
use crate::errors;
use crate::expr::{is_literal, Ev};
use crate::items::From;
use std::collections::HashMap;
use tilec_grammar::ast::{Expr, ExprKind, FnItem, GenericParam, Ident, Stmt, TypeExpr};
use tilec_midend::{Const, FuncKind, OpKind, Scalar, Type, Value};

/// Binds generic parameters of `generics` that `te` mentions from the actual type `t`.
fn unify(te: &TypeExpr, t: &Type, generics: &[GenericParam], out: &mut HashMap<String, GenericVal>) {
    let is_type_param =
        |n: &str| generics.iter().any(|g| matches!(g, GenericParam::Type { name, .. } if name.name == n));
    // The integer type of the const parameter `n`, if it is one.
    let const_param = |n: &str| {
        generics.iter().find_map(|g| match g {
            GenericParam::Const { name, ty, .. } if name.name == n => {
                Some(crate::kernel::const_param_scalar(ty).unwrap_or(Scalar::I32))
            }
            _ => None,
        })
    };
    let mut extents = |dims: &[Expr], ns: &[u32]| {
        for (d, &n) in dims.iter().zip(ns) {
            if let tilec_grammar::ast::ExprKind::Name(id) = &d.kind {
                if let Some(s) = const_param(&id.name) {
                    out.entry(id.name.clone()).or_insert(GenericVal::Const(Const::Int(n as i64, s)));
                }
            }
        }
    };
    match (te, t) {
        (TypeExpr::Named(n), Type::Scalar(s)) if is_type_param(&n.name) => {
            out.entry(n.name.clone()).or_insert(GenericVal::Type(*s));
        }
        (TypeExpr::Tile { elem, dims, .. }, Type::Tile { elem: e, shape }) if dims.len() == shape.len() => {
            extents(dims, shape);
            unify(elem, &Type::Scalar(*e), generics, out);
        }
        // `mat<T, R, C>` and `tile<mat<T, R, C>, B>`.
        (TypeExpr::Mat { elem, dims, .. }, Type::Mat { elem: e, dims: ds, shape })
            if shape.is_empty() && dims.len() == ds.len() =>
        {
            extents(dims, ds);
            unify(elem, &Type::Scalar(*e), generics, out);
        }
        (TypeExpr::Tile { elem, dims, .. }, Type::Mat { elem: e, dims: ds, shape }) if dims.len() == shape.len() => {
            extents(dims, shape);
            unify(elem, &Type::Mat { elem: *e, dims: ds.clone(), shape: Vec::new() }, generics, out);
        }
        _ => {}
    }
}

fn mangle(name: &str, item: &FnItem, g: &HashMap<String, GenericVal>) -> String {
    let mut s = name.to_string();
    for p in &item.generics {
        match g.get(&p.name().name) {
            Some(GenericVal::Type(t)) => s.push_str(&format!("__{}", t.name())),
            Some(GenericVal::Const(c)) => s.push_str(&format!("__{}", c.as_i64())),
            None => s.push_str("__?"),
        }
    }
    s
}

impl FnBuilder<'_, '_> {
    /// A call of a user `fn`.
    pub(crate) fn user_call(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let Some(item) = self.cx.program.fns.get(&f.name).copied() else {
            let mut cands: Vec<String> = self.cx.program.fns.keys().cloned().collect();
            cands.extend(crate::calls::BUILTINS.iter().map(|s| s.to_string()));
            self.error(errors::unknown_fn(f, &cands));
            return Ev::Err;
        };
        self.cx.called.insert(f.name.clone());
        self.resolve_use(f, false);
        let decl = item.item;
        if args.len() != decl.params.len() {
            self.error(errors::arg_count(e.span, &f.name, decl.params.len(), args.len()));
            return Ev::Err;
        }
        let mut vals: Vec<Option<Value>> = vec![None; args.len()];
        let mut g = HashMap::new();
        let mut ok = true;
        // The fixed extents of the arrays passed for array parameters.
        let mut extents: Vec<Option<Vec<Option<u64>>>> = vec![None; args.len()];
        for (i, a) in args.iter().enumerate() {
            if let TypeExpr::Array { .. } = &decl.params[i].ty {
                match self.array_arg(a, &decl.params[i], &f.name, &decl.generics, &mut g) {
                    Some((v, fixed)) => {
                        vals[i] = Some(v);
                        extents[i] = Some(fixed);
                    }
                    None => ok = false,
                }
                continue;
            }
            if !is_literal(a) {
                vals[i] = self.value(a, None);
                ok &= vals[i].is_some();
                if let Some(v) = vals[i] {
                    let t = self.ty(v);
                    unify(&decl.params[i].ty, &t, &decl.generics, &mut g);
                }
            }
        }
        for (i, a) in args.iter().enumerate() {
            if is_literal(a) {
                let expect = match &decl.params[i].ty {
                    TypeExpr::Named(n) => Scalar::from_name(&n.name).or(match g.get(&n.name) {
                        Some(GenericVal::Type(s)) => Some(*s),
                        // Not inferred yet: the first type of its bound (`sq(2)` with
                        // `T: float` passes 2.0 as an f32).
                        _ => decl.generics.iter().find_map(|p| match p {
                            GenericParam::Type { name, bound: Some(b) } if name.name == n.name => {
                                crate::kernel::candidates(Some(b)).ok().map(|c| c[0])
                            }
                            _ => None,
                        }),
                    }),
                    _ => None,
                };
                vals[i] = self.value(a, expect);
                if let Some(v) = vals[i] {
                    let t = self.ty(v);
                    unify(&decl.params[i].ty, &t, &decl.generics, &mut g);
                }
            }
        }
        if !ok {
            return Ev::Err;
        }
        let Some(vals) = vals.into_iter().collect::<Option<Vec<Value>>>() else {
            return Ev::Err;
        };
        for p in &decl.generics {
            match p {
                GenericParam::Const { name, ty, default: Some(d), .. } if !g.contains_key(&name.name) => {
                    let Some(s) = crate::kernel::const_param_scalar(ty) else {
                        return Ev::Err; // E0307, reported once by `check_generic_decls`
                    };
                    match crate::kernel::const_default(self.cx, name, s, d) {
                        Ok(c) => {
                            g.insert(name.name.clone(), GenericVal::Const(c));
                        }
                        Err(mut diag) => {
                            if self.cx.bad_defaults.insert(format!("{}::{}", f.name, name.name)) {
                                diag.source = item.source.map(str::to_string);
                                self.cx.diags.push(diag);
                            }
                            return Ev::Err;
                        }
                    }
                }
                GenericParam::Type { name, bound: Some(b) } => {
                    let allowed = crate::kernel::candidates(Some(b));
                    if let (Ok(allowed), Some(GenericVal::Type(t))) = (allowed, g.get(&name.name)) {
                        if !allowed.contains(t) {
                            self.error(errors::bound_violation(e.span, &f.name, name, b, *t));
                            return Ev::Err;
                        }
                    }
                }
                _ => {}
            }
            if !g.contains_key(&p.name().name) {
                self.error(errors::cannot_infer(e.span, &f.name, &p.name().name));
                return Ev::Err;
            }
        }
        for (i, a) in args.iter().enumerate() {
            if let Some(fixed) = &extents[i] {
                if !self.check_array_extents(a, &decl.params[i], &f.name, &g, fixed) {
                    return Ev::Err;
                }
            }
        }
        let Some(idx) = self.instantiate(item, g, e, true) else {
            return Ev::Err;
        };
        let func = &self.cx.module.funcs[idx as usize];
        let ptys: Vec<Type> = func.body.params.iter().map(|p| func.ty(*p).clone()).collect();
        let ret = func.ret.clone();
        for ((v, pt), a) in vals.iter().zip(&ptys).zip(args) {
            let at = self.ty(*v);
            if !at.passes_as(pt) {
                self.error(errors::arg_type(a.span, &f.name, pt, &at));
                return Ev::Err;
            }
        }
        let res = self.emit(OpKind::Call(tilec_midend::FuncId(idx)), vals, ret.clone(), e.span);
        match res.as_slice() {
            [] => Ev::Unit,
            [v] => Ev::Val(*v),
            _ => Ev::Vals(res),
        }
    }

    /// Checks a `fn` that nothing calls, as the instance `g` (empty for a non-generic `fn`).
    /// Errors of a generic one come with an E0224 at its name, naming the instance checked.
    pub(crate) fn check_uncalled(&mut self, item: From<'_, FnItem>, g: HashMap<String, GenericVal>) {
        let errors_before = self.cx.diags.len();
        let call = Expr {
            kind: tilec_grammar::ast::ExprKind::Call(item.item.name.clone(), vec![]),
            span: item.item.name.span,
        };
        let key = mangle(&item.item.name.name, item.item, &g);
        let _ = self.instantiate(item, g, &call, false);
        if !item.item.generics.is_empty() && self.cx.diags.len() > errors_before {
            let mut d = errors::uncalled_instance(item.item.name.span, &key, &item.item.name.name);
            d.source = item.source.map(str::to_string);
            self.cx.diags.push(d);
        }
    }

    fn instantiate(
        &mut self,
        item: From<'_, FnItem>,
        g: HashMap<String, GenericVal>,
        call: &Expr,
        note: bool,
    ) -> Option<u32> {
        let decl = item.item;
        let key = mangle(&decl.name.name, decl, &g);
        if let Some(i) = self.cx.instances.get(&key) {
            return Some(*i);
        }
        if self.cx.in_progress.contains(&key) {
            self.error(errors::recursion(call.span, &decl.name.name));
            return None;
        }
        self.cx.in_progress.push(key.clone());
        let errors_before = self.cx.diags.len();
        let source = item.source.map(str::to_string);
        let mut b = FnBuilder::new(&mut *self.cx, key.clone(), FuncKind::Fn, BodyKind::Fn { ret: vec![] }, g, source);
        let mut params = Vec::new();
        let mut ok = true;
        b.define_generics(&decl.generics);
        for p in &decl.params {
            if let TypeExpr::Array { .. } = &p.ty {
                match b.declare_array_param(p) {
                    Some(v) => params.push(v),
                    None => ok = false,
                }
                continue;
            }
            match b.value_type(&p.ty) {
                Some(t) => {
                    let detail =
                        format!("{}: {}", p.name.name, crate::semantic::type_text(&p.ty, &crate::semantic::expr_text));
                    b.define(&p.name, crate::semantic::DefKind::Param, Some(&t), detail);
                    let v = b.f.new_value(t);
                    b.declare(&p.name.name, Binding::Var(v));
                    params.push(v);
                }
                None => ok = false,
            }
        }
        let written: Vec<&TypeExpr> = match &decl.ret {
            Some(TypeExpr::Tuple(ts, span)) => {
                if ts.len() < 2 {
                    b.error(errors::tuple_arity(*span));
                    ok = false;
                }
                ts.iter().collect()
            }
            Some(t) => vec![t],
            None => vec![],
        };
        let mut ret = Vec::new();
        for t in written {
            match b.value_type(t) {
                Some(t) => ret.push(t),
                None => ok = false,
            }
        }
        b.body = BodyKind::Fn { ret: ret.clone() };
        if ok {
            b.fn_body(decl, &ret);
        }
        let mut func = b.finish(params);
        func.ret = ret;
        self.cx.in_progress.pop();
        if !ok {
            return None;
        }
        if note && !decl.generics.is_empty() && self.cx.diags.len() > errors_before {
            let d = errors::in_instance(call.span, &key);
            self.error(d);
        }
        self.cx.module.funcs.push(func);
        let idx = self.cx.module.funcs.len() as u32 - 1;
        self.cx.instances.insert(key, idx);
        Some(idx)
    }

    /// Lowers a `fn` body: statements, then the returned value (tail expression or a final
    /// `return e;`), ending in a `Return` op.
    fn fn_body(&mut self, decl: &FnItem, ret: &[Type]) {
        let n = decl.body.stmts.len();
        self.push_scope();
        for (i, s) in decl.body.stmts.iter().enumerate() {
            let last = i + 1 == n && decl.body.tail.is_none() && matches!(s, Stmt::Return { .. });
            self.stmt(s, last);
        }
        let value = match &decl.body.tail {
            Some(t) => Some(self.returned_values(t, ret)),
            None => self.returned.take(),
        };
        self.pop_scope();
        let span = decl.body.span;
        match value {
            Some(Some(vs)) if !ret.is_empty() => {
                let got: Vec<Type> = vs.iter().map(|v| self.ty(*v)).collect();
                if got != ret {
                    self.error(errors::return_type(span, ret, &got));
                }
                self.emit(OpKind::Return, vs, vec![], span);
            }
            Some(None) if !ret.is_empty() => {}
            None if !ret.is_empty() => self.error(errors::missing_return(decl.name.span, ret)),
            Some(Some(vs)) if !vs.is_empty() => {
                let got: Vec<Type> = vs.iter().map(|v| self.ty(*v)).collect();
                self.error(errors::unexpected_return(span, &got));
            }
            _ => {
                self.emit(OpKind::Return, vec![], vec![], span);
            }
        }
    }

    /// The values of a `fn`'s result expression: `(a, b, ..)` for several, one expression
    /// (possibly a call returning several) otherwise. `ret` types bare literals.
    pub(crate) fn returned_values(&mut self, e: &Expr, ret: &[Type]) -> Option<Vec<Value>> {
        let hint = |i: usize| ret.get(i).map(Type::elem);
        match &e.kind {
            ExprKind::Tuple(es) => {
                if es.len() < 2 {
                    self.error(errors::tuple_arity(e.span));
                    return None;
                }
                let vs: Vec<Option<Value>> = es.iter().enumerate().map(|(i, x)| self.value(x, hint(i))).collect();
                vs.into_iter().collect()
            }
            _ => match self.expr(e, hint(0)) {
                Ev::Val(v) => Some(vec![v]),
                Ev::Vals(vs) => Some(vs),
                Ev::Unit => {
                    self.error(errors::no_value(e.span));
                    None
                }
                Ev::Err => None,
            },
        }
    }
}
