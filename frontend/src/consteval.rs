//! Compile-time evaluation of expressions: tile extents, `const` items, `block(..)`, slice
//! extents and `program_id` axes. Integers evaluate in i64, floats in f64.

use crate::builder::{Checker, FnBuilder, GenericVal};
use crate::errors;
use tilec_grammar::ast::{BinOp, Expr, ExprKind, UnOp};
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;
use tilec_midend::scalar::{self, ScalarError};
use tilec_midend::{Const, Scalar};

/// Why an expression has no compile-time value.
pub(crate) enum NotConst {
    /// It depends on run-time values (the span shows where).
    Runtime(Span),
    /// Evaluating it failed (division by zero, overflow, ...).
    Error(Diagnostic),
}

/// Evaluates `e` with `lookup` resolving names to constants.
pub(crate) fn eval(e: &Expr, lookup: &mut dyn FnMut(&str) -> Option<Const>) -> Result<Const, NotConst> {
    match &e.kind {
        ExprKind::Int(v) => match i64::try_from(*v) {
            Ok(v) => Ok(Const::Int(v, Scalar::I32)),
            Err(_) => Err(NotConst::Error(errors::const_overflow(e.span, &v.to_string(), None))),
        },
        ExprKind::Float(v) => Ok(Const::Float(*v, Scalar::F32)),
        ExprKind::Bool(b) => Ok(Const::Bool(*b)),
        ExprKind::Name(n) => lookup(&n.name).ok_or(NotConst::Runtime(e.span)),
        ExprKind::Unary(UnOp::Neg, a) => match eval(a, lookup)? {
            Const::Int(v, s) => match v.checked_neg() {
                Some(n) => Ok(Const::Int(n, s)),
                None => Err(NotConst::Error(errors::const_overflow(e.span, &format!("-({v})"), None))),
            },
            Const::Float(v, s) => Ok(Const::Float(-v, s)),
            Const::Bool(_) => Err(NotConst::Runtime(e.span)),
        },
        ExprKind::Unary(UnOp::Not, a) => match eval(a, lookup)? {
            Const::Bool(b) => Ok(Const::Bool(!b)),
            _ => Err(NotConst::Runtime(e.span)),
        },
        ExprKind::Binary(op, a, b) => {
            let x = eval(a, lookup)?;
            let y = eval(b, lookup)?;
            binary(*op, x, y, e.span)
        }
        ExprKind::Call(f, args) if args.len() == 2 && matches!(f.name.as_str(), "min" | "max" | "cdiv") => {
            let x = eval(&args[0], lookup)?;
            let y = eval(&args[1], lookup)?;
            let min = f.name == "min";
            match (f.name.as_str(), x, y) {
                ("min" | "max", Const::Float(_, s), other) | ("min" | "max", other, Const::Float(_, s))
                    if !matches!(other, Const::Bool(_)) =>
                {
                    let (a, b) = (x.as_f64(), y.as_f64());
                    Ok(Const::Float(if min { scalar::fmin(a, b) } else { scalar::fmax(a, b) }, s))
                }
                ("min" | "max", Const::Int(a, s), Const::Int(b, _)) => {
                    Ok(Const::Int(if min { a.min(b) } else { a.max(b) }, s))
                }
                ("cdiv", Const::Int(a, s), Const::Int(b, _)) => match scalar::cdiv(a, b) {
                    Ok(v) => Ok(Const::Int(v, s)),
                    Err(err) => Err(NotConst::Error(const_error(err, e.span, format!("cdiv({a}, {b})")))),
                },
                _ => Err(NotConst::Runtime(e.span)),
            }
        }
        _ => Err(NotConst::Runtime(e.span)),
    }
}

/// The diagnostic for a failed compile-time integer operation `what`.
fn const_error(e: ScalarError, span: Span, what: String) -> Diagnostic {
    match e {
        ScalarError::DivByZero => errors::const_div_zero(span),
        _ => errors::const_overflow(span, &what, None),
    }
}

