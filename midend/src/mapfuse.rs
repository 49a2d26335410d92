//! Pass `fuse-maps`: merges chains of element-wise `map`s into one `map`, so that a mask
//! built from comparisons, `&&`, `||` and `where` (each its own `map` from the frontend) is
//! one loop over the tile on the CPU, with no intermediate tiles stored and reloaded.
//!
//! In one region, for a `map` M with an operand that is
//! - the result of an earlier `map` P of the same region used only by M: P's operands become
//!   M's, P's body is moved to the front of M's body, and M's parameter for that operand is
//!   replaced by P's yielded value (P is removed);
//! - a `fill.full x` tile: M's parameter is replaced by the scalar `x` itself (the fill stays
//!   for its other uses, or goes as dead code);
//! - the same value as an earlier operand: the two parameters are merged.
//!
//! First, element-wise tile arithmetic (`Bin` and `Un` on tiles, a scalar operand broadcast)
//! that is linked to another such op or to a `map` by a value used once becomes a `map` of one
//! op (the scalar operands read from inside the region), so that chains like
//! `exp(x - m) * scale - where(hit, 1.0, 0.0)` fuse into one loop too: no tile of the chain but
//! the last is stored, which on the CPU keeps large tiles out of the caches' way (a 4096-wide
//! row block is 16 KB per intermediate tile). Arithmetic not linked to a chain stays a tile op.
//!
//! Every element is computed by the same scalar ops on the same operands (the merged body may
//! order independent ops differently; the maps it moves have no effects and read no arrays), so the pass changes no
//! result bits. A `map` keeps at least one operand (its shape). A map used more than once
//! stays a tile (a mask read by two `where`s is stored once and read twice).

use crate::ir::*;
use crate::Type;
use std::collections::HashMap;

/// Fuses the maps of `r` and of its nested regions.
fn fuse_region(r: &mut Region, uses: &HashMap<Value, usize>, vals: &[ValueData]) {
    for op in &mut r.ops {
        for reg in &mut op.regions {
            fuse_region(reg, uses, vals);
        }
    }
    // Where each result of this region's ops is defined.
    let mut def: HashMap<Value, usize> = HashMap::new();
    let mut removed = vec![false; r.ops.len()];
    for i in 0..r.ops.len() {
        if r.ops[i].kind == OpKind::Map {
            while let Some((k, j)) = fusable(r, i, &def, uses) {
                let p = r.take_op(j);
                removed[j] = true;
                merge_producer(&mut r.ops[i], k, p);
            }
            fold_fills(r, i, &def, vals);
            merge_duplicates(&mut r.ops[i]);
        }
        for res in &r.ops[i].results {
            def.insert(*res, i);
        }
    }
    r.remove_ops(&removed);
}

/// The first operand `k` of map `i` produced by a map `j` of the region used only there.
fn fusable(r: &Region, i: usize, def: &HashMap<Value, usize>, uses: &HashMap<Value, usize>) -> Option<(usize, usize)> {
    r.ops[i].args.iter().enumerate().find_map(|(k, a)| {
        let j = *def.get(a)?;
        let p = &r.ops[j];
        // A map that reads or writes arrays (a gather, a scatter) stays where it is: moved
        // into its consumer, it could pass a store.
        let moves = p.regions.iter().any(Region::accesses_memory);
        (p.kind == OpKind::Map && uses.get(a) == Some(&1) && p.results.len() == 1 && !moves).then_some((k, j))
    })
}

/// Moves map `p` (whose result is operand `k` of `m`) into `m`.
fn merge_producer(m: &mut Op, k: usize, p: Op) {
    let Op { args: p_args, regions: mut p_regions, .. } = p;
    let mut p_body = p_regions.remove(0);
    let y = p_body.ops.pop().expect("a map region ends with yield");
    debug_assert_eq!(y.kind, OpKind::Yield);
    let body = &mut m.regions[0];
    let param = body.params.remove(k);
    m.args.remove(k);
    let subst: HashMap<Value, Value> = [(param, y.args[0])].into();
    crate::inline::substitute(body, &subst);
    for (n, (a, pp)) in p_args.into_iter().zip(p_body.params).enumerate() {
        m.args.insert(k + n, a);
        body.params.insert(k + n, pp);
    }
    p_body.ops.append(&mut body.ops);
    body.ops = p_body.ops;
}

