//! Distributed vectors: the SIMT layout of long 1-D tiles, and of short ones that the kernel
//! uses only element-wise (or sums outside its loops).
//!
//! A `tile<T, N>` with `N > DIST_ABOVE`, or with a length that the kernel uses only with the
//! operations below, and in a float sum or product only outside its loops
//! ([`replicated_lengths`]), is not replicated (every lane holding all `N` elements, which makes code and registers grow with
//! `N`) but distributed like the rows of a matrix: lane `l` holds elements `l, l + lanes,
//! l + 2 lanes, ..` in `ceil(N / lanes)` registers ([`Lv::Dist`]), and slots past `N` hold
//! padding that is never stored or reduced. The operations that long vectors are used for work
//! on this layout directly, with code that grows with the registers per lane: fills,
//! element-wise arithmetic and `map`, loads and stores (each lane moves its own elements),
//! reductions (lane partials, then across lanes; a float sum or product of a short vector
//! gathers it and combines in index order, as on the CPU), scans and flips (as a matrix of one
//! column: `ops.rs`, `flip.rs`), and element access at a run-time index (a select over the
//! lane's registers, then a shuffle from the owning lane). Every other operation on a long
//! vector is lowered on its replicated form, gathered with `N` shuffles, and its long vector
//! result distributed again ([`Lower::canonical`]).

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashSet;

/// Vectors longer than this are distributed. Shorter ones, the vectors of matrix algebra
/// (rows and columns of tiles of at most 64), stay replicated where the kernel uses vectors of
/// their length with matrices (products, broadcasts, the second vector of an outer product,
/// ...), which read any of their elements in every lane, or sums them in a loop; where it does
/// not, they are distributed too ([`replicated_lengths`]).
pub(super) const DIST_ABOVE: u32 = 64;

/// Whether `kind` has a lowering on distributed operands and results (the others see their
/// operands' replicated form, [`Lower::on_replicated`]).
pub(super) fn has_dist_lowering(kind: &OpKind) -> bool {
    matches!(
        kind,
        OpKind::Fill(_)
            | OpKind::Bin(_)
            | OpKind::Un(_)
            | OpKind::Load(_)
            | OpKind::LoadInto(_)
            | OpKind::Store(_)
            | OpKind::AtomicAdd(_)
            | OpKind::StoreMasked(_)
            | OpKind::Reduce(_, None)
            | OpKind::Extract
            | OpKind::Insert
            | OpKind::ExtractLine(_)
            | OpKind::InsertLine(_)
            | OpKind::Map
            | OpKind::Scan(..)
            | OpKind::Flip(_)
    )
}

/// The lengths `n <= DIST_ABOVE` of the 1-D tiles that kernel body `f` keeps replicated: those
/// of the operands and results that an operation needs replicated ([`needs_replicated`]: in a
/// loop or not, but for float sums and broadcasts of filled vectors, which only count in a
/// loop; loops, branches and yields carry the layout as it is). Vectors of every other length are distributed: the vectors of
/// element-wise code over a batch of matrices (the compact kernels' `tile<T, W>`, one matrix
/// per element) then take `ceil(n / lanes)` registers per lane instead of `n`, and their code
/// shrinks by the same factor. Which lengths are distributed changes registers and code, never
/// values.
pub(super) fn replicated_lengths(f: &Function) -> HashSet<u32> {
    fn walk(f: &Function, r: &Region, in_loop: bool, kept: &mut HashSet<u32>) {
        for op in &r.ops {
            for v in needs_replicated(f, r, op, in_loop) {
                if let Type::Tile { shape, .. } = f.ty(v) {
                    if let [n] = shape[..] {
                        kept.insert(n);
                    }
                }
            }
            let looped = in_loop || matches!(op.kind, OpKind::For | OpKind::While);
            for reg in &op.regions {
                walk(f, reg, looped, kept);
            }
        }
    }
    let mut kept = HashSet::new();
    walk(f, &f.body, false, &mut kept);
    kept
}