fn binary(op: BinOp, x: Const, y: Const, span: Span) -> Result<Const, NotConst> {
    use Const::*;
    Ok(match (x, y) {
        (Int(a, s), Int(b, _)) => match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Rem => {
                let k = crate::expr::arith_op(op).expect("arithmetic");
                match scalar::checked_int(k, a, b) {
                    Ok(r) => Int(r, s),
                    Err(err) => {
                        return Err(NotConst::Error(const_error(err, span, format!("{a} {} {b}", op.symbol()))))
                    }
                }
            }
            BinOp::Eq => Bool(a == b),
            BinOp::Ne => Bool(a != b),
            BinOp::Lt => Bool(a < b),
            BinOp::Le => Bool(a <= b),
            BinOp::Gt => Bool(a > b),
            BinOp::Ge => Bool(a >= b),
            _ => return Err(NotConst::Runtime(span)),
        },
        (Float(_, s), Float(..) | Int(..)) | (Int(..), Float(_, s)) => {
            let (a, b) = (x.as_f64(), y.as_f64());
            match op {
                BinOp::Add => Float(a + b, s),
                BinOp::Sub => Float(a - b, s),
                BinOp::Mul => Float(a * b, s),
                BinOp::Div => Float(a / b, s),
                BinOp::Lt => Bool(a < b),
                BinOp::Le => Bool(a <= b),
                BinOp::Gt => Bool(a > b),
                BinOp::Ge => Bool(a >= b),
                _ => return Err(NotConst::Runtime(span)),
            }
        }
        (Bool(a), Bool(b)) => match op {
            BinOp::And => Bool(a && b),
            BinOp::Or => Bool(a || b),
            BinOp::Eq => Bool(a == b),
            BinOp::Ne => Bool(a != b),
            _ => return Err(NotConst::Runtime(span)),
        },
        _ => return Err(NotConst::Runtime(span)),
    })
}

impl Checker<'_> {
    /// The value of the const item `name`, evaluated once; `None` if it is not a const item
    /// or failed (reported once).
    pub(crate) fn const_item(&mut self, name: &str) -> Option<Const> {
        if let Some(v) = self.consts.get(name) {
            return *v;
        }
        let item = self.program.consts.get(name).copied()?;
        self.consts.insert(name.to_string(), None);
        // Const items may refer to other const items (cycles evaluate to an error).
        let names: Vec<String> = collect_names(&item.item.value);
        for n in collect_idents(&item.item.value) {
            if let Some(d) = self.sem.item(&n.name) {
                let at = crate::semantic::Place { source: item.source.map(str::to_string), span: n.span };
                self.sem.note_use(d, at, false);
            }
        }
        let mut env: Vec<(String, Const)> = Vec::new();
        for n in names {
            if let Some(c) = self.const_item(&n) {
                env.push((n, c));
            }
        }
        let mut lookup = |n: &str| env.iter().find(|(m, _)| m == n).map(|(_, c)| *c);
        let r = eval(&item.item.value, &mut lookup);
        let v = match r {
            Ok(c) => {
                let ty = match &item.item.ty {
                    tilec_grammar::ast::TypeExpr::Named(i) => {
                        Scalar::from_name(&i.name).ok_or_else(|| errors::unknown_type(i))
                    }
                    other => Err(errors::const_item_not_scalar(other.span(), &item.item.name.name)),
                };
                let v = ty.and_then(|s| match (c, s) {
                    (Const::Int(v, _), s) if s.is_int() && s.wrap(v) != v => {
                        Err(errors::const_item_range(item.item.value.span, &item.item.name.name, v, s))
                    }
                    (Const::Int(v, _), s) if s.is_int() => Ok(Const::Int(v, s)),
                    // Rounded once to the item's type, as the value the program computes with.
                    (Const::Int(v, _), s) if s.is_float() => Ok(scalar::cast(Const::Int(v, Scalar::I64), s)),
                    (Const::Int(v, _), s) if s.is_half() => Ok(Const::Float(s.round(v as f64), s)),
                    (Const::Float(v, _), s) if s.is_any_float() => Ok(Const::Float(s.round(v), s)),
                    (Const::Bool(b), Scalar::Bool) => Ok(Const::Bool(b)),
                    (c, s) => Err(errors::const_item_type(item.item.value.span, &item.item.name.name, s, c.ty())),
                });
                match v {
                    Ok(c) => Some(c),
                    Err(mut d) => {
                        d.source = item.source.map(str::to_string);
                        self.diags.push(d);
                        None
                    }
                }
            }
            Err(NotConst::Runtime(span)) => {
                let mut d = errors::not_const(span, "a `const` item's value");
                d.source = item.source.map(str::to_string);
                self.diags.push(d);
                None
            }
            Err(NotConst::Error(mut d)) => {
                d.source = item.source.map(str::to_string);
                self.diags.push(d);
                None
            }
        };
        self.consts.insert(name.to_string(), v);
        v
    }
}