/// Replaces the parameters of map `i` whose operands are `fill.full x` by `x`.
fn fold_fills(r: &mut Region, i: usize, def: &HashMap<Value, usize>, vals: &[ValueData]) {
    let mut k = 0;
    while k < r.ops[i].args.len() {
        let a = r.ops[i].args[k];
        let param_ty = &vals[r.ops[i].regions[0].params[k].0 as usize].ty;
        let scalar = def.get(&a).map(|&j| &r.ops[j]).and_then(|f| match f.kind {
            // Only a scalar of the element type (the parameter's) can stand for it.
            OpKind::Fill(Fill::Full) if &vals[f.args[0].0 as usize].ty == param_ty => Some(f.args[0]),
            _ => None,
        });
        match scalar {
            Some(x) if r.ops[i].args.len() > 1 => {
                let m = &mut r.ops[i];
                m.args.remove(k);
                let param = m.regions[0].params.remove(k);
                crate::inline::substitute(&mut m.regions[0], &[(param, x)].into());
            }
            _ => k += 1,
        }
    }
}

/// Merges the parameters of operands that are the same value.
fn merge_duplicates(m: &mut Op) {
    let mut k = 1;
    while k < m.args.len() {
        match m.args[..k].iter().position(|a| *a == m.args[k]) {
            Some(first) => {
                m.args.remove(k);
                let body = &mut m.regions[0];
                let param = body.params.remove(k);
                crate::inline::substitute(body, &[(param, body.params[first])].into());
            }
            None => k += 1,
        }
    }
}

/// Tiles of at least this many elements have their element-wise arithmetic fused into maps.
/// Smaller ones keep it as tile ops: the LLVM CPU backend holds such tiles in vector registers
/// across a loop (scalar replacement of its stack tiles), which a map's element loop would
/// prevent (gemver's `acc += a * x` on 8 x 32 tiles: 1.8-2.2 -> 2.3-3.5 ms), and a small tile
/// stored and reloaded stays in the L1 cache anyway.
const MAPIFY_ELEMENTS: u32 = 1024;

/// Whether op `o` is element-wise tile arithmetic that a one-op `map` can compute: `Bin` or
/// `Un` with a tile result of at least [`MAPIFY_ELEMENTS`] whose tile operands all have the
/// result's shape, and no operand from an `outer` or a `matmul` (which `simplify` fuses with a
/// `+` or `-` into `rank1` and `matmul_acc`); `producer` gives the op of the region defining a
/// value.
fn elementwise<'a>(o: &Op, f: &Function, producer: impl Fn(Value) -> Option<&'a Op>) -> bool {
    if !matches!(o.kind, OpKind::Bin(_) | OpKind::Un(_)) || o.results.len() != 1 {
        return false;
    }
    let Type::Tile { shape, .. } = f.ty(o.results[0]) else {
        return false;
    };
    shape.iter().product::<u32>() >= MAPIFY_ELEMENTS
        && o.args.iter().all(|a| {
            let fits = match f.ty(*a) {
                Type::Tile { shape: s, .. } => s == shape,
                Type::Scalar(_) => true,
                Type::Array { .. } | Type::Mat { .. } => false,
            };
            fits && !producer(*a).is_some_and(|p| matches!(p.kind, OpKind::Outer | OpKind::Matmul))
        })
}

