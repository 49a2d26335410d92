//! Stack storage of register tiles on the CPU: one slot per tile value, except that an
//! operation whose tile operand dies at it writes its result in place (`d -= outer(v, v)`
//! updates `d`'s slot), and loop-carried tiles share one slot with their init, block parameter,
//! yielded value and result when that is safe. Shared arrays get a slot of their own. Liveness comes from a pre-order numbering of
//! the ops, with uses inside a nested region extended to the end of the outermost op that
//! encloses the use but not the definition (a loop keeps its outer operands alive).

use crate::chains::Chains;
use std::collections::HashMap;
use tilec_midend::fusion::LeftOperand;
use tilec_midend::{Function, Op, OpKind, Region, Value};

/// A tile slot: index into [`Slots::sizes`].
pub(crate) type SlotId = usize;

/// The slot assignment of one function.
pub(crate) struct Slots {
    /// Slot of every tile value.
    pub(crate) of: HashMap<Value, SlotId>,
    /// Size in bytes of every slot.
    pub(crate) sizes: Vec<u32>,
}

struct Live {
    def: HashMap<Value, usize>,
    last: HashMap<Value, usize>,
}

fn number(
    r: &Region,
    pos: &mut usize,
    stack: &mut Vec<(usize, usize)>,
    live: &mut Live,
    ends: &mut Vec<(usize, usize)>,
) {
    for op in &r.ops {
        let start = *pos;
        *pos += 1;
        for a in &op.args {
            let d = live.def.get(a).copied().unwrap_or(0);
            // The outermost enclosing region op that starts after the definition.
            let eff = stack.iter().find(|(s, _)| *s > d).map(|(_, e)| *e);
            let u = match eff {
                Some(e) => e,
                None => start,
            };
            let l = live.last.entry(*a).or_insert(0);
            *l = (*l).max(u);
        }
        if !op.regions.is_empty() {
            // The end is known only after numbering the regions; use a placeholder.
            let idx = ends.len();
            ends.push((start, usize::MAX));
            stack.push((start, usize::MAX));
            for reg in &op.regions {
                for p in &reg.params {
                    live.def.insert(*p, start);
                }
            }
            // Numbering nested regions needs the end for uses inside, so do two passes:
            // first count, then number with the known end.
            let mut count = 0usize;
            count_ops(&op.regions, &mut count);
            let end = start + count;
            stack.pop();
            stack.push((start, end));
            ends[idx].1 = end;
            for reg in &op.regions {
                number(reg, pos, stack, live, ends);
            }
            stack.pop();
        }
        for res in &op.results {
            live.def.insert(*res, start);
        }
    }
}

fn count_ops(regions: &[Region], n: &mut usize) {
    for r in regions {
        for op in &r.ops {
            *n += 1;
            count_ops(&op.regions, n);
        }
    }
}

/// Which operand (if any) an op may overwrite in place to produce result 0 (for a `Bin` or
/// `Un`, the first tile it reads of the result's type, through its chain: the leaves of
/// [`Chains::leaves`]); `dies` says whether a value dies at the op.
fn in_place_operand(f: &Function, chains: &Chains, op: &Op, dies: impl Fn(Value) -> bool) -> Option<Value> {
    let res_ty = f.ty(*op.results.first()?);
    let cand = match op.kind {
        OpKind::Bin(_) | OpKind::Un(_) => {
            let mut leaves = Vec::new();
            chains.leaves(f, op, &mut leaves);
            leaves.into_iter().find(|a| f.ty(*a) == res_ty && dies(*a))
        }
        OpKind::Rank1(_)
        | OpKind::Cholesky
        | OpKind::Lu
        | OpKind::LoadInto(_)
        | OpKind::Insert
        | OpKind::InsertBlock(_)
        | OpKind::InsertLine(_) => Some(op.args[0]),
        OpKind::Trsm(_) if op.args[0] != op.args[1] => Some(op.args[1]),
        OpKind::MatmulAcc if op.args[0] != op.args[1] && op.args[0] != op.args[2] => Some(op.args[0]),
        OpKind::Map => Some(op.args[0]),
        _ => None,
    }?;
    (f.ty(cand) == res_ty && dies(cand)).then_some(cand)
}

struct Alloc<'f> {
    f: &'f Function,
    chains: &'f Chains,
    live: Live,
    slots: Slots,
    pos: usize,
}

