//! Checking and lowering of expressions: literals, names, operators, casts. Calls, methods and
//! indexing are in `calls.rs` and `places.rs`.

use crate::builder::{Binding, FnBuilder, GenericVal};
use crate::errors;
use tilec_grammar::ast::{BinOp, Expr, ExprKind, UnOp};
use tilec_grammar::span::Span;
use tilec_midend::{self as ir, Const, OpKind, Scalar, Type, Value};

/// The outcome of checking an expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ev {
    /// It has this value.
    Val(Value),
    /// It is a statement-like call with no value (`d.cholesky_(eps)`).
    Unit,
    /// It is a call of a `fn` returning several values (only `let (a, b) = ..` takes them).
    Vals(Vec<Value>),
    /// It had an error, already reported.
    Err,
}

/// Whether an expression is a bare numeric literal (whose type comes from its context).
pub(crate) fn is_literal(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) => true,
        ExprKind::Unary(UnOp::Neg, a) => is_literal(a),
        _ => false,
    }
}

/// Adds the fix for two scalars of different numeric types: cast the narrower operand (the
/// right one if both are as wide) to the other's type, when it is a name, literal, call or
/// index (so that `x as T` needs no parentheses).
fn cast_fix(
    d: tilec_grammar::diag::Diagnostic,
    a: (&Expr, &Type),
    b: (&Expr, &Type),
) -> tilec_grammar::diag::Diagnostic {
    let (Type::Scalar(sa), Type::Scalar(sb)) = (a.1, b.1) else { return d };
    if *sa == Scalar::Bool || *sb == Scalar::Bool {
        return d;
    }
    let (x, to) = if sa.bytes() < sb.bytes() { (a.0, sb) } else { (b.0, sa) };
    let simple = matches!(
        x.kind,
        ExprKind::Name(_) | ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Call(..) | ExprKind::Index(..)
    );
    if !simple {
        return d;
    }
    let at = tilec_grammar::span::Span { start: x.span.end, end: x.span.end };
    d.suggest(format!("convert it with `as {}`", to.name()), at, format!(" as {}", to.name()))
}

impl FnBuilder<'_, '_> {
    /// Checks an expression that must have a value; `expect` types bare literals.
    pub(crate) fn value(&mut self, e: &Expr, expect: Option<Scalar>) -> Option<Value> {
        match self.expr(e, expect) {
            Ev::Val(v) => Some(v),
            Ev::Unit => {
                self.error(errors::no_value(e.span));
                None
            }
            Ev::Vals(vs) => {
                self.error(errors::several_values(e.span, vs.len()));
                None
            }
            Ev::Err => None,
        }
    }

    /// Checks a scalar expression of an integer type (loop bounds, indices), cast-free.
    pub(crate) fn int_value(&mut self, e: &Expr, what: &str) -> Option<Value> {
        let v = self.value(e, Some(Scalar::I32))?;
        match self.ty(v) {
            Type::Scalar(s) if s.is_int() => Some(v),
            t => {
                self.error(errors::expected_int(e.span, what, &t));
                None
            }
        }
    }

    /// Checks and lowers an expression, recording its type for the analysis.
    pub(crate) fn expr(&mut self, e: &Expr, expect: Option<Scalar>) -> Ev {
        let r = self.expr_kind(e, expect);
        // `map`'s element stands in for its tile argument at that argument's span: not recorded.
        let synthetic = matches!(&e.kind, ExprKind::Name(n) if n.name.contains('#'));
        if let (Ev::Val(v), false) = (&r, synthetic) {
            let v = *v;
            let t = self.ty(v);
            let at = self.place(e.span);
            self.cx.sem.note_expr(at, &t);
        }
        r
    }