/// The operands and results of `op` (in region `r`, inside a loop or not) that keep their
/// vector length replicated: every one of an operation without a distributed lowering
/// ([`has_dist_lowering`]), except those it reads in their distributed form anyway (the first
/// vector of an outer product or rank-1 update, the sums along a matrix's rows, each lane's
/// own) and, outside loops, those it converts once at little cost (a broadcast of a filled
/// vector). A float sum or product of a short vector runs in index order, as on the CPU: on a
/// distributed vector it gathers the elements first (`n` shuffles), so inside a loop it keeps
/// its length replicated.
fn needs_replicated(f: &Function, r: &Region, op: &Op, in_loop: bool) -> Vec<Value> {
    let all = || op.args.iter().chain(&op.results).copied().collect();
    match &op.kind {
        OpKind::For | OpKind::While | OpKind::If | OpKind::Yield => vec![],
        OpKind::Reduce(Reduce::Sum | Reduce::Prod, None)
            if op.args.first().is_some_and(|a| matches!(f.ty(*a), Type::Tile { elem, .. } if elem.is_float())) =>
        {
            if in_loop {
                all()
            } else {
                vec![]
            }
        }
        OpKind::Outer => vec![op.args[1]],
        OpKind::Rank1(_) => vec![op.args[2]],
        OpKind::Reduce(_, Some(1)) => vec![],
        OpKind::Broadcast if !in_loop && op.args.first().is_some_and(|a| is_fill(r, *a)) => vec![],
        kind if has_dist_lowering(kind) => vec![],
        _ => all(),
    }
}

/// Whether `v` is the result of a `Fill` op of region `r`.
fn is_fill(r: &Region, v: Value) -> bool {
    r.ops.iter().any(|op| matches!(op.kind, OpKind::Fill(_)) && op.results.first() == Some(&v))
}

