//! Pass `const-fold`: evaluates scalar operations whose operands are constants
//! (arithmetic, comparisons, unary functions, casts, selects) and turns them into `Const` ops,
//! computing them as the generated code does ([`crate::scalar`]).

use crate::ir::*;
use crate::scalar;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// Folds one op with constant operands, if it is foldable, with the semantics of
/// [`crate::scalar`] (the generated code's: integers wrap, division by zero gives 0, float
/// `min`/`max` propagate NaN, float-to-integer casts saturate).
fn fold(kind: &OpKind, args: &[Const], out: &Type) -> Option<Const> {
    let Type::Scalar(s) = out else { return None };
    let s = *s;
    let typed = |c: &Const| c.ty() == s;
    match (kind, args) {
        (OpKind::Bin(op), [a, b]) if typed(a) && typed(b) => scalar::bin(*op, *a, *b, s).ok(),
        (OpKind::Cmp(op), [a, b]) if a.ty() == b.ty() && s == Scalar::Bool => {
            Some(Const::Bool(scalar::cmp(*op, *a, *b)))
        }
        // Not the transcendental functions: the targets' own may differ from the host's by an ulp.
        (
            OpKind::Un(op @ (UnOp::Neg | UnOp::Not | UnOp::Abs | UnOp::Trunc | UnOp::RoundF16 | UnOp::RoundBf16)),
            [a],
        ) if typed(a) => scalar::un(*op, *a, s).ok(),
        (OpKind::Cast(to), [c]) if *to == s => Some(scalar::cast(*c, s)),
        (OpKind::Select, [Const::Bool(c), a, b]) if typed(a) && typed(b) => Some(if *c { *a } else { *b }),
        (OpKind::Fma, [a, b, c]) if s.is_int() && typed(a) && typed(b) && typed(c) => Some(scalar::fma(*a, *b, *c, s)),
        _ => None,
    }
}

fn run_region(f_values: &[ValueData], r: &mut Region, consts: &mut HashMap<Value, Const>) {
    for op in &mut r.ops {
        for reg in &mut op.regions {
            run_region(f_values, reg, consts);
        }
        if let OpKind::Const(c) = op.kind {
            consts.insert(op.results[0], c);
            continue;
        }
        if op.results.len() != 1 || !op.regions.is_empty() || op.args.is_empty() {
            continue;
        }
        let args: Option<Vec<Const>> = op.args.iter().map(|a| consts.get(a).copied()).collect();
        let Some(args) = args else { continue };
        if let Some(c) = fold(&op.kind, &args, &f_values[op.results[0].0 as usize].ty) {
            op.kind = OpKind::Const(c);
            op.args.clear();
            consts.insert(op.results[0], c);
        }
    }
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut consts = HashMap::new();
        let mut body = std::mem::take(&mut f.body);
        run_region(&f.values, &mut body, &mut consts);
        f.body = body;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Folds `kind` applied to the constants `args` in a one-function module and returns the
    /// op that replaced it (a `Const` if it folded).
    fn folded(kind: OpKind, args: &[Const], ty: Scalar) -> OpKind {
        let mut f = Function::new("f", FuncKind::Launch);
        let mut vals = Vec::new();
        for c in args {
            let v = f.new_value(Type::Scalar(c.ty()));
            f.body.ops.push(Op {
                kind: OpKind::Const(*c),
                args: vec![],
                results: vec![v],
                regions: vec![],
                loc: Loc::default(),
            });
            vals.push(v);
        }
        let r = f.new_value(Type::Scalar(ty));
        f.body.ops.push(Op { kind, args: vals, results: vec![r], regions: vec![], loc: Loc::default() });
        let mut m = Module::default();
        m.funcs.push(f);
        run(&mut m);
        m.funcs[0].body.ops.last().expect("op").kind.clone()
    }

    #[test]
    fn float_to_int_casts_saturate_as_the_generated_code() {
        let k = folded(OpKind::Cast(Scalar::I32), &[Const::Float(3e9, Scalar::F32)], Scalar::I32);
        assert_eq!(k, OpKind::Const(Const::Int(i32::MAX as i64, Scalar::I32)));
        let k = folded(OpKind::Cast(Scalar::I64), &[Const::Float(f64::NAN, Scalar::F64)], Scalar::I64);
        assert_eq!(k, OpKind::Const(Const::Int(0, Scalar::I64)));
    }

    #[test]
    fn i64_comparisons_are_exact() {
        let (a, b) = (Const::Int((1 << 53) + 1, Scalar::I64), Const::Int(1 << 53, Scalar::I64));
        assert_eq!(folded(OpKind::Cmp(CmpOp::Eq), &[a, b], Scalar::Bool), OpKind::Const(Const::Bool(false)));
        assert_eq!(folded(OpKind::Cmp(CmpOp::Gt), &[a, b], Scalar::Bool), OpKind::Const(Const::Bool(true)));
    }

    #[test]
    fn nan_propagates_through_min_and_division_by_zero_is_zero() {
        let nan = Const::Float(f64::NAN, Scalar::F32);
        let k = folded(OpKind::Bin(BinOp::Min), &[nan, Const::Float(1.0, Scalar::F32)], Scalar::F32);
        assert!(matches!(k, OpKind::Const(Const::Float(v, Scalar::F32)) if v.is_nan()), "{k:?}");
        let (seven, zero) = (Const::Int(7, Scalar::I32), Const::Int(0, Scalar::I32));
        assert_eq!(folded(OpKind::Bin(BinOp::Div), &[seven, zero], Scalar::I32), OpKind::Const(zero));
    }

    #[test]
    fn transcendental_functions_and_float_fma_are_left_to_the_target() {
        let x = Const::Float(0.5, Scalar::F32);
        assert_eq!(folded(OpKind::Un(UnOp::Exp), &[x], Scalar::F32), OpKind::Un(UnOp::Exp));
        assert_eq!(folded(OpKind::Fma, &[x, x, x], Scalar::F32), OpKind::Fma);
    }
}
