//! Calls: built-in functions (`program_id`, `cdiv`, math, `outer`, reductions), tile
//! constructors (`tile<T, R, C>::eye()`), in-place tile methods (`cholesky_`,
//! `solve_triangular_`, `eye_`) and calls of user `fn`s (instantiated, then inlined).

use crate::builder::{BodyKind, FnBuilder};
use crate::errors;
use crate::expr::Ev;
use tilec_grammar::ast::{Expr, ExprKind, Ident, TypeExpr};
use tilec_midend::{self as ir, Const, Fill, OpKind, Rmw, Scalar, Type, Value};

/// Built-in free functions, for "did you mean" suggestions.
/// The names of the built-in functions (docs/language.md §8).
pub const BUILTINS: &[&str] = &[
    "program_id",
    "num_programs",
    "cdiv",
    "min",
    "max",
    "abs",
    "sqrt",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "exp2",
    "log2",
    "rsqrt",
    "fma",
    "outer",
    "column",
    "transpose",
    "sum",
    "sync",
    "map",
    "atomic_add",
    "atomic_xchg",
    "atomic_min",
    "atomic_max",
    "atomic_cas",
    "masked_store",
    "max_axis",
    "min_axis",
    "where",
    "argmax",
    "argmin",
    "prod",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "flip",
    "copysign",
    "signbit",
    "row",
    "reshape",
    "join",
    "split",
    "scan",
    "sort",
    "argsort",
    "topk",
    "present",
    "print",
    "assert",
    "dot",
    "cross",
    "norm",
    "trace",
    "determinant",
    "inverse",
    "sym_eig",
    "svd",
    "polar_decompose",
];

impl FnBuilder<'_, '_> {
    /// Whether `tt`, the type of `method`'s receiver `recv`, is a square float tile (E0212
    /// otherwise), as the in-place factorizations need.
    fn square_float(&mut self, recv: &Expr, method: &str, tt: &Type) -> bool {
        match tt {
            Type::Tile { shape, .. } if shape.len() != 2 || shape[0] != shape[1] => {
                self.error(errors::needs_square(recv.span, method, tt));
                false
            }
            Type::Tile { elem, .. } if !elem.is_any_float() => {
                self.error(errors::needs_float(recv.span, method, tt));
                false
            }
            Type::Tile { shape, .. } if shape[0] > crate::limits::FACTOR_MAX => {
                self.error(errors::factor_too_large(recv.span, method, shape[0], crate::limits::FACTOR_MAX));
                false
            }
            _ => true,
        }
    }

    fn arity(&mut self, f: &Ident, args: &[Expr], n: usize, e: &Expr) -> bool {
        if args.len() != n {
            self.error(errors::arg_count(e.span, &f.name, n, args.len()));
            return false;
        }
        true
    }

