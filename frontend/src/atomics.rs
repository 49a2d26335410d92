//! The atomic read-modify-write family (language §8): `atomic_add`, `atomic_xchg`,
//! `atomic_min`, `atomic_max` and `atomic_cas` on an element, a slice or a gather of a `mut`
//! array or a shared array, each giving the elements' old values (Triton's `tl.atomic_*`,
//! CUDA's `atomicAdd` and `atomicCAS`), on `f16`/`bf16` arrays too. A tile access is a `map`
//! over the elements' positions (as a scatter, `gathers.rs`) whose region updates one element
//! with `AtomicRmw`; the statement `atomic_add(A[..], v);`, whose old values nobody reads,
//! stays one `AtomicAdd`.

use crate::builder::FnBuilder;
use crate::errors;
use crate::expr::Ev;
use crate::gathers::Write;
use tilec_grammar::ast::{Expr, Ident};
use tilec_midend::{OpKind, Rmw, Type, Value};

impl FnBuilder<'_, '_> {
    /// `atomic_<k>(A[..], v)` and `atomic_cas(A[..], cmp, v)`: `v` (and `cmp`) of exactly the
    /// access's type (E0201/E0202); a numeric array (E0214). On `f16`/`bf16` arrays the access
    /// and the operands are `f32` (or the array's half type) and the update rounds (IR
    /// [`Rmw`]).
    pub(crate) fn atomic(&mut self, k: Rmw, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let want = if k == Rmw::Cas { 3 } else { 2 };
        if args.len() != want {
            self.error(errors::arg_count(e.span, &f.name, want, args.len()));
            return Ev::Err;
        }
        let dropped = self.discarded == Some(e.span);
        let Some(acc) = self.written_access(&args[0], &f.name) else {
            return Ev::Err;
        };
        if !acc.ty.elem().is_float() && !acc.ty.elem().is_int() {
            self.error(errors::math_operand(args[0].span, &f.name, &acc.ty));
            return Ev::Err;
        }
        let mut vals = Vec::new();
        for a in &args[1..] {
            let Some(v) = self.stored_value(&acc, a) else {
                return Ev::Err;
            };
            vals.push(v);
        }
        if k == Rmw::Add && dropped {
            self.write_access(Write::AtomicAdd, acc, vals[0], e.span);
            return Ev::Unit;
        }
        Ev::Val(self.rmw_access(k, &acc, &vals, e))
    }

    /// The old values of the elements of `acc` updated by `k` with the operands `vals`.
    fn rmw_access(&mut self, k: Rmw, acc: &crate::places::Access, vals: &[Value], e: &Expr) -> Value {
        let elem = acc.ty.elem();
        if !acc.ty.is_tile() {
            let mut args = vec![acc.array];
            args.extend(acc.indices.iter().copied());
            args.extend_from_slice(vals);
            return self.emit1(OpKind::AtomicRmw(k), args, Type::Scalar(elem), e.span);
        }
        let acc = self.positions(acc.clone(), e.span);
        self.element_map(&acc, vals, e.span, |b, pos, x| {
            let mut args = vec![acc.array];
            args.extend_from_slice(pos);
            args.extend_from_slice(x);
            b.emit1(OpKind::AtomicRmw(k), args, Type::Scalar(elem), e.span)
        })
    }
}
