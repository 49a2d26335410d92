//! Array indices proven in bounds, so that the code generators leave out their checks.
//!
//! Every array access checks its indices (a single index `i` must lie in `0..extent`, a slice
//! `s..s+k` in `0..=extent`; elements outside are skipped or read as zero, docs/language.md
//! §7.2). In loops such as `for k in 0..p { .. A[b, p, k, 0:W] .. }` inside `for p in 0..N`
//! these checks cost more than the access itself. This analysis gives each integer value of a
//! kernel body a constant lower bound and upper bounds of the form `extent + c` or `c`, from
//! constants, `dim`, `program_id` (through the launch function's grid), `for` induction
//! variables (`lo <= iv <= hi - 1` for a positive constant step) and `+`, `-`, `min`, `max`
//! with constants; an index is in bounds when its bounds say so against the accessed
//! dimension's extent. Extents are equal where the kernel's signature names them alike
//! (`A: T[P, N, N, W]`, `E: T[P, N, W]`: binding checks it), known where the signature fixes
//! them (`W` a const parameter, a literal) and for shared arrays.
//!
//! Sound for the wrapping `i32` arithmetic of §6.3: a sum or difference keeps a bound only
//! when its bounds exclude wrapping (extents are at most `i32::MAX`).

use crate::{BinOp, Const, Dim, FuncKind, Function, Kernel, Op, OpKind, ParamKind, Region, Scalar, Type, Value};
use std::collections::HashMap;

/// What an upper bound is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Sym {
    /// A constant bound.
    Zero,
    /// An extent class: the extents that the signature says are equal.
    Extent(u32),
}

/// The bounds of one integer value: `lo <= v` and `v <= sym + off` for each of `ups`.
#[derive(Clone, Debug, Default)]
struct Fact {
    lo: Option<i64>,
    ups: Vec<(Sym, i64)>,
}

/// Most upper bounds kept per value.
const MAX_UPS: usize = 4;

impl Fact {
    fn constant(c: i64) -> Fact {
        Fact { lo: Some(c), ups: vec![(Sym::Zero, c)] }
    }

    /// The constant upper bound, if any.
    fn hi(&self) -> Option<i64> {
        self.ups.iter().filter(|(s, _)| *s == Sym::Zero).map(|(_, o)| *o).min()
    }

    fn push_up(&mut self, s: Sym, off: i64) {
        if let Some(u) = self.ups.iter_mut().find(|(t, _)| *t == s) {
            u.1 = u.1.min(off);
        } else if self.ups.len() < MAX_UPS {
            self.ups.push((s, off));
        }
    }

    /// `self + c` for a constant `c`, its bounds kept where they exclude wrapping.
    fn add_const(&self, c: i64) -> Fact {
        let max = i32::MAX as i64;
        let min = i32::MIN as i64;
        let no_overflow = c <= 0 || self.ups.iter().any(|&(s, o)| o + c <= if s == Sym::Zero { max } else { 0 });
        let no_underflow = c >= 0 || self.lo.is_some_and(|l| l + c >= min);
        let mut out = Fact::default();
        if no_overflow && no_underflow {
            out.lo = self.lo.map(|l| l + c);
            for &(s, o) in &self.ups {
                out.push_up(s, o + c);
            }
        }
        out
    }
}

/// The extent of one array dimension: its class and, where the signature fixes it, its value.
#[derive(Clone, Copy, Debug)]
struct Extent {
    class: u32,
    exact: Option<i64>,
}

/// The proven bounds of a kernel body's integer values ([`Bounds::inside`]).
#[derive(Default)]
pub struct Bounds {
    facts: HashMap<Value, Fact>,
    /// The extents of each array value (parameters and shared arrays), by dimension.
    arrays: HashMap<Value, Vec<Extent>>,
}