    fn expr_kind(&mut self, e: &Expr, expect: Option<Scalar>) -> Ev {
        match &e.kind {
            ExprKind::Int(v) => {
                let c = match expect {
                    Some(s) if s.is_any_float() => Const::Float(*v as f64, s),
                    Some(s) if s.is_int() => Const::Int(*v as i64, s),
                    _ => Const::Int(*v as i64, Scalar::I32),
                };
                if let Const::Int(x, s) = c {
                    let max = match s {
                        Scalar::I32 => i32::MAX as i64,
                        Scalar::U32 => u32::MAX as i64,
                        _ => i64::MAX,
                    };
                    if x > max || x < 0 {
                        self.error(errors::literal_range(e.span, s));
                        return Ev::Err;
                    }
                }
                Ev::Val(self.constant(c, e.span))
            }
            ExprKind::Float(v) => {
                let s = match expect {
                    Some(s) if s.is_any_float() => s,
                    _ => self.default_float(),
                };
                Ev::Val(self.constant(Const::Float(*v, s), e.span))
            }
            ExprKind::Bool(b) => Ev::Val(self.constant(Const::Bool(*b), e.span)),
            ExprKind::Tuple(_) => {
                self.error(errors::tuple_not_here(e.span, "a tuple"));
                Ev::Err
            }
            ExprKind::Name(n) => {
                self.resolve_use(n, false);
                self.name_value(n, e)
            }
            ExprKind::Unary(op, a) => self.unary(op, a, e, expect),
            ExprKind::Cast(a, to) => {
                let Some(v) = self.value(a, None) else {
                    return Ev::Err;
                };
                let tilec_grammar::ast::TypeExpr::Named(n) = to else {
                    return Ev::Err;
                };
                let Some(s) = self.scalar_type(n) else {
                    return Ev::Err;
                };
                match self.convert(v, s, e.span) {
                    Some(v) => Ev::Val(v),
                    None => {
                        let t = self.ty(v);
                        self.error(errors::bad_cast(e.span, &t, s));
                        Ev::Err
                    }
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, e, expect),
            ExprKind::Call(f, args) => self.call(f, args, e, expect),
            ExprKind::TypeCall(t, m, args) => self.type_call(t, m, args, e),
            ExprKind::Method(recv, m, args) => self.method(recv, m, args, e),
            ExprKind::Index(base, idx) => self.index_value(base, idx, e),
            ExprKind::Named(n, _) => {
                self.error(errors::named_arg(e.span, &n.name, &[]));
                Ev::Err
            }
            ExprKind::Str(text) => {
                self.error(errors::string_here(e.span, text));
                Ev::Err
            }
            ExprKind::Error => Ev::Err,
        }
    }

    /// `v` converted to the element type `s` (`v as s`): scalars by the rules of §6.6, tiles
    /// element by element, as a `map`. `None` for an array.
    pub(crate) fn convert(&mut self, v: Value, s: Scalar, span: Span) -> Option<Value> {
        match self.ty(v) {
            Type::Scalar(from) if from == s => Some(v),
            Type::Scalar(_) => Some(self.emit1(OpKind::Cast(s), vec![v], Type::Scalar(s), span)),
            Type::Tile { elem, .. } if elem == s => Some(v),
            Type::Tile { .. } => {
                Some(self.map_elementwise(&[v], s, span, |b, xs| {
                    b.emit1(OpKind::Cast(s), vec![xs[0]], Type::Scalar(s), span)
                }))
            }
            Type::Mat { .. } => self.mat_cast(v, s, span),
            _ => None,
        }
    }

    /// The value of a name: a variable, a const parameter or a `const` item.
    fn name_value(&mut self, n: &tilec_grammar::ast::Ident, e: &Expr) -> Ev {
        match self.lookup(&n.name).cloned() {
            Some(Binding::Var(v)) => Ev::Val(v),
            Some(Binding::Array { .. }) => {
                self.error(errors::array_as_value(n));
                Ev::Err
            }
            Some(Binding::Poisoned) => Ev::Err,
            None => match self.generics.get(&n.name).cloned() {
                Some(GenericVal::Const(c)) => Ev::Val(self.constant(c, e.span)),
                Some(GenericVal::Type(_)) => {
                    self.error(errors::type_as_value(n));
                    Ev::Err
                }
                None => match self.cx.const_item(&n.name) {
                    Some(c) => Ev::Val(self.constant(c, e.span)),
                    None if self.cx.program.consts.contains_key(&n.name) => Ev::Err,
                    None => {
                        let cands = self.names_in_scope();
                        self.error(errors::unknown_name(n, &cands));
                        Ev::Err
                    }
                },
            },
        }
    }

    fn unary(&mut self, op: &UnOp, a: &Expr, e: &Expr, expect: Option<Scalar>) -> Ev {
        // A negated literal keeps the literal's flexible type.
        let Some(v) = self.value(a, expect) else {
            return Ev::Err;
        };
        let t = self.ty(v);
        if let (UnOp::Neg, Type::Mat { .. }) = (op, &t) {
            return Ev::Val(self.mat_neg(v, e.span));
        }
        if *op == UnOp::Not && t.is_tile() && t.elem() == Scalar::Bool {
            let span = e.span;
            return Ev::Val(self.map_elementwise(&[v], Scalar::Bool, span, |g, x| {
                g.emit1(OpKind::Un(ir::UnOp::Not), x.to_vec(), Type::Scalar(Scalar::Bool), span)
            }));
        }
        let ok = match op {
            UnOp::Neg => t.elem() != Scalar::Bool && !matches!(t, Type::Array { .. }),
            UnOp::Not => t == Type::Scalar(Scalar::Bool),
        };
        if !ok {
            self.error(errors::bad_unary(e.span, *op, &t));
            return Ev::Err;
        }
        // `-x as T` as written, not `-(x as T)` (whose cast starts at its parenthesis).
        if let (UnOp::Neg, ExprKind::Cast(inner, _), Type::Scalar(to)) = (op, &a.kind, &t) {
            if inner.span.start == a.span.start {
                self.neg_cast_warning(inner, *to, e.span);
            }
        }
        let k = match op {
            UnOp::Neg => ir::UnOp::Neg,
            UnOp::Not => ir::UnOp::Not,
        };
        Ev::Val(self.emit1(OpKind::Un(k), vec![v], t, e.span))
    }

    /// W0105 for `-x as T` (which is `-(x as T)`, language §6.1, the reverse of Rust) where `x`
    /// is a constant (literals, `const` items and parameters) and converting `-x` would give
    /// another value: a float out of `T`'s range or negative for an unsigned `T` (conversions
    /// saturate). Only in the main file.
    fn neg_cast_warning(&mut self, inner: &Expr, to: Scalar, span: Span) {
        if self.source.is_some() {
            return;
        }
        let Ok(c) = self.const_eval(inner) else { return };
        let Ok(neg) = ir::scalar::un(ir::UnOp::Neg, c, c.ty()) else { return };
        let Ok(this) = ir::scalar::un(ir::UnOp::Neg, ir::scalar::cast(c, to), to) else { return };
        let other = ir::scalar::cast(neg, to);
        let show = |c: Const| match c {
            Const::Int(v, _) => v.to_string(),
            Const::Float(v, _) => format!("{v:?}"),
            Const::Bool(b) => b.to_string(),
        };
        if show(this) == show(other) {
            return;
        }
        let t = to.name();
        let d = tilec_grammar::diag::Diagnostic::warning(
            "W0105",
            format!("`-x as {t}` converts first, then negates: {}, not {}", show(this), show(other)),
        )
        .label(span, format!("this is `-(x as {t})` = {}", show(this)))
        .note("in .tile a unary minus applies after `as` (language §6.1), the reverse of Rust")
        .help(format!(
            "write `(-x) as {t}` to convert the negative value ({}), or `-(x as {t})` to keep this one",
            show(other)
        ));
        self.error(d);
    }

    /// Checks two operands that share an element type: the non-literal one first, so that a
    /// bare literal takes its element type (`x * 2.0` with `x: f64`).
    pub(crate) fn operand_pair(
        &mut self,
        a: &Expr,
        b: &Expr,
        expect: Option<Scalar>,
    ) -> (Option<Value>, Option<Value>) {
        if is_literal(a) && !is_literal(b) {
            let vb = self.value(b, expect);
            let hint = vb.map(|v| self.ty(v).elem()).or(expect);
            (self.value(a, hint), vb)
        } else {
            let va = self.value(a, expect);
            let hint = va.map(|v| self.ty(v).elem()).or(expect);
            (va, self.value(b, hint))
        }
    }

    /// Names visible in this body, for "did you mean" suggestions.
    pub(crate) fn names_in_scope(&self) -> Vec<String> {
        let mut v: Vec<String> = self.cx.program.consts.keys().cloned().collect();
        v.extend(self.generics.keys().cloned());
        v.extend(self.scope_names());
        v
    }

    fn binary(&mut self, op: BinOp, a: &Expr, b: &Expr, e: &Expr, expect: Option<Scalar>) -> Ev {
        let cmp = matches!(op, BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge);
        let expect = if cmp || matches!(op, BinOp::And | BinOp::Or) { None } else { expect };
        let (va, vb) = self.operand_pair(a, b, expect);
        let (Some(va), Some(vb)) = (va, vb) else {
            return Ev::Err;
        };
        let (ta, tb) = (self.ty(va), self.ty(vb));
        if matches!(ta, Type::Array { .. }) || matches!(tb, Type::Array { .. }) {
            return Ev::Err;
        }
        if matches!(ta, Type::Mat { .. }) || matches!(tb, Type::Mat { .. }) {
            return self.mat_binary(op, va, vb, e.span);
        }
        if op == BinOp::MatMul {
            return self.matmul(va, vb, a, b, e);
        }
        if ta.elem() != tb.elem() {
            let d = errors::mismatch(e.span, op, &ta, a.span, &tb, b.span);
            self.error(cast_fix(d, (a, &ta), (b, &tb)));
            return Ev::Err;
        }
        let elem = ta.elem();
        if cmp || matches!(op, BinOp::And | BinOp::Or) {
            let kind = if matches!(op, BinOp::And | BinOp::Or) {
                if elem != Scalar::Bool {
                    self.error(errors::expected_bool(e.span, &ta));
                    return Ev::Err;
                }
                OpKind::Bin(if op == BinOp::And { ir::BinOp::And } else { ir::BinOp::Or })
            } else {
                OpKind::Cmp(match op {
                    BinOp::Eq => ir::CmpOp::Eq,
                    BinOp::Ne => ir::CmpOp::Ne,
                    BinOp::Lt => ir::CmpOp::Lt,
                    BinOp::Le => ir::CmpOp::Le,
                    BinOp::Gt => ir::CmpOp::Gt,
                    _ => ir::CmpOp::Ge,
                })
            };
            if !ta.is_tile() && !tb.is_tile() {
                return Ev::Val(self.emit1(kind, vec![va, vb], Type::Scalar(Scalar::Bool), e.span));
            }
            // On tiles, element by element: a mask (`tile<bool, ..>`).
            let Some(vs) = self.broadcast_operands(op.symbol(), e, &[(a, va), (b, vb)]) else {
                return Ev::Err;
            };
            let span = e.span;
            return Ev::Val(self.map_elementwise(&vs, Scalar::Bool, span, |g, x| {
                g.emit1(kind, x.to_vec(), Type::Scalar(Scalar::Bool), span)
            }));
        }
        if elem == Scalar::Bool {
            self.error(errors::bool_arith(e.span, op.symbol()));
            return Ev::Err;
        }
        let Some(vs) = self.broadcast_operands(op.symbol(), e, &[(a, va), (b, vb)]) else {
            return Ev::Err;
        };
        let (va, vb) = (vs[0], vs[1]);
        let (ta, tb) = (self.ty(va), self.ty(vb));
        let ty = match (&ta, &tb) {
            (Type::Tile { .. }, _) => ta.clone(),
            (_, Type::Tile { .. }) => tb.clone(),
            _ => ta.clone(),
        };
        let k = arith_op(op).unwrap_or(ir::BinOp::Rem);
        let folded = self.fold_int(op, va, vb, e);
        let r = self.emit1(OpKind::Bin(k), vec![va, vb], ty, e.span);
        match folded {
            Ok(Some(c)) => {
                self.known.insert(r, c);
            }
            Ok(None) => {}
            Err(()) => return Ev::Err,
        }
        Ev::Val(r)
    }

    /// Integer `+ - *` of two compile-time values: the result, or E0226 when it does not fit
    /// the operands' type (the program would wrap around silently).
    fn fold_int(&mut self, op: BinOp, va: Value, vb: Value, e: &Expr) -> Result<Option<Const>, ()> {
        let (Some(Const::Int(a, s)), Some(Const::Int(b, _))) = (self.known.get(&va), self.known.get(&vb)) else {
            return Ok(None);
        };
        let (a, b, s) = (*a, *b, *s);
        let k = match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul => arith_op(op).expect("arithmetic"),
            _ => return Ok(None),
        };
        match tilec_midend::scalar::checked_int(k, a, b) {
            Ok(r) if s.wrap(r) == r => Ok(Some(Const::Int(r, s))),
            _ => {
                let what = format!("{a} {} {b}", op.symbol());
                self.error(errors::const_overflow(e.span, &what, Some(s)));
                Err(())
            }
        }
    }