    /// A free-function call: a built-in or a user `fn`.
    pub(crate) fn call(&mut self, f: &Ident, args: &[Expr], e: &Expr, expect: Option<Scalar>) -> Ev {
        let name = f.name.as_str();
        let named_ok =
            matches!(name, "cumsum" | "cumprod" | "cummax" | "cummin" | "scan" | "sort" | "argsort" | "topk");
        let named = args.iter().find_map(|a| match &a.kind {
            ExprKind::Named(n, _) => Some((n, a.span)),
            _ => None,
        });
        if let (Some((n, span)), false) = (named, named_ok) {
            self.error(errors::named_arg(span, &n.name, &[]));
            return Ev::Err;
        }
        match name {
            "program_id" | "num_programs" => {
                if !self.arity(f, args, 1, e) {
                    return Ev::Err;
                }
                let rank = match self.body {
                    BodyKind::Kernel { grid_rank } => grid_rank,
                    _ => {
                        self.error(errors::program_id_outside(e.span, name));
                        return Ev::Err;
                    }
                };
                let axis = match self.const_eval(&args[0]) {
                    Ok(Const::Int(a, _)) if a >= 0 && a < rank as i64 => a as u8,
                    Ok(c) => {
                        self.error(errors::axis_range(args[0].span, c.as_i64(), rank));
                        return Ev::Err;
                    }
                    Err(_) => {
                        self.error(errors::not_const(args[0].span, "a grid axis"));
                        return Ev::Err;
                    }
                };
                let k = if name == "program_id" { OpKind::ProgramId(axis) } else { OpKind::NumPrograms(axis) };
                Ev::Val(self.emit1(k, vec![], Type::Scalar(Scalar::I32), e.span))
            }
            "cdiv" => {
                if !self.arity(f, args, 2, e) {
                    return Ev::Err;
                }
                let (Some(a), Some(b)) =
                    (self.int_value(&args[0], "`cdiv`'s operand"), self.int_value(&args[1], "`cdiv`'s operand"))
                else {
                    return Ev::Err;
                };
                let (ta, tb) = (self.ty(a), self.ty(b));
                if ta != tb {
                    self.error(errors::mismatch(
                        e.span,
                        tilec_grammar::ast::BinOp::Div,
                        &ta,
                        args[0].span,
                        &tb,
                        args[1].span,
                    ));
                    return Ev::Err;
                }
                // cdiv(a, b) = (a + b - 1) / b for the non-negative operands it is meant for.
                let one = self.constant(Const::Int(1, ta.elem()), e.span);
                let s = self.emit1(OpKind::Bin(ir::BinOp::Add), vec![a, b], ta.clone(), e.span);
                let s = self.emit1(OpKind::Bin(ir::BinOp::Sub), vec![s, one], ta.clone(), e.span);
                Ev::Val(self.emit1(OpKind::Bin(ir::BinOp::Div), vec![s, b], ta, e.span))
            }
            "where" => self.where_(f, args, e, expect),
            "argmax" | "argmin" => self.arg_reduce(f, args, e),
            "cumsum" | "cumprod" | "cummax" | "cummin" | "scan" => self.scan(f, args, e),
            "flip" => self.flip(f, args, e),
            "sort" | "argsort" | "topk" => self.sort_call(f, args, e),
            "reshape" => self.reshape(f, args, e),
            "join" | "split" => self.join_split(f, args, e),
            "copysign" => self.copysign(f, args, e, expect),
            "signbit" => self.signbit(f, args, e, expect),
            "present" => self.present(f, args, e),
            "min" | "max" if args.len() == 2 => {
                let k = if name == "min" { ir::BinOp::Min } else { ir::BinOp::Max };
                self.elementwise2(k, &args[0], &args[1], e, expect)
            }
            "min" | "max" | "sum" | "prod" | "max_axis" | "min_axis" => self.reduce(f, args, e),
            "abs" | "sqrt" | "exp" | "log" | "sin" | "cos" | "tanh" | "exp2" | "log2" | "rsqrt" => {
                if !self.arity(f, args, 1, e) {
                    return Ev::Err;
                }
                let Some(v) = self.value(&args[0], expect) else {
                    return Ev::Err;
                };
                let t = self.ty(v);
                let k = match name {
                    "abs" => ir::UnOp::Abs,
                    "sqrt" => ir::UnOp::Sqrt,
                    "exp" => ir::UnOp::Exp,
                    "log" => ir::UnOp::Log,
                    "sin" => ir::UnOp::Sin,
                    "cos" => ir::UnOp::Cos,
                    "exp2" => ir::UnOp::Exp2,
                    "log2" => ir::UnOp::Log2,
                    "rsqrt" => ir::UnOp::Sqrt,
                    _ => ir::UnOp::Tanh,
                };
                let ok = match k {
                    ir::UnOp::Abs => t.elem().is_any_float() || t.elem().is_int(),
                    _ => t.elem().is_any_float(),
                } && !matches!(t, Type::Array { .. });
                if !ok {
                    self.error(errors::math_operand(args[0].span, name, &t));
                    return Ev::Err;
                }
                if let Type::Mat { .. } = t {
                    return Ev::Val(self.mat_unary(k, name == "rsqrt", v, e.span));
                }
                let y = self.emit1(OpKind::Un(k), vec![v], t.clone(), e.span);
                if name != "rsqrt" {
                    return Ev::Val(y);
                }
                // rsqrt(x) = 1 / sqrt(x), correctly rounded steps on every target.
                let one = self.constant(Const::Float(1.0, t.elem()), e.span);
                Ev::Val(self.emit1(OpKind::Bin(ir::BinOp::Div), vec![one, y], t, e.span))
            }
            "fma" => self.fma(f, args, e, expect),
            "column" | "row" => {
                if !self.arity(f, args, 1, e) {
                    return Ev::Err;
                }
                let Some(v) = self.value(&args[0], None) else {
                    return Ev::Err;
                };
                let line = if name == "row" { self.row(v, e.span) } else { self.column(v, e.span) };
                match line {
                    Some(c) => Ev::Val(c),
                    None => {
                        let t = self.ty(v);
                        self.error(errors::needs_vector(args[0].span, name, &t));
                        Ev::Err
                    }
                }
            }
            "outer" => {
                if !self.arity(f, args, 2, e) {
                    return Ev::Err;
                }
                let (Some(u), Some(v)) = (self.value(&args[0], None), self.value(&args[1], None)) else {
                    return Ev::Err;
                };
                let (tu, tv) = (self.ty(u), self.ty(v));
                if matches!(tu, Type::Mat { .. }) || matches!(tv, Type::Mat { .. }) {
                    return self.mat_outer(u, v, e.span);
                }
                match (&tu, &tv) {
                    (Type::Tile { elem: a, shape: su }, Type::Tile { elem: b, shape: sv })
                        if a == b && su.len() == 1 && sv.len() == 1 =>
                    {
                        let ty = Type::Tile { elem: *a, shape: vec![su[0], sv[0]] };
                        Ev::Val(self.emit1(OpKind::Outer, vec![u, v], ty, e.span))
                    }
                    _ => {
                        self.error(errors::outer_operands(e.span, &tu, &tv));
                        Ev::Err
                    }
                }
            }
            "transpose" => {
                if !self.arity(f, args, 1, e) {
                    return Ev::Err;
                }
                let Some(v) = self.value(&args[0], None) else {
                    return Ev::Err;
                };
                match self.ty(v) {
                    Type::Tile { elem, shape } if shape.len() == 2 => {
                        let ty = Type::Tile { elem, shape: vec![shape[1], shape[0]] };
                        Ev::Val(self.emit1(OpKind::Transpose, vec![v], ty, e.span))
                    }
                    Type::Mat { .. } => self.mat_transpose(v, args[0].span, e.span),
                    t => {
                        self.error(errors::needs_matrix(args[0].span, "transpose", &t));
                        Ev::Err
                    }
                }
            }
            "sync" => {
                if !self.arity(f, args, 0, e) {
                    return Ev::Err;
                }
                self.emit(OpKind::Barrier, vec![], vec![], e.span);
                Ev::Unit
            }
            "map" => self.map(f, args, e),
            "atomic_add" => self.atomic(Rmw::Add, f, args, e),
            "atomic_xchg" => self.atomic(Rmw::Xchg, f, args, e),
            "atomic_min" => self.atomic(Rmw::Min, f, args, e),
            "atomic_max" => self.atomic(Rmw::Max, f, args, e),
            "atomic_cas" => self.atomic(Rmw::Cas, f, args, e),
            "masked_store" => self.masked_store(f, args, e),
            "print" => self.print_call(f, args, e),
            name if crate::matfns::MAT_FNS.contains(&name) => self.mat_fn(f, args, e),
            "assert" => self.assert_call(f, args, e),
            _ => self.user_call(f, args, e),
        }
    }

