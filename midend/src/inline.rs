//! Pass `inline`: replaces every `Call` by a copy of the callee's body (callees are
//! themselves inlined first), so that kernels and launch functions are call-free.

use crate::ir::*;
use std::collections::HashMap;

/// Copies `r` into `dst`'s value arena, renaming values through `map`.
fn clone_region(src: &Function, dst: &mut Function, r: &Region, map: &mut HashMap<Value, Value>) -> Region {
    let fresh = |v: Value, dst: &mut Function, map: &mut HashMap<Value, Value>| {
        let n = dst.new_value(src.ty(v).clone());
        map.insert(v, n);
        n
    };
    let params = r.params.iter().map(|p| fresh(*p, dst, map)).collect();
    let mut ops = Vec::new();
    for op in &r.ops {
        let args = op.args.iter().map(|a| *map.get(a).unwrap_or(a)).collect();
        let regions = op.regions.iter().map(|rr| clone_region(src, dst, rr, map)).collect();
        let results = op.results.iter().map(|v| fresh(*v, dst, map)).collect();
        ops.push(Op { kind: op.kind.clone(), args, results, regions, loc: op.loc });
    }
    Region { params, ops }
}

/// Inlines calls in `r`; returns substitutions (call result -> returned value).
fn inline_region(funcs: &[Function], f: &mut Function, r: &mut Region, subst: &mut HashMap<Value, Value>) {
    let old = std::mem::take(&mut r.ops);
    for mut op in old {
        for reg in &mut op.regions {
            inline_region(funcs, f, reg, subst);
        }
        let OpKind::Call(i) = op.kind else {
            r.ops.push(op);
            continue;
        };
        let callee = &funcs[i];
        let mut map: HashMap<Value, Value> = HashMap::new();
        for (p, a) in callee.body.params.iter().zip(&op.args) {
            map.insert(*p, *a);
        }
        let body = Region { params: Vec::new(), ops: callee.body.ops.clone() };
        let mut copied = clone_region(callee, f, &body, &mut map);
        if let Some(ret) = copied.ops.pop() {
            debug_assert_eq!(ret.kind, OpKind::Return);
            for (res, v) in op.results.iter().zip(&ret.args) {
                subst.insert(*res, *v);
            }
        }
        r.ops.extend(copied.ops);
    }
}

/// Applies value substitutions to every operand.
pub(crate) fn substitute(r: &mut Region, subst: &HashMap<Value, Value>) {
    if subst.is_empty() {
        return;
    }
    for op in &mut r.ops {
        for a in &mut op.args {
            while let Some(n) = subst.get(a) {
                *a = *n;
            }
        }
        for reg in &mut op.regions {
            substitute(reg, subst);
        }
    }
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for i in 0..m.funcs.len() {
        let (done, rest) = m.funcs.split_at_mut(i);
        let f = &mut rest[0];
        let mut body = std::mem::take(&mut f.body);
        let mut subst = HashMap::new();
        inline_region(done, f, &mut body, &mut subst);
        substitute(&mut body, &subst);
        f.body = body;
    }
}