/// Rewrites the element-wise tile ops of `r` (and of its nested regions) that are linked to a
/// `map` or to another element-wise op by a value used once, each as a `map` of one op (new
/// values in `f`, whose body `r` is taken from).
fn mapify_region(r: &mut Region, uses: &HashMap<Value, usize>, f: &mut Function) {
    for op in &mut r.ops {
        for reg in &mut op.regions {
            mapify_region(reg, uses, f);
        }
    }
    // SSA: an operand defined in this region is defined by an earlier op.
    let def: HashMap<Value, usize> =
        r.ops.iter().enumerate().flat_map(|(i, o)| o.results.iter().map(move |v| (*v, i))).collect();
    let producer = |v: Value| def.get(&v).map(|&j| &r.ops[j]);
    let fusable: Vec<bool> = r.ops.iter().map(|o| o.kind == OpKind::Map || elementwise(o, f, producer)).collect();
    let mut convert = vec![false; r.ops.len()];
    for (i, o) in r.ops.iter().enumerate().filter(|(i, _)| fusable[*i]) {
        for a in &o.args {
            if let Some(&j) = def.get(a) {
                if fusable[j] && uses.get(a) == Some(&1) {
                    convert[i] = true;
                    convert[j] = true;
                }
            }
        }
    }
    for (i, op) in r.ops.iter_mut().enumerate() {
        if convert[i] && op.kind != OpKind::Map {
            *op = one_op_map(op, f);
        }
    }
}

/// Element-wise tile op `o` as a `map` of one op over its tile operands.
fn one_op_map(o: &Op, f: &mut Function) -> Op {
    let mut args = Vec::new();
    let mut params = Vec::new();
    let mut inner_args = Vec::new();
    for a in &o.args {
        match f.ty(*a).clone() {
            Type::Tile { elem, .. } => {
                let p = f.new_value(Type::Scalar(elem));
                args.push(*a);
                params.push(p);
                inner_args.push(p);
            }
            _ => inner_args.push(*a),
        }
    }
    let y = f.new_value(Type::Scalar(f.ty(o.results[0]).elem()));
    let inner = Op { kind: o.kind.clone(), args: inner_args, results: vec![y], regions: vec![], loc: o.loc };
    let yield_op = Op { kind: OpKind::Yield, args: vec![y], results: vec![], regions: vec![], loc: o.loc };
    let body = Region { params, ops: vec![inner, yield_op] };
    Op { kind: OpKind::Map, args, results: o.results.clone(), regions: vec![body], loc: o.loc }
}

/// Runs the pass over a module.
pub fn run(m: &mut Module) {
    for f in &mut m.funcs {
        let mut uses = HashMap::new();
        f.body.count_uses(&mut uses);
        let mut body = std::mem::take(&mut f.body);
        mapify_region(&mut body, &uses, f);
        f.body = body;
        fuse_region(&mut f.body, &uses, &f.values);
    }
}

#[cfg(test)]
mod tests {
    use crate::parse::parse_module;
    use crate::print::print_module;