    fn elementwise2(&mut self, k: ir::BinOp, a: &Expr, b: &Expr, e: &Expr, expect: Option<Scalar>) -> Ev {
        let (va, vb) = self.operand_pair(a, b, expect);
        let (Some(va), Some(vb)) = (va, vb) else {
            return Ev::Err;
        };
        let (ta, tb) = (self.ty(va), self.ty(vb));
        if matches!(ta, Type::Mat { .. }) || matches!(tb, Type::Mat { .. }) {
            let what = if k == ir::BinOp::Min { "`min`" } else { "`max`" };
            return self.mat_entrywise(k, va, vb, e.span, what);
        }
        if ta.elem() != tb.elem() || ta.elem() == Scalar::Bool {
            self.error(errors::shape_mismatch(e.span, "min/max", &ta, a.span, &tb, b.span));
            return Ev::Err;
        }
        let Some(vs) = self.broadcast_operands("min/max", e, &[(a, va), (b, vb)]) else {
            return Ev::Err;
        };
        let (va, vb) = (vs[0], vs[1]);
        let (ta, tb) = (self.ty(va), self.ty(vb));
        let ty = if ta.is_tile() { ta } else { tb };
        Ev::Val(self.emit1(OpKind::Bin(k), vec![va, vb], ty, e.span))
    }