/// Every name used in an expression.
fn collect_names(e: &Expr) -> Vec<String> {
    collect_idents(e).into_iter().map(|n| n.name.clone()).collect()
}

/// Every identifier used as a name in an expression.
pub(crate) fn collect_idents(e: &Expr) -> Vec<&tilec_grammar::ast::Ident> {
    let mut out = Vec::new();
    fn walk<'e>(e: &'e Expr, out: &mut Vec<&'e tilec_grammar::ast::Ident>) {
        match &e.kind {
            ExprKind::Name(n) => out.push(n),
            ExprKind::Binary(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(a, _) => walk(a, out),
            ExprKind::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
            _ => {}
        }
    }
    walk(e, &mut out);
    out
}

impl FnBuilder<'_, '_> {
    /// Evaluates `e` at compile time in this body's scope (const generics, const items and
    /// constants bound in scope).
    pub(crate) fn const_eval(&mut self, e: &Expr) -> Result<Const, NotConst> {
        for n in collect_idents(e) {
            self.resolve_use(n, false);
        }
        let names = collect_names(e);
        let mut env: Vec<(String, Const)> = Vec::new();
        for n in names {
            let c = match self.lookup(&n) {
                Some(_) => None,
                None => match self.generics.get(&n) {
                    Some(GenericVal::Const(c)) => Some(*c),
                    Some(GenericVal::Type(_)) => None,
                    None => self.cx.const_item(&n),
                },
            };
            if let Some(c) = c {
                env.push((n, c));
            }
        }
        let mut lookup = |n: &str| env.iter().find(|(m, _)| m == n).map(|(_, c)| *c);
        eval(e, &mut lookup)
    }

    /// Evaluates a positive compile-time tile extent (tile dimensions, reshapes), reporting
    /// E0204 when it is not constant or not in `1..=` the target's largest tile extent.
    pub(crate) fn extent(&mut self, e: &Expr, what: &str) -> Option<u32> {
        let limits = self.cx.limits;
        self.checked_extent(e, what, limits.max_extent, Some(&limits))
    }

    /// A positive compile-time extent that is not a tile's (`block`, shared arrays) in
    /// `1..=max` (E0204).
    pub(crate) fn extent_up_to(&mut self, e: &Expr, what: &str, max: u32) -> Option<u32> {
        self.checked_extent(e, what, max, None)
    }

    fn checked_extent(&mut self, e: &Expr, what: &str, max: u32, tile: Option<&crate::TargetLimits>) -> Option<u32> {
        match self.const_eval(e) {
            Ok(Const::Int(v, _)) if (1..=max as i64).contains(&v) => Some(v as u32),
            Ok(c) => {
                self.error(errors::bad_extent(e.span, what, c.as_f64(), max, tile));
                None
            }
            Err(NotConst::Runtime(span)) => {
                self.error(errors::not_const(span, what));
                None
            }
            Err(NotConst::Error(d)) => {
                self.error(d);
                None
            }
        }
    }
}