impl Bounds {
    /// The bounds of `body`, the body of kernel `k`, with the grid of its `launch` function.
    /// Any other function (a launch function) gets none.
    pub fn of(k: &Kernel, body: &Function, launch: &Function) -> Bounds {
        let mut b = Bounds::default();
        if body.kind != FuncKind::Kernel || body.body.params.len() != k.params.len() {
            return b;
        }
        let mut classes: HashMap<&str, u32> = HashMap::new();
        let mut next = 0u32;
        let mut fresh = || {
            next += 1;
            next - 1
        };
        for (p, v) in k.params.iter().zip(&body.body.params) {
            let ParamKind::Array { dims, optional, .. } = &p.kind else { continue };
            let extents = dims
                .iter()
                .map(|d| match d {
                    Dim::Fixed(n) | Dim::Named(_, n) => Extent { class: fresh(), exact: Some(*n as i64) },
                    // An omitted optional array has every extent 0, whatever the names say.
                    Dim::Var(name) if !*optional => {
                        let class = *classes.entry(name.as_str()).or_insert_with(&mut fresh);
                        Extent { class, exact: None }
                    }
                    Dim::Var(_) | Dim::Expr(_) => Extent { class: fresh(), exact: None },
                })
                .collect();
            b.arrays.insert(*v, extents);
        }
        let grid = grid_extents(launch, &b.arrays, &body.body.params);
        b.region(body, &body.body, &grid, &mut fresh);
        b
    }

    /// Whether index `index` of dimension `axis` of array `array` is in bounds: with `len`
    /// `None` a single index in `0..extent`, with `Some(k)` the start of a slice of `k` in
    /// `0..=extent - k`.
    pub fn inside(&self, array: Value, axis: usize, index: Value, len: Option<u32>) -> bool {
        let (Some(f), Some(e)) = (self.facts.get(&index), self.arrays.get(&array).and_then(|d| d.get(axis))) else {
            return false;
        };
        let k = len.unwrap_or(1) as i64;
        if f.lo.is_none_or(|l| l < 0) {
            return false;
        }
        f.ups.iter().any(|&(s, o)| match s {
            Sym::Extent(c) => c == e.class && o <= -k,
            Sym::Zero => e.exact.is_some_and(|n| o <= n - k),
        })
    }

    fn fact(&self, v: Value) -> Option<&Fact> {
        self.facts.get(&v)
    }

    fn region(&mut self, f: &Function, r: &Region, grid: &[Option<u32>; 3], fresh: &mut impl FnMut() -> u32) {
        for op in &r.ops {
            self.op(f, op, grid, fresh);
            for reg in &op.regions {
                self.region(f, reg, grid, fresh);
            }
        }
    }

    fn op(&mut self, f: &Function, op: &Op, grid: &[Option<u32>; 3], fresh: &mut impl FnMut() -> u32) {
        let is_int = |v: Value| matches!(f.ty(v), Type::Scalar(Scalar::I32 | Scalar::I64));
        let fact = match &op.kind {
            OpKind::Const(Const::Int(c, _)) => Some(Fact::constant(*c)),
            OpKind::Dim(d) => self.arrays.get(&op.args[0]).and_then(|e| e.get(*d as usize)).map(|e| {
                let mut x = Fact { lo: Some(0), ups: vec![(Sym::Extent(e.class), 0)] };
                if let Some(n) = e.exact {
                    x.push_up(Sym::Zero, n);
                }
                x
            }),
            OpKind::ProgramId(a) => {
                let mut x = Fact { lo: Some(0), ups: vec![] };
                if let Some(c) = grid.get(*a as usize).copied().flatten() {
                    x.push_up(Sym::Extent(c), -1);
                }
                Some(x)
            }
            OpKind::Bin(k) if op.args.len() == 2 && is_int(op.results[0]) => self.bin(*k, op.args[0], op.args[1]),
            OpKind::AllocShared(dims) => {
                let extents = dims.iter().map(|&n| Extent { class: fresh(), exact: Some(n as i64) }).collect();
                self.arrays.insert(op.results[0], extents);
                None
            }
            OpKind::For => {
                let (lo, hi, step) = (op.args[0], op.args[1], op.args[2]);
                let positive = self.fact(step).is_some_and(|s| s.lo.is_some_and(|l| l > 0));
                if let (true, Some(iv)) = (positive, op.regions.first().and_then(|r| r.params.first())) {
                    // The body runs with iv < hi, so iv <= hi - 1. iv >= lo holds unless
                    // `iv + step` wraps past i32::MAX (the loop then goes on, negative):
                    // excluded when hi - 1 + step <= i32::MAX by hi's bounds.
                    let h = self.fact(hi).cloned().unwrap_or_default();
                    let no_wrap = self.fact(step).and_then(Fact::hi).is_some_and(|st| {
                        h.ups.iter().any(|&(s, o)| o + st - 1 <= if s == Sym::Zero { i32::MAX as i64 } else { 0 })
                    });
                    let mut x = Fact { lo: self.fact(lo).and_then(|l| l.lo).filter(|_| no_wrap), ups: vec![] };
                    for &(s, o) in &h.ups {
                        x.push_up(s, o - 1);
                    }
                    self.facts.insert(*iv, x);
                }
                None
            }
            _ => None,
        };
        if let Some(x) = fact {
            if let Some(r) = op.results.first() {
                self.facts.insert(*r, x);
            }
        }
    }