    fn reduce(&mut self, f: &Ident, args: &[Expr], e: &Expr) -> Ev {
        let want = match f.name.as_str() {
            "max_axis" | "min_axis" => 2,
            "sum" | "prod" if args.len() == 2 => 2,
            _ => 1,
        };
        if args.len() != want {
            self.error(errors::arg_count(e.span, &f.name, want, args.len()));
            return Ev::Err;
        }
        let Some(v) = self.value(&args[0], None) else {
            return Ev::Err;
        };
        let Type::Tile { elem, shape } = self.ty(v) else {
            self.error(errors::needs_tile(args[0].span, &f.name, &self.ty(v)));
            return Ev::Err;
        };
        let k = match f.name.as_str() {
            "sum" => ir::Reduce::Sum,
            "prod" => ir::Reduce::Prod,
            "max" | "max_axis" => ir::Reduce::Max,
            _ => ir::Reduce::Min,
        };
        if args.len() == 2 {
            let axis = match self.const_eval(&args[1]) {
                Ok(Const::Int(a, _)) if a >= 0 && (a as usize) < shape.len() && shape.len() == 2 => a as u8,
                _ => {
                    self.error(errors::reduce_axis(args[1].span, shape.len()));
                    return Ev::Err;
                }
            };
            let ty = Type::Tile { elem, shape: vec![shape[1 - axis as usize]] };
            return Ev::Val(self.emit1(OpKind::Reduce(k, Some(axis)), vec![v], ty, e.span));
        }
        Ev::Val(self.emit1(OpKind::Reduce(k, None), vec![v], Type::Scalar(elem), e.span))
    }

    /// `tile<T, R, C>::zeros() | eye() | full(x)`.
    pub(crate) fn type_call(&mut self, t: &TypeExpr, m: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if let TypeExpr::Shared { .. } = t {
            return self.alloc_shared(t, m, args, e);
        }
        let Some(ty) = self.value_type(t) else {
            return Ev::Err;
        };
        if let Type::Mat { .. } = ty {
            return self.mat_ctor(&ty, m, args, e);
        }
        let (fill, n) = match m.name.as_str() {
            "zeros" => (Fill::Zeros, 0),
            "eye" => (Fill::Eye, 0),
            "full" => (Fill::Full, 1),
            "iota" => return self.iota(&ty, m, args, e),
            _ => {
                self.error(errors::unknown_ctor(m));
                return Ev::Err;
            }
        };
        if args.len() != n {
            self.error(errors::arg_count(e.span, &m.name, n, args.len()));
            return Ev::Err;
        }
        let mut vals = Vec::new();
        if n == 1 {
            let Some(x) = self.value(&args[0], Some(ty.elem())) else {
                return Ev::Err;
            };
            if self.ty(x) != Type::Scalar(ty.elem()) {
                let tx = self.ty(x);
                self.error(errors::arg_type(args[0].span, "full", &Type::Scalar(ty.elem()), &tx));
                return Ev::Err;
            }
            vals.push(x);
        }
        Ev::Val(self.emit1(OpKind::Fill(fill), vals, ty, e.span))
    }

    /// `tile<T, R[, C]>::iota(axis)`: every element its index along `axis` (a constant below
    /// the tile's rank), converted to the numeric type `T`.
    fn iota(&mut self, ty: &Type, m: &Ident, args: &[Expr], e: &Expr) -> Ev {
        if args.len() != 1 {
            self.error(errors::arg_count(e.span, &m.name, 1, args.len()));
            return Ev::Err;
        }
        let Type::Tile { elem, shape } = ty else {
            return Ev::Err;
        };
        if *elem == Scalar::Bool {
            self.error(errors::iota_arg(e.span, "a numeric element type, not bool"));
            return Ev::Err;
        }
        match self.const_eval(&args[0]) {
            Ok(Const::Int(a, _)) if (0..shape.len() as i64).contains(&a) => {
                Ev::Val(self.emit1(OpKind::Fill(Fill::Iota(a as u8)), vec![], ty.clone(), e.span))
            }
            _ => {
                let what = if shape.len() == 1 { "the constant 0" } else { "the constant 0 or 1" };
                self.error(errors::iota_arg(args[0].span, what));
                Ev::Err
            }
        }
    }