    /// A chain `where(a < n && b <= a, x, -1)` as the frontend writes it: four maps and two
    /// fills become one map over `a`, `b` and `x`; a map used twice stays.
    const CHAIN: &str = "kernel @k(%0: f32[?, ?], %1: mut f32[?, ?], %2: i32) {
  %3 = const 0 : i32
  %4 = load[+4,+4] %0, %3, %3 : tile<f32, 4, 4>
  %5 = fill.iota(0) : tile<i32, 4, 4>
  %6 = fill.iota(1) : tile<i32, 4, 4>
  %7 = fill.full %2 : tile<i32, 4, 4>
  %10 = map %5, %7 : tile<bool, 4, 4> { ^(%8: i32, %9: i32)
    %11 = cmp.lt %8, %9 : bool
    yield %11
  }
  %14 = map %6, %5 : tile<bool, 4, 4> { ^(%12: i32, %13: i32)
    %15 = cmp.le %12, %13 : bool
    yield %15
  }
  %18 = map %10, %14 : tile<bool, 4, 4> { ^(%16: bool, %17: bool)
    %19 = and %16, %17 : bool
    yield %19
  }
  %20 = const -1.0 : f32
  %21 = fill.full %20 : tile<f32, 4, 4>
  %25 = map %18, %4, %21 : tile<f32, 4, 4> { ^(%22: bool, %23: f32, %24: f32)
    %26 = select %22, %23, %24 : f32
    yield %26
  }
  %29 = map %25, %25 : tile<f32, 4, 4> { ^(%27: f32, %28: f32)
    %30 = mul %27, %28 : f32
    yield %30
  }
  store[+4,+4] %1, %3, %3, %29
  store[+4,+4] %1, %3, %3, %25
  return
}
";

    #[test]
    fn chains_of_maps_become_one() {
        let mut m = parse_module(CHAIN).expect("parses");
        super::run(&mut m);
        crate::simplify::run(&mut m);
        crate::verify::verify(&m).expect("verifies");
        let text = print_module(&m);
        // One map for the mask and `where`, one for the product (its operand has two uses).
        assert_eq!(text.matches("= map ").count(), 2, "{text}");
        assert!(text.contains("%25 = map %5, %6, %4 : tile<f32, 4, 4>"), "{text}");
        // The fills' scalars are used directly; the fills are gone.
        assert!(!text.contains("fill.full"), "{text}");
        assert!(text.contains("cmp.lt %8, %2"), "{text}");
        assert!(text.contains("select %19, %23, %20"), "{text}");
        // The duplicated operand is one parameter.
        assert!(text.contains("%29 = map %25 : tile<f32, 4, 4> { ^(%27: f32)"), "{text}");
        assert!(text.contains("mul %27, %27"), "{text}");
    }

    /// Element-wise arithmetic on 32 x 32 tiles linked into a chain becomes part of one map:
    /// `(x - m) * 2` and the `where` reading it; an `add` of an `outer` stays for `simplify`
    /// (a `rank1`), and the same chain on 16 x 16 tiles stays tile ops.
    #[test]
    fn element_wise_chains_of_large_tiles_join_maps() {
        let src = |n: u32| {
            format!(
                "kernel @k(%0: f32[?, ?], %1: mut f32[?, ?], %2: f32) {{
  %3 = const 0 : i32
  %4 = load[+{n},+{n}] %0, %3, %3 : tile<f32, {n}, {n}>
  %5 = sub %4, %2 : tile<f32, {n}, {n}>
  %6 = const 2.0 : f32
  %7 = mul %5, %6 : tile<f32, {n}, {n}>
  %8 = fill.iota(0) : tile<i32, {n}, {n}>
  %11 = map %8 : tile<bool, {n}, {n}> {{ ^(%9: i32)
    %10 = cmp.lt %9, %3 : bool
    yield %10
  }}
  %15 = map %11, %7 : tile<f32, {n}, {n}> {{ ^(%12: bool, %13: f32)
    %14 = select %12, %13, %6 : f32
    yield %14
  }}
  %16 = load[i,+{n}] %0, %3, %3 : tile<f32, {n}>
  %17 = outer %16, %16 : tile<f32, {n}, {n}>
  %18 = add %15, %17 : tile<f32, {n}, {n}>
  store[+{n},+{n}] %1, %3, %3, %18
  return
}}
"
            )
        };
        let mut m = parse_module(&src(32)).expect("parses");
        super::run(&mut m);
        crate::simplify::run(&mut m);
        crate::verify::verify(&m).expect("verifies");
        let text = print_module(&m);
        assert_eq!(text.matches("= map ").count(), 1, "{text}");
        assert!(text.contains("= map %8, %4 : tile<f32, 32, 32>"), "{text}");
        assert!(!text.contains("= sub %4") && !text.contains("= mul %5"), "{text}");
        assert!(text.contains("%18 = rank1 1.0 %15, %16, %16"), "{text}");
        let mut small = parse_module(&src(16)).expect("parses");
        super::run(&mut small);
        let text = print_module(&small);
        assert!(text.contains("%5 = sub %4, %2 : tile<f32, 16, 16>"), "{text}");
        assert!(text.contains("%7 = mul %5, %6 : tile<f32, 16, 16>"), "{text}");
    }
}