    fn bin(&self, k: BinOp, a: Value, b: Value) -> Option<Fact> {
        let (fa, fb) = (self.fact(a)?.clone(), self.fact(b)?.clone());
        let konst = |x: &Fact| x.lo.filter(|l| Some(*l) == x.hi());
        match k {
            BinOp::Add => match (konst(&fa), konst(&fb)) {
                (_, Some(c)) => Some(fa.add_const(c)),
                (Some(c), _) => Some(fb.add_const(c)),
                _ => None,
            },
            BinOp::Sub => konst(&fb).map(|c| fa.add_const(-c)),
            BinOp::Min => {
                let mut x = Fact { lo: fa.lo.zip(fb.lo).map(|(p, q)| p.min(q)), ups: fa.ups.clone() };
                for &(s, o) in &fb.ups {
                    x.push_up(s, o);
                }
                Some(x)
            }
            BinOp::Max => {
                let lo = match (fa.lo, fb.lo) {
                    (Some(p), Some(q)) => Some(p.max(q)),
                    (p, q) => p.or(q),
                };
                let mut x = Fact { lo, ups: vec![] };
                for &(s, o) in &fa.ups {
                    if let Some(&(_, p)) = fb.ups.iter().find(|(t, _)| *t == s) {
                        x.push_up(s, o.max(p));
                    }
                }
                Some(x)
            }
            _ => None,
        }
    }
}