    /// The variable named by a receiver or in-place argument, with its current value.
    fn place_var(&mut self, x: &Expr, what: &str) -> Option<(String, Value)> {
        if let ExprKind::Name(n) = &x.kind {
            self.resolve_use(n, false);
            if let Some(crate::builder::Binding::Var(v)) = self.lookup(&n.name) {
                return Some((n.name.clone(), *v));
            }
        }
        match self.expr(x, None) {
            Ev::Err => {}
            _ => self.error(errors::not_a_variable(x.span, what)),
        }
        None
    }

    /// In-place methods: `t.cholesky_(eps)`, `t.lu_()`, `l.solve_triangular_(b)`, `t.eye_()`.
    pub(crate) fn method(&mut self, recv: &Expr, m: &Ident, args: &[Expr], e: &Expr) -> Ev {
        match m.name.as_str() {
            "cholesky_" | "lu_" | "eye_" => {}
            name if name == "solve_triangular_" || ir::Trsm::from_name(name).is_some() => {}
            _ => {
                self.error(errors::unknown_method(m));
                return Ev::Err;
            }
        }
        let Some((name, t)) = self.place_var(recv, "the receiver of an in-place method") else {
            return Ev::Err;
        };
        let tt = self.ty(t);
        let Type::Tile { elem, shape } = tt.clone() else {
            self.error(errors::needs_tile(recv.span, &m.name, &tt));
            return Ev::Err;
        };
        match m.name.as_str() {
            "eye_" => {
                if !self.arity(m, args, 0, e) {
                    return Ev::Err;
                }
                let v = self.emit1(OpKind::Fill(Fill::Eye), vec![], tt, e.span);
                self.set_var(&name, v);
            }
            "lu_" => {
                if !self.arity(m, args, 0, e) || !self.square_float(recv, "lu_", &tt) {
                    return Ev::Err;
                }
                let v = self.emit1(OpKind::Lu, vec![t], tt, e.span);
                self.set_var(&name, v);
            }
            "cholesky_" => {
                if !self.arity(m, args, 1, e) || !self.square_float(recv, "cholesky_", &tt) {
                    return Ev::Err;
                }
                let Some(eps) = self.value(&args[0], Some(elem)) else {
                    return Ev::Err;
                };
                if self.ty(eps) != Type::Scalar(elem) {
                    let te = self.ty(eps);
                    self.error(errors::arg_type(args[0].span, "cholesky_", &Type::Scalar(elem), &te));
                    return Ev::Err;
                }
                let v = self.emit1(OpKind::Cholesky, vec![t, eps], tt, e.span);
                self.set_var(&name, v);
            }
            _ => {
                if !self.arity(m, args, 1, e) {
                    return Ev::Err;
                }
                let kind = ir::Trsm::from_name(&m.name).unwrap_or(ir::Trsm::RIGHT_LOWER_T);
                if shape.len() != 2 || shape[0] != shape[1] || !elem.is_any_float() {
                    self.error(errors::needs_square(recv.span, &m.name, &tt));
                    return Ev::Err;
                }
                if shape[0] > crate::limits::FACTOR_MAX {
                    self.error(errors::factor_too_large(recv.span, &m.name, shape[0], crate::limits::FACTOR_MAX));
                    return Ev::Err;
                }
                let Some((bname, b)) = self.place_var(&args[0], "the right-hand side of a triangular solve") else {
                    return Ev::Err;
                };
                let tb = self.ty(b);
                let ok = match &tb {
                    Type::Tile { elem: eb, shape: sb } if *eb == elem => {
                        if kind.left {
                            sb[0] == shape[0]
                        } else {
                            sb.len() == 2 && sb[1] == shape[0]
                        }
                    }
                    _ => false,
                };
                if !ok {
                    self.error(errors::trsm_shape(args[0].span, &m.name, kind.left, &tt, &tb));
                    return Ev::Err;
                }
                let v = self.emit1(OpKind::Trsm(kind), vec![t, b], tb, e.span);
                self.set_var(&bname, v);
            }
        }
        Ev::Unit
    }
}