impl Alloc<'_> {
    fn fresh(&mut self, v: Value) -> SlotId {
        let bytes = self.f.ty(v).tile_len() * self.f.ty(v).elem().bytes();
        self.slots.sizes.push(bytes.max(16));
        let s = self.slots.sizes.len() - 1;
        self.slots.of.insert(v, s);
        s
    }

    fn dies_at(&self, v: Value, at: usize) -> bool {
        self.live.last.get(&v).copied().unwrap_or(0) <= at
    }

    fn region(&mut self, r: &Region) {
        for op in &r.ops {
            let at = self.pos;
            self.pos += 1;
            match op.kind {
                OpKind::For | OpKind::While => {
                    let inits = if op.kind == OpKind::For { &op.args[3..] } else { &op.args[..] };
                    let skip = usize::from(op.kind == OpKind::For);
                    for (k, init) in inits.iter().enumerate() {
                        if !self.f.ty(*init).is_tile() {
                            continue;
                        }
                        let shared = inits.iter().filter(|x| *x == init).count() == 1
                            && self.dies_at(*init, at)
                            && self.slots.of.contains_key(init);
                        let s = if shared { self.slots.of[init] } else { self.fresh(op.results[k]) };
                        self.slots.of.insert(op.results[k], s);
                        for reg in &op.regions {
                            if let Some(p) = reg.params.get(k + skip) {
                                self.slots.of.insert(*p, s);
                            }
                        }
                    }
                    for reg in &op.regions {
                        self.region(reg);
                    }
                }
                OpKind::If => {
                    for res in &op.results {
                        if self.f.ty(*res).is_tile() {
                            self.fresh(*res);
                        }
                    }
                    for reg in &op.regions {
                        self.region(reg);
                    }
                }
                _ => {
                    for reg in &op.regions {
                        self.region(reg);
                    }
                    if let OpKind::AllocShared(shape) = &op.kind {
                        let elems: u32 = shape.iter().product();
                        let bytes = elems * self.f.ty(op.results[0]).elem().bytes();
                        self.slots.sizes.push(bytes.max(16));
                        self.slots.of.insert(op.results[0], self.slots.sizes.len() - 1);
                        continue;
                    }
                    for (i, res) in op.results.iter().enumerate() {
                        let unformed = self.chains.ops.contains_key(res) && !matches!(op.kind, OpKind::ExtractLine(_));
                        if !self.f.ty(*res).is_tile() || unformed {
                            continue;
                        }
                        let dies = |a: Value| self.dies_at(a, at) && self.slots.of.contains_key(&a);
                        let reuse = if i == 0 { in_place_operand(self.f, self.chains, op, dies) } else { None };
                        match reuse {
                            Some(a) => {
                                let s = self.slots.of[&a];
                                self.slots.of.insert(*res, s);
                            }
                            _ => {
                                self.fresh(*res);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Assigns slots to every tile value of `f`. `views`: the left operands that products read
/// in place from another tile (`tilec_midend::fusion::left_operands`): that source tile stays
/// alive one op past its product, so that neither the product's result nor anything before
/// it takes the source's slot. `chains`: the element-wise ops that their reader computes
/// (`chains.rs`): they get no slot (but a row taken from a tile, zeroed there for an index out
/// of range), and the tiles they read stay alive until the op that reads them (the chain's
/// root), the tile of a broadcast row or of a row one op past it (the root's result, written
/// row by row, must not overwrite the row it reads).
pub(crate) fn assign(f: &Function, views: &HashMap<Value, LeftOperand>, chains: &Chains) -> Slots {
    let mut live = Live { def: HashMap::new(), last: HashMap::new() };
    for p in &f.body.params {
        live.def.insert(*p, 0);
    }
    let mut pos = 0;
    let mut ends = Vec::new();
    number(&f.body, &mut pos, &mut Vec::new(), &mut live, &mut ends);
    for (a, view) in views {
        let until = live.last.get(a).copied().unwrap_or(0) + 1;
        let l = live.last.entry(view.source).or_insert(0);
        *l = (*l).max(until);
    }
    for (p, op) in &chains.ops {
        let row = !matches!(op.kind, OpKind::Bin(_) | OpKind::Un(_));
        let until = live.last.get(&chains.top(*p)).copied().unwrap_or(0) + usize::from(row);
        for x in op.args.iter().filter(|x| f.ty(**x).is_tile()) {
            let l = live.last.entry(*x).or_insert(0);
            *l = (*l).max(until);
        }
    }
    let mut a = Alloc { f, chains, live, slots: Slots { of: HashMap::new(), sizes: Vec::new() }, pos: 0 };
    a.region(&f.body);
    a.slots
}
