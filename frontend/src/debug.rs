//! `print("label", x, t, ..)` and `assert(cond, "message")`: a debug site per call (per
//! instance), and the op that the pass `lower-debug` turns into writes of the kernel's debug
//! buffer (`midend/src/debug`).

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{Expr, ExprKind, Ident};
use tilec_midend::debug::{DebugKind, DebugSite};
use tilec_midend::{Loc, OpKind, Scalar, Type};

impl FnBuilder<'_, '_> {
    /// `print("label", values..)`: scalars and tiles, printed by the host after the launch.
    pub(crate) fn print_call(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let Some(ExprKind::Str(label)) = args.first().map(|a| &a.kind) else {
            self.error(errors::debug_string(args.first().map_or(e.span, |a| a.span), &f.name, "label", 1));
            return Ev::Err;
        };
        let (mut vals, mut tys, mut locs) = (Vec::new(), Vec::new(), Vec::new());
        let mut ok = true;
        for a in &args[1..] {
            match self.expr(a, None) {
                Ev::Val(v) if !matches!(self.ty(v), Type::Array { .. }) => {
                    // A small matrix prints as a tile of its entries (language §8).
                    let v = if matches!(self.ty(v), Type::Mat { .. }) { self.mat_as_tile(v, a.span) } else { v };
                    vals.push(v);
                    tys.push(self.ty(v));
                    locs.push(self.loc(a.span));
                }
                Ev::Err => ok = false,
                _ => {
                    self.error(errors::not_printable(a.span));
                    ok = false;
                }
            }
        }
        if !ok {
            return Ev::Err;
        }
        let site = self.site(DebugKind::Print, label, e, tys, locs);
        self.emit(OpKind::Print(site), vals, vec![], e.span);
        Ev::Unit
    }

    /// `assert(cond, "message")`: a `bool` scalar; a launch where it is false in some program
    /// fails (E0445).
    pub(crate) fn assert_call(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let message = match args.get(1).map(|a| &a.kind) {
            Some(ExprKind::Str(m)) if args.len() == 2 => m,
            _ if args.len() != 2 => {
                self.error(errors::arg_count(e.span, &f.name, 2, args.len()));
                return Ev::Err;
            }
            _ => {
                self.error(errors::debug_string(args[1].span, &f.name, "message", 2));
                return Ev::Err;
            }
        };
        let cond = match self.expr(&args[0], Some(Scalar::Bool)) {
            Ev::Val(v) if self.ty(v) == Type::Scalar(Scalar::Bool) => v,
            Ev::Val(v) => {
                let t = self.ty(v);
                self.error(errors::expected_bool(args[0].span, &t));
                return Ev::Err;
            }
            Ev::Err => return Ev::Err,
            _ => {
                self.error(errors::expected_bool(args[0].span, &Type::Scalar(Scalar::Bool)));
                return Ev::Err;
            }
        };
        let site = self.site(DebugKind::Assert, message, e, Vec::new(), Vec::new());
        self.emit(OpKind::Assert(site), vec![cond], vec![], e.span);
        Ev::Unit
    }

    /// Adds a debug site for call `e`; its index.
    fn site(&mut self, kind: DebugKind, text: &str, e: &Expr, values: Vec<Type>, value_locs: Vec<Loc>) -> u32 {
        let loc = self.loc(e.span);
        let sites = &mut self.cx.module.debug;
        sites.push(DebugSite { kind, text: text.to_string(), loc, values, value_locs });
        sites.len() as u32 - 1
    }
}