impl Lower<'_> {
    /// Whether a 1-D tile of `n` elements is distributed in this kernel.
    pub(super) fn is_dist(&self, n: u32) -> bool {
        n > DIST_ABOVE || !self.replicated.contains(&n)
    }

    /// `lv` (a lowered value of source type `ty`) in its canonical layout: long vectors
    /// distributed, everything else unchanged.
    pub(super) fn canonical(&mut self, lv: Lv, ty: &Type) -> Lv {
        match (lv, ty) {
            (Lv::Vec { n, elem, rep, dist }, Type::Tile { shape, .. }) if shape.len() == 1 && self.is_dist(n) => {
                let regs = match dist {
                    Some(d) => d,
                    None => self.dist_from_rep(n, elem, &rep),
                };
                Lv::Dist { n, elem, regs }
            }
            (lv, _) => lv,
        }
    }

    /// The row-distributed registers of the replicated vector `rep`: slot `s` of lane `l` is
    /// element `l + s * lanes`, chosen among that slot's `lanes` candidates.
    pub(super) fn dist_from_rep(&mut self, n: u32, elem: Scalar, rep: &[Value]) -> Vec<Value> {
        let zero = self.elemc(0.0, elem);
        let mut out = Vec::new();
        for s in 0..self.slots(n) {
            let mut x = zero;
            for l in 0..self.lanes {
                let i = s * self.lanes + l;
                if i >= n {
                    break;
                }
                let lc = self.i32c(l as i64);
                let mine = self.cmp(CmpOp::Eq, self.lane, lc);
                x = self.select(mine, rep[i as usize], x, elem);
            }
            out.push(x);
        }
        out
    }

    /// The replicated form of a distributed vector (`n` shuffles), keeping its registers as
    /// the distributed form; other values unchanged.
    pub(super) fn replicated(&mut self, lv: Lv) -> Lv {
        match lv {
            Lv::Dist { n, elem, regs } => self.vec_from_dist(n, elem, regs),
            other => other,
        }
    }

    /// A fill of a distributed vector: `x` everywhere, `iota` the element's index, `eye` 1 at
    /// element 0.
    pub(super) fn fill_dist(&mut self, f: Fill, x: Value, n: u32, elem: Scalar) -> Lv {
        let regs = (0..self.slots(n))
            .map(|s| match f {
                Fill::Iota(_) => self.cast_i32(self.rows[s as usize], elem),
                Fill::Eye => {
                    let (zero, one) = (self.i32c(0), self.elemc(1.0, elem));
                    let first = self.cmp(CmpOp::Eq, self.rows[s as usize], zero);
                    self.select(first, one, x, elem)
                }
                _ => x,
            })
            .collect();
        Lv::Dist { n, elem, regs }
    }

    /// Index operands of slot `s` of a 1-D access along dimension `d`: the slice start plus
    /// the slot's element index, or -1 (out of bounds: nothing moves) for padding slots and
    /// where `keep` is false.
    pub(super) fn dist_index(&mut self, idx: &[Value], d: usize, s: u32, n: u32, keep: Option<Value>) -> Vec<Value> {
        let valid = self.row_lt(s, n as i64);
        let valid = match keep {
            Some(k) => self.bin(BinOp::And, valid, k, Scalar::Bool),
            None => valid,
        };
        let at = self.bin(BinOp::Add, idx[d], self.rows[s as usize], Scalar::I32);
        let m1 = self.i32c(-1);
        let mut ix = idx.to_vec();
        ix[d] = self.select(valid, at, m1, Scalar::I32);
        ix
    }

    /// A reduction of a whole distributed vector: each lane combines its real elements, then
    /// the lanes' partials are combined (the result is uniform).
    pub(super) fn reduce_dist(&mut self, k: Reduce, n: u32, elem: Scalar, regs: &[Value]) -> Value {
        let id = self.elemc(super::ops::identity(k, elem), elem);
        let mut p = id;
        for (s, r) in regs.iter().enumerate() {
            let valid = self.row_lt(s as u32, n as i64);
            let x = self.select(valid, *r, id, elem);
            p = if s == 0 { x } else { self.bin(super::ops::reduce_op(k), p, x, elem) };
        }
        self.across_lanes(k, p, elem)
    }

    /// Element `i` (a uniform run-time index) of a distributed vector: the owning lane's
    /// register (a select over the slots), shuffled from that lane; 0 out of range.
    pub(super) fn extract_dist(&mut self, n: u32, elem: Scalar, regs: &[Value], i: Value) -> Value {
        let lanes = self.i32c(self.lanes as i64);
        let slot = self.bin(BinOp::Div, i, lanes, Scalar::I32);
        let src = self.bin(BinOp::Rem, i, lanes, Scalar::I32);
        let zero = self.elemc(0.0, elem);
        let mut x = zero;
        for (s, r) in regs.iter().enumerate() {
            let sc = self.i32c(s as i64);
            let here = self.cmp(CmpOp::Eq, slot, sc);
            x = self.select(here, *r, x, elem);
        }
        let ok = self.in_range(i, n);
        let z = self.i32c(0);
        let src = self.select(ok, src, z, Scalar::I32);
        let y = self.shuffle_from(x, src, elem);
        self.select(ok, y, zero, elem)
    }

    /// The distributed vector with element `i` replaced by `x` (in the owning lane's slot).
    pub(super) fn insert_dist(&mut self, n: u32, elem: Scalar, regs: &[Value], i: Value, x: Value) -> Lv {
        let regs = regs
            .iter()
            .enumerate()
            .map(|(s, r)| {
                let here = self.cmp(CmpOp::Eq, self.rows[s], i);
                self.select(here, x, *r, elem)
            })
            .collect();
        Lv::Dist { n, elem, regs }
    }

    /// Runs `lower` on `op` with every distributed operand in its replicated form (for the
    /// operations without a distributed lowering), then restores the distributed operands.
    pub(super) fn on_replicated<T>(
        &mut self,
        op: &Op,
        lower: impl FnOnce(&mut Self) -> Result<T, SimtError>,
    ) -> Result<T, SimtError> {
        let mut saved = Vec::new();
        for a in &op.args {
            if let Some(lv @ Lv::Dist { .. }) = self.map.get(a).cloned() {
                if !saved.iter().any(|(v, _)| v == a) {
                    let rep = self.replicated(lv.clone());
                    self.map.insert(*a, rep);
                    saved.push((*a, lv));
                }
            }
        }
        let r = lower(self);
        for (v, lv) in saved {
            self.map.insert(v, lv);
        }
        r
    }

    /// The registers of a distributed vector.
    pub(super) fn dist_regs(lv: &Lv) -> Result<(u32, Scalar, Vec<Value>), SimtError> {
        match lv {
            Lv::Dist { n, elem, regs } => Ok((*n, *elem, regs.clone())),
            _ => Err(err("expected a distributed vector")),
        }
    }
}
