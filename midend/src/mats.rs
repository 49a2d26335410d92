//! Lowering of small matrices and vectors (`mat<T, R, C>`, `vec<T, N>` and tiles of them,
//! language §3.6): the frontend types such values as [`Type::Mat`], builds them with
//! [`OpKind::MatBuild`] and reads their entries with [`OpKind::MatPart`]; every other
//! operation on them (arithmetic, `@`, `inverse`, `svd`, ..) it already wrote as operations on
//! the entries. This lowering, which the frontend runs on every module it builds, replaces
//! each such value by its entries (scalars, or tiles of the matrices' shape) wherever it
//! appears (a tile of matrices' entries are `tile<T, B, 1>` columns, [`Type::mat_part`]):
//! operands and results of `for`, `if`, `while`, `yield`, `call` and `return`,
//! region and function parameters, and function result types. Afterwards no value has a
//! [`Type::Mat`] type and no `MatBuild` or `MatPart` is left (the verifier's invariant), so
//! passes and backends never meet them; each lane of a GPU program holds its own matrices'
//! entries in registers, as Quadrants' and Warp's per-thread matrices do.

use crate::ir::*;
use crate::types::Type;
use std::collections::HashMap;

/// Lowers the small-matrix values of every function of `m` (see the module docs).
pub fn lower(m: &mut Module) {
    for f in &mut m.funcs {
        if f.values.iter().any(|d| matches!(d.ty, Type::Mat { .. })) {
            lower_function(f);
        }
    }
}

/// The types one value of type `t` becomes: its entries' types, or `t` itself.
fn expand_type(t: &Type) -> Vec<Type> {
    match t.mat_part() {
        Some(p) => vec![p; t.mat_entries() as usize],
        None => vec![t.clone()],
    }
}

struct Lowering<'f> {
    f: &'f mut Function,
    /// Each matrix value to its entries; each `MatPart` result to the entry it stands for.
    parts: HashMap<Value, Vec<Value>>,
}

impl Lowering<'_> {
    /// New values for the entries of every matrix among `vals` (definitions: parameters or
    /// results), the others kept.
    fn defs(&mut self, vals: &[Value]) -> Vec<Value> {
        let mut out = Vec::with_capacity(vals.len());
        for &v in vals {
            let t = self.f.ty(v).clone();
            match t.mat_part() {
                Some(p) => {
                    let ps: Vec<Value> = (0..t.mat_entries()).map(|_| self.f.new_value(p.clone())).collect();
                    out.extend(&ps);
                    self.parts.insert(v, ps);
                }
                None => out.push(v),
            }
        }
        out
    }

    /// Operands with every matrix replaced by its entries and every `MatPart` result by the
    /// entry.
    fn uses(&self, vals: &[Value]) -> Vec<Value> {
        let mut out = Vec::with_capacity(vals.len());
        for v in vals {
            match self.parts.get(v) {
                Some(ps) => out.extend(ps),
                None => out.push(*v),
            }
        }
        out
    }

    fn region(&mut self, r: &mut Region) {
        r.params = self.defs(&r.params);
        let ops = std::mem::take(&mut r.ops);
        for mut op in ops {
            match op.kind {
                OpKind::MatBuild => {
                    let ps = self.uses(&op.args);
                    self.parts.insert(op.results[0], ps);
                }
                OpKind::MatPart(i) => {
                    // The frontend builds every matrix before reading it, so its entries are known.
                    let e = self.parts.get(&op.args[0]).and_then(|ps| ps.get(i as usize)).copied();
                    let e = e.unwrap_or(op.args[0]);
                    self.parts.insert(op.results[0], vec![e]);
                }
                _ => {
                    op.args = self.uses(&op.args);
                    for reg in &mut op.regions {
                        self.region(reg);
                    }
                    op.results = self.defs(&op.results);
                    r.ops.push(op);
                }
            }
        }
    }
}

fn lower_function(f: &mut Function) {
    let mut body = std::mem::take(&mut f.body);
    let ret: Vec<Type> = f.ret.iter().flat_map(expand_type).collect();
    let mut l = Lowering { f, parts: HashMap::new() };
    l.region(&mut body);
    f.body = body;
    f.ret = ret;
    // Matrix values are no longer referenced; give them their entries' type so that the
    // arena holds no `Mat` type either.
    for d in &mut f.values {
        if let Some(p) = d.ty.mat_part() {
            d.ty = p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Scalar;

    /// A `fn` that takes a 2x2 matrix, carries it through a loop and returns its transpose:
    /// after lowering, four parameters, four carried values and four results.
    #[test]
    fn matrices_split_through_params_loops_and_returns() {
        let mat = Type::Mat { elem: Scalar::F32, dims: vec![2, 2], shape: vec![] };
        let s = Type::Scalar(Scalar::F32);
        let i = Type::Scalar(Scalar::I32);
        let mut f = Function::new("t", FuncKind::Fn);
        f.ret = vec![mat.clone()];
        let a = f.new_value(mat.clone());
        let (lo, hi, st) = (f.new_value(i.clone()), f.new_value(i.clone()), f.new_value(i.clone()));
        let iv = f.new_value(i.clone());
        let carried = f.new_value(mat.clone());
        let out = f.new_value(mat.clone());
        let parts: Vec<Value> = (0..4).map(|_| f.new_value(s.clone())).collect();
        let t = f.new_value(mat.clone());
        let loc = Loc::default();
        let op = |kind, args: Vec<Value>, results: Vec<Value>| Op { kind, args, results, regions: vec![], loc };
        let c = |k: i64| Op {
            kind: OpKind::Const(Const::Int(k, Scalar::I32)),
            args: vec![],
            results: vec![],
            regions: vec![],
            loc,
        };
        let mut body_ops = vec![];
        for (k, v) in [(0, lo), (4, hi), (1, st)] {
            let mut o = c(k);
            o.results = vec![v];
            body_ops.push(o);
        }
        let lp = Region { params: vec![iv, carried], ops: vec![op(OpKind::Yield, vec![carried], vec![])] };
        body_ops.push(Op { kind: OpKind::For, args: vec![lo, hi, st, a], results: vec![out], regions: vec![lp], loc });
        for (k, p) in parts.iter().enumerate() {
            body_ops.push(op(OpKind::MatPart([0, 2, 1, 3][k]), vec![out], vec![*p]));
        }
        body_ops.push(op(OpKind::MatBuild, parts.clone(), vec![t]));
        body_ops.push(op(OpKind::Return, vec![t], vec![]));
        f.body = Region { params: vec![a], ops: body_ops };
        let mut m = Module::default();
        m.funcs.push(f);
        lower(&mut m);
        let f = &m.funcs[0];
        assert_eq!(f.body.params.len(), 4);
        assert_eq!(f.ret, vec![s.clone(); 4]);
        let for_op = f.body.ops.iter().find(|o| o.kind == OpKind::For).unwrap();
        assert_eq!(for_op.args.len(), 3 + 4);
        assert_eq!(&for_op.args[3..], f.body.params.as_slice());
        assert_eq!(for_op.results.len(), 4);
        assert_eq!(for_op.regions[0].params.len(), 5);
        let ret = f.body.ops.last().unwrap();
        let r = &for_op.results;
        assert_eq!(ret.args, vec![r[0], r[2], r[1], r[3]], "the transpose's entries");
        assert!(f.values.iter().all(|d| !matches!(d.ty, Type::Mat { .. })));
        assert!(crate::verify::verify(&m).is_ok(), "{:?}", crate::verify::verify(&m));
    }
}