    fn matmul(&mut self, va: Value, vb: Value, a: &Expr, b: &Expr, e: &Expr) -> Ev {
        let (ta, tb) = (self.ty(va), self.ty(vb));
        let (Type::Tile { elem: ea, shape: sa }, Type::Tile { elem: eb, shape: sb }) = (&ta, &tb) else {
            self.error(errors::matmul_operands(e.span, &ta, &tb));
            return Ev::Err;
        };
        if ea != eb {
            self.error(errors::mismatch(e.span, BinOp::MatMul, &ta, a.span, &tb, b.span));
            return Ev::Err;
        }
        if sa.len() != 2 || sb.is_empty() || sa[1] != sb[0] {
            self.error(errors::matmul_inner(e.span, &ta, a.span, &tb, b.span));
            return Ev::Err;
        }
        let shape = if sb.len() == 2 { vec![sa[0], sb[1]] } else { vec![sa[0]] };
        Ev::Val(self.emit1(OpKind::Matmul, vec![va, vb], Type::Tile { elem: *ea, shape }, e.span))
    }
}

/// The IR operation of an arithmetic operator (`+ - * / %`), `None` for the others.
pub(crate) fn arith_op(op: BinOp) -> Option<ir::BinOp> {
    Some(match op {
        BinOp::Add => ir::BinOp::Add,
        BinOp::Sub => ir::BinOp::Sub,
        BinOp::Mul => ir::BinOp::Mul,
        BinOp::Div => ir::BinOp::Div,
        BinOp::Rem => ir::BinOp::Rem,
        _ => return None,
    })
}
