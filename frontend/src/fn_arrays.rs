//! Array parameters of `fn`s (language §2.3): `fn f<T>(A: T[N, 3], ..)` takes a kernel's array
//! (or an array parameter of the calling `fn`) by name. The callee sees it as an array
//! parameter of its own: its element type and const parameters inferred from the argument's,
//! its extent names bound to the argument's extents, its constant extents checked against the
//! argument's fixed ones. Calls are inlined, so the callee's loads and stores are the
//! caller's.

use crate::builder::{Binding, FnBuilder, GenericVal};
use crate::errors;
use std::collections::HashMap;
use tilec_grammar::ast::{Expr, ExprKind, GenericParam, Param, TypeExpr};
use tilec_midend::{Const, OpKind, Scalar, Type, Value};

/// A `fn` array parameter's extent, as the declaration writes it.
enum Extent {
    /// A constant: a literal, a `const` item or a const parameter's value.
    Fixed(u64),
    /// A name bound to the argument's extent (`N` in `A: T[N, 3]`).
    Name(String),
}

impl FnBuilder<'_, '_> {
    /// The extents of the array parameter type `dims` in the scope of generic arguments `g`
    /// (`None` where one is not a name or an integer constant: E0303).
    fn fn_extents(&mut self, dims: &[Expr], g: &HashMap<String, GenericVal>) -> Option<Vec<Extent>> {
        let mut out = Vec::new();
        for d in dims {
            out.push(match &d.kind {
                ExprKind::Int(v) => Extent::Fixed(*v),
                ExprKind::Name(n) => match g.get(&n.name) {
                    Some(GenericVal::Const(c)) => Extent::Fixed(c.as_i64().max(0) as u64),
                    _ => match self.cx.const_item(&n.name) {
                        Some(c) => Extent::Fixed(c.as_i64().max(0) as u64),
                        None => Extent::Name(n.name.clone()),
                    },
                },
                _ => {
                    self.error(errors::bad_array_dim(d.span));
                    return None;
                }
            });
        }
        Some(out)
    }

    /// The argument `a` of the array parameter `p` of `fn` `f`: a bare name of an array (a
    /// `mut` one for a `mut` parameter, E0205), of the parameter's rank; binds the element
    /// type parameter and the const parameters written as its extents into `g`. Its value and
    /// fixed extents.
    pub(crate) fn array_arg(
        &mut self,
        a: &Expr,
        p: &Param,
        f: &str,
        generics: &[GenericParam],
        g: &mut HashMap<String, GenericVal>,
    ) -> Option<(Value, Vec<Option<u64>>)> {
        let TypeExpr::Array { mutable, elem, dims, .. } = &p.ty else { return None };
        let binding = match &a.kind {
            ExprKind::Name(n) => {
                self.resolve_use(n, false);
                self.lookup(&n.name).cloned()
            }
            _ => None,
        };
        let Some(Binding::Array { value, mutable: amut, name, fixed }) = binding else {
            let _ = self.expr(a, None);
            self.error(errors::array_arg(a.span, f, &p.name.name));
            return None;
        };
        if *mutable && !amut {
            self.error(errors::read_only(a.span, &name));
            return None;
        }
        let Type::Array { elem: ae, rank, .. } = self.ty(value) else { return None };
        let want = crate::semantic::type_text(&p.ty, &crate::semantic::expr_text);
        if rank as usize != dims.len() {
            self.error(errors::array_arg_shape(a.span, f, &want, &format!("rank {rank}")));
            return None;
        }
        if let TypeExpr::Named(en) = &**elem {
            let is_type_param =
                generics.iter().any(|x| matches!(x, GenericParam::Type { name, .. } if name.name == en.name));
            if is_type_param {
                g.entry(en.name.clone()).or_insert(GenericVal::Type(ae));
            } else if Scalar::from_name(&en.name) != Some(ae) {
                self.error(errors::array_arg_shape(a.span, f, &want, &format!("{} elements", ae.name())));
                return None;
            }
        }
        for (d, fx) in dims.iter().zip(&fixed) {
            if let (ExprKind::Name(n), Some(v)) = (&d.kind, fx) {
                let s = generics.iter().find_map(|x| match x {
                    GenericParam::Const { name, ty, .. } if name.name == n.name => {
                        Some(crate::kernel::const_param_scalar(ty).unwrap_or(Scalar::I32))
                    }
                    _ => None,
                });
                if let Some(s) = s {
                    g.entry(n.name.clone()).or_insert(GenericVal::Const(Const::Int(*v as i64, s)));
                }
            }
        }
        Some((value, fixed))
    }

    /// Checks the constant extents of array parameter `p` of `fn` `f` (in its instance `g`)
    /// against the argument's fixed extents `fixed`: each must be known and equal.
    pub(crate) fn check_array_extents(
        &mut self,
        a: &Expr,
        p: &Param,
        f: &str,
        g: &HashMap<String, GenericVal>,
        fixed: &[Option<u64>],
    ) -> bool {
        let TypeExpr::Array { dims, .. } = &p.ty else { return true };
        let Some(ext) = self.fn_extents(dims, g) else { return false };
        for (axis, (e, fx)) in ext.iter().zip(fixed).enumerate() {
            if let Extent::Fixed(n) = e {
                if *fx != Some(*n) {
                    let want = crate::semantic::type_text(&p.ty, &crate::semantic::expr_text);
                    let got = match fx {
                        Some(v) => format!("extent {v} on axis {axis}"),
                        None => format!("an extent on axis {axis} known only at launch"),
                    };
                    self.error(errors::array_arg_shape(a.span, f, &want, &got));
                    return false;
                }
            }
        }
        true
    }

    /// Declares the array parameter `p` in a `fn` instance being built: its value, and each
    /// extent name as the array's extent on that axis (an `i32`, as a kernel's shape
    /// variables).
    pub(crate) fn declare_array_param(&mut self, p: &Param) -> Option<Value> {
        let TypeExpr::Array { mutable, elem, dims, .. } = &p.ty else { return None };
        let TypeExpr::Named(en) = &**elem else {
            self.error(errors::array_arg_shape(p.span, "this fn", "an array of scalars", "another element type"));
            return None;
        };
        let e = self.storage_type(en)?;
        let g = self.generics.clone();
        let ext = self.fn_extents(dims, &g)?;
        if dims.is_empty() || dims.len() > 8 {
            self.error(errors::bad_array_rank(p.span));
            return None;
        }
        let t = Type::Array { elem: e, rank: dims.len() as u8, mutable: *mutable };
        let detail = format!("{}: {}", p.name.name, crate::semantic::type_text(&p.ty, &crate::semantic::expr_text));
        self.define(&p.name, crate::semantic::DefKind::Param, Some(&t), detail);
        let v = self.f.new_value(t);
        let mut fixed = Vec::new();
        for (axis, x) in ext.iter().enumerate() {
            match x {
                Extent::Fixed(n) => fixed.push(Some(*n)),
                Extent::Name(n) => {
                    fixed.push(None);
                    if self.lookup(n).is_none() {
                        let d = self.emit1(OpKind::Dim(axis as u8), vec![v], Type::Scalar(Scalar::I32), p.span);
                        self.declare(n, Binding::Var(d));
                    }
                }
            }
        }
        self.declare(&p.name.name, Binding::Array { value: v, mutable: *mutable, name: p.name.name.clone(), fixed });
        Some(v)
    }
}