/// For each grid axis of `launch` that is an extent of an array parameter (`grid(B)` with
/// `A: T[B, N, N]`), its class: `program_id` of that axis is then below it.
fn grid_extents(launch: &Function, arrays: &HashMap<Value, Vec<Extent>>, body_params: &[Value]) -> [Option<u32>; 3] {
    let mut out = [None; 3];
    if launch.kind != FuncKind::Launch || launch.body.params.len() != body_params.len() {
        return out;
    }
    // The launch function's parameters are the kernel's: the same arrays by position.
    let mut defs: HashMap<Value, &Op> = HashMap::new();
    for op in &launch.body.ops {
        for r in &op.results {
            defs.insert(*r, op);
        }
    }
    let Some(ret) = launch.body.ops.iter().find(|o| o.kind == OpKind::Return) else { return out };
    for (axis, v) in ret.args.iter().take(3).enumerate() {
        let mut v = *v;
        // Through widenings to `i64` (of an `i32` extent: the same value).
        while let Some(op) = defs.get(&v).filter(|o| matches!(o.kind, OpKind::Cast(Scalar::I64))) {
            v = op.args[0];
        }
        let Some(op) = defs.get(&v) else { continue };
        let OpKind::Dim(d) = op.kind else { continue };
        let Some(pos) = launch.body.params.iter().position(|p| *p == op.args[0]) else { continue };
        out[axis] = arrays.get(&body_params[pos]).and_then(|e| e.get(d as usize)).map(|e| e.class);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FuncId, KernelParam, Loc};

    /// `k(A: mut f32[B, N, W], X: mut f32[N, M])` with `W` fixed at 4 and `grid(B)`:
    /// `for p in 0..N - 1 { for k in 0..p { A[b, k, 0:4] } }` and a loop of step 2 to `N`.
    const BODY: &str = "// @0
kernel @k(%0: mut f32[?, ?, ?], %1: mut f32[?, ?]) {
  %2 = dim.1 %0 : i32
  %3 = program_id.0 : i32
  %4 = const 0 : i32
  %5 = const 1 : i32
  %6 = sub %2, %5 : i32
  for %4, %6, %5 { ^(%7: i32)
    for %4, %7, %5 { ^(%8: i32)
      %9 = load[i,i,+4] %0, %3, %8, %4 : tile<f32, 4>
      yield
    }
    yield
  }
  %10 = const 2 : i32
  for %4, %2, %10 { ^(%11: i32)
    yield
  }
  %12 = add %6, %5 : i32
  %13 = min %7, %2 : i32
  return
}
";

    const LAUNCH: &str = "// @0
launch @l(%0: mut f32[?, ?, ?], %1: mut f32[?, ?]) -> (i64, i64, i64, f64) {
  %2 = dim.0 %0 : i32
  %3 = cast.i64 %2 : i64
  %4 = const 1 : i64
  %5 = const NaN : f64
  return %3, %4, %4, %5
}
";

    fn var(n: &str) -> Dim {
        Dim::Var(n.into())
    }

    fn bounds(x_optional: bool) -> Bounds {
        let body = crate::parse::parse_function(BODY).expect("parses");
        let launch = crate::parse::parse_function(LAUNCH).expect("parses");
        let array = |dims: Vec<Dim>, optional| ParamKind::Array { elem: Scalar::F32, dims, mutable: true, optional };
        let k = Kernel {
            name: "k".into(),
            symbol: "k".into(),
            params: vec![
                KernelParam {
                    name: "A".into(),
                    kind: array(vec![var("B"), var("N"), Dim::Named("W".into(), 4)], false),
                },
                KernelParam { name: "X".into(), kind: array(vec![var("N"), var("M")], x_optional) },
            ],
            body: FuncId(0),
            launch: FuncId(1),
            grid_rank: 1,
            block: None,
            has_flops: false,
            doc: None,
            loc: Loc::default(),
        };
        Bounds::of(&k, &body, &launch)
    }

    #[test]
    fn loop_indices_below_an_extent_are_inside_every_array_of_that_extent() {
        let b = bounds(false);
        let (a, x) = (Value(0), Value(1));
        assert!(b.inside(a, 0, Value(3), None), "program_id(0) < B (grid(B))");
        assert!(b.inside(a, 1, Value(7), None), "p < N - 1");
        assert!(b.inside(a, 1, Value(8), None), "k < p < N - 1");
        assert!(b.inside(x, 0, Value(8), None), "X's first extent is also N");
        assert!(!b.inside(x, 1, Value(8), None), "M is another extent");
        assert!(b.inside(a, 2, Value(4), Some(4)), "0:4 of W = 4");
        assert!(!b.inside(a, 2, Value(4), Some(5)), "0:5 of W = 4");
        assert!(!b.inside(a, 1, Value(2), None), "N itself is not below N");
        assert!(!b.inside(a, 1, Value(12), None), "N - 1 + 1 is N");
        assert!(b.inside(a, 1, Value(13), None), "min(p, N) < N - 1");
        assert!(!b.inside(a, 0, Value(7), None), "p < N says nothing of B");
    }

    #[test]
    fn no_proof_through_an_omitted_array_or_a_loop_that_may_wrap() {
        let b = bounds(true);
        assert!(!b.inside(Value(1), 0, Value(8), None), "an omitted X has extent 0 whatever N is");
        assert!(b.inside(Value(0), 1, Value(8), None));
        // `for i in 0..N step 2`: i + 2 may wrap past i32::MAX when N is, so i may be negative.
        assert!(!b.inside(Value(0), 1, Value(11), None));
    }
}
