//! Pass `cse`: common subexpression elimination. An op that computes what an earlier op
//! already computed (the same kind, the same operands, the same result types) and that only
//! computes (no memory access, no effect, no region) is dropped, its results replaced by the
//! earlier op's. An op of a nested region reuses the ops before it in the enclosing regions
//! (they dominate it); ops inside a nested region are not seen after it.
//!
//! `argmax(x, 1)` next to `max_axis(x, 1)` (both a `reduce.max.1` of `x`), or the same
//! `iota` built twice, are computed once (`bench/ports/topk.tile`). The same op on the same
//! operands gives the same bits, so no result changes. Loads are not merged (a store may come
//! between), nor are shared allocations (two arrays), nor `outer` and `matmul`: `simplify`
//! fuses each with the `+` or `-` that uses it (`rank1`, `matmul_acc`, one rounding per
//! element) only where it has that one use, so `acc1 += a @ b; acc2 += a @ b` keeps two
//! multiply-accumulates.

use crate::ir::*;
use std::collections::HashMap;

/// Whether `k` only computes its results from its operands and may be merged (not `outer` and
/// `matmul`, which `simplify` fuses per use).
fn pure(k: &OpKind) -> bool {
    matches!(
        k,
        OpKind::Const(_)
            | OpKind::Bin(_)
            | OpKind::Cmp(_)
            | OpKind::Un(_)
            | OpKind::Cast(_)
            | OpKind::Bitcast(_)
            | OpKind::Select
            | OpKind::Fma
            | OpKind::ProgramId(_)
            | OpKind::NumPrograms(_)
            | OpKind::Dim(_)
            | OpKind::Fill(_)
            | OpKind::Rank1(_)
            | OpKind::MatmulAcc
            | OpKind::Transpose
            | OpKind::Reduce(..)
            | OpKind::Scan(..)
            | OpKind::Flip(_)
            | OpKind::Reshape
            | OpKind::Extract
            | OpKind::Insert
            | OpKind::ExtractLine(_)
            | OpKind::InsertLine(_)
            | OpKind::Broadcast
            | OpKind::ExtractBlock(_)
            | OpKind::InsertBlock(_)
    )
}

/// The key of a pure op: kind (printed: constants hold floats), operands and result types.
fn key(op: &Op, vals: &[ValueData]) -> String {
    let tys: Vec<&crate::Type> = op.results.iter().map(|r| &vals[r.0 as usize].ty).collect();
    format!("{:?} {:?} {:?}", op.kind, op.args, tys)
}

/// Replaces the operands of `r`'s ops (and of its nested regions) by `subst`, and drops the
/// pure ops computed before (by an earlier op of `r` or one in `seen`, from the enclosing
/// regions), adding their results to `subst`.
fn cse_region(
    r: &mut Region,
    seen: &HashMap<String, Vec<Value>>,
    subst: &mut HashMap<Value, Value>,
    vals: &[ValueData],
) {
    let mut seen = seen.clone();
    let mut removed = vec![false; r.ops.len()];
    for (i, op) in r.ops.iter_mut().enumerate() {
        for a in &mut op.args {
            if let Some(s) = subst.get(a) {
                *a = *s;
            }
        }
        for reg in &mut op.regions {
            cse_region(reg, &seen, subst, vals);
        }
        if !pure(&op.kind) || !op.regions.is_empty() || op.results.is_empty() {
            continue;
        }
        let k = key(op, vals);
        match seen.get(&k) {
            Some(earlier) => {
                for (res, e) in op.results.iter().zip(earlier) {
                    subst.insert(*res, *e);
                }
                removed[i] = true;
            }
            None => {
                seen.insert(k, op.results.clone());
            }
        }
    }
    r.remove_ops(&removed);
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut subst = HashMap::new();
        cse_region(&mut f.body, &HashMap::new(), &mut subst, &f.values);
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_module;
    use crate::print::print_module;

    /// `src` after `cse` and `simplify` (which removes what `cse` left unused), verified.
    fn cse_then_simplify(src: &str) -> String {
        let mut m = parse_module(src).expect("parses");
        super::run(&mut m);
        crate::simplify::run(&mut m);
        crate::verify::verify(&m).expect("verifies");
        print_module(&m)
    }

    /// The same reduction, iota and arithmetic twice (one of them inside a loop) are computed
    /// once; loads and different operands stay.
    #[test]
    fn repeated_computations_are_done_once() {
        let src = "kernel @k(%0: f32[?, ?], %1: mut f32[?, ?]) {
  %2 = const 0 : i32
  %3 = load[+4,+8] %0, %2, %2 : tile<f32, 4, 8>
  %4 = load[+4,+8] %0, %2, %2 : tile<f32, 4, 8>
  %5 = reduce.max.1 %3 : tile<f32, 4>
  %6 = fill.iota(1) : tile<i32, 4, 8>
  %7 = const 0 : i32
  %8 = const 3 : i32
  %9 = const 1 : i32
  for %7, %8, %9 { ^(%10: i32)
    %11 = reduce.max.1 %3 : tile<f32, 4>
    %12 = fill.iota(1) : tile<i32, 4, 8>
    %13 = reduce.max.1 %4 : tile<f32, 4>
    %14 = sub %11, %13 : tile<f32, 4>
    %15 = sub %5, %13 : tile<f32, 4>
    store[i,+4] %1, %10, %2, %14
    store[i,+4] %1, %10, %2, %15
    yield
  }
  return
}
";
        let text = cse_then_simplify(src);
        assert_eq!(text.matches("reduce.max.1 %3").count(), 1, "{text}");
        assert_eq!(text.matches("reduce.max.1 %4").count(), 1, "{text}");
        assert_eq!(text.matches("= load").count(), 2, "{text}");
        assert!(!text.contains("fill.iota"), "unused after the merge: {text}");
        assert!(text.contains("%14 = sub %5, %13"), "{text}");
        assert!(!text.contains("%15 = sub"), "{text}");
        assert!(text.contains("store[i,+4] %1, %10, %2, %14\n    store[i,+4] %1, %10, %2, %14"), "{text}");
    }

    /// Two `acc += a @ b` on the same operands stay two multiply-accumulates: the products are
    /// not merged, so `simplify` fuses each with its add.
    #[test]
    fn products_stay_one_per_use() {
        let src = "kernel @k(%0: f32[?, ?], %1: mut f32[?, ?]) {
  %2 = const 0 : i32
  %3 = load[+4,+4] %0, %2, %2 : tile<f32, 4, 4>
  %4 = matmul %3, %3 : tile<f32, 4, 4>
  %5 = add %3, %4 : tile<f32, 4, 4>
  %6 = matmul %3, %3 : tile<f32, 4, 4>
  %7 = add %5, %6 : tile<f32, 4, 4>
  store[+4,+4] %1, %2, %2, %7
  return
}
";
        let text = cse_then_simplify(src);
        assert_eq!(text.matches("matmul_acc").count(), 2, "{text}");
    }
}
