//! SIMT lowering of element-wise tile operations, fills, memory accesses, outer products,
//! reductions, element access and `map`.

use super::lower::{err, Lower, Lv};
use super::SimtError;
use crate::ir::*;
use crate::types::{Scalar, Type};

/// The identity of a reduction, for masked-off elements.
pub(super) fn identity(k: Reduce, s: Scalar) -> f64 {
    match (k, s.is_float()) {
        (Reduce::Sum, _) => 0.0,
        (Reduce::Prod, _) => 1.0,
        (Reduce::Max, true) => f64::NEG_INFINITY,
        (Reduce::Min, true) => f64::INFINITY,
        (Reduce::Max, false) => {
            if s == Scalar::I64 {
                i64::MIN as f64
            } else if s == Scalar::U32 {
                0.0
            } else {
                i32::MIN as f64
            }
        }
        (Reduce::Min, false) => {
            if s == Scalar::I64 {
                i64::MAX as f64
            } else if s == Scalar::U32 {
                u32::MAX as f64
            } else {
                i32::MAX as f64
            }
        }
    }
}

pub(super) fn reduce_op(k: Reduce) -> BinOp {
    match k {
        Reduce::Sum => BinOp::Add,
        Reduce::Max => BinOp::Max,
        Reduce::Min => BinOp::Min,
        Reduce::Prod => BinOp::Mul,
    }
}

/// What a load reads ([`Lower::load_operands`]): the array, one index per dimension, the
/// elements' compute type (`f16` and `bf16` load as `f32`) and the slice dimensions `(axis,
/// extent)` in order.
pub(super) struct LoadOperands {
    pub(super) array: Value,
    pub(super) idx: Vec<Value>,
    pub(super) elem: Scalar,
    pub(super) slices: Vec<(usize, u32)>,
}

impl Lower<'_> {
    /// Lowers an operation that has tile operands or results, or accesses memory; a long
    /// vector result is distributed (`dist.rs`).
    pub(super) fn tile_op(&mut self, op: &Op, res_ty: Option<Type>) -> Result<Option<Lv>, SimtError> {
        // The operations with a lowering on distributed vectors; the others see their
        // replicated form.
        let native = super::dist::has_dist_lowering(&op.kind);
        let lv = if native {
            self.tile_op_on(op, res_ty.clone())?
        } else {
            self.on_replicated(op, |l| l.tile_op_on(op, res_ty.clone()))?
        };
        Ok(match (lv, &res_ty) {
            (Some(lv), Some(t)) => Some(self.canonical(lv, t)),
            (lv, _) => lv,
        })
    }

    fn tile_op_on(&mut self, op: &Op, res_ty: Option<Type>) -> Result<Option<Lv>, SimtError> {
        let lv = match &op.kind {
            OpKind::Fill(f) => Some(self.fill(*f, op, res_ty.expect("tile result"))?),
            OpKind::Bin(k) => Some(self.bin_tile(*k, self.get(op.args[0])?, self.get(op.args[1])?)?),
            OpKind::Un(k) => Some(self.map_regs(self.get(op.args[0])?, |l, x, s| l.un(*k, x, s))),
            OpKind::Load(kinds) if self.staging.loads.contains(&op.results[0]) => Some(self.staged_load(kinds, op)?),
            OpKind::Load(kinds) => Some(self.load(kinds, op, None)?),
            OpKind::LoadInto(kinds) => {
                let old = self.get(op.args[0])?;
                Some(self.load(kinds, op, Some(old))?)
            }
            OpKind::Store(kinds) | OpKind::AtomicAdd(kinds) | OpKind::StoreMasked(kinds) => {
                self.store(kinds, op)?;
                None
            }
            OpKind::Outer => {
                let (u, v) = (self.get(op.args[0])?, self.get(op.args[1])?);
                let du = self.dist(&u)?;
                let Lv::Vec { n: m, elem, rep, .. } = v else {
                    return Err(err("outer of non-vectors"));
                };
                let Lv::Vec { n, .. } = u else {
                    return Err(err("outer of non-vectors"));
                };
                let mut regs = Vec::new();
                for x in &du {
                    for y in &rep {
                        regs.push(self.bin(BinOp::Mul, *x, *y, elem));
                    }
                }
                Some(Lv::Mat { rows: n, cols: m, elem, regs })
            }
            OpKind::Rank1(alpha) => {
                let (t, u, v) = (self.get(op.args[0])?, self.get(op.args[1])?, self.get(op.args[2])?);
                let du = self.dist(&u)?;
                let (Lv::Mat { rows, cols, elem, regs }, Lv::Vec { rep, .. }) = (t, v) else {
                    return Err(err("rank1 operands"));
                };
                let a = self.elemc(*alpha, elem);
                let mut out = Vec::new();
                for (s, x) in du.iter().enumerate() {
                    let ax = self.bin(BinOp::Mul, a, *x, elem);
                    for (c, y) in rep.iter().enumerate() {
                        out.push(self.fma(ax, *y, regs[s * cols as usize + c], elem));
                    }
                }
                Some(Lv::Mat { rows, cols, elem, regs: out })
            }
            OpKind::Transpose => {
                let t = self.get(op.args[0])?;
                if self.staging.transposes.contains(&op.results[0]) {
                    // Read transposed from the scratch array by its one product (`staged.rs`).
                    return Ok(Some(t));
                }
                if self.stored_t.contains_key(&op.results[0]) && matches!(t, Lv::Mat { .. }) {
                    // Stored transposed by its one store (`transpose.rs`): nothing here.
                    None
                } else {
                    self.stored_t.remove(&op.results[0]);
                    Some(self.transpose(t)?)
                }
            }
            OpKind::Reduce(k, axis) => Some(self.reduce(*k, *axis, self.get(op.args[0])?)?),
            OpKind::Scan(k, axis) => Some(self.scan(*k, *axis, self.get(op.args[0])?)?),
            OpKind::Flip(axis) => Some(self.flip(*axis, self.get(op.args[0])?)?),
            OpKind::Extract => Some(self.extract(op)?),
            OpKind::Insert => Some(self.insert(op)?),
            OpKind::ExtractLine(d) | OpKind::InsertLine(d) => Some(self.line_op(op, *d)?),
            OpKind::ExtractBlock(at) => {
                let Some(Type::Tile { shape, .. }) = &res_ty else {
                    return Err(err("a block that is not a tile"));
                };
                Some(self.extract_block(at, self.get(op.args[0])?, shape)?)
            }
            OpKind::Broadcast => {
                let Some(Type::Tile { shape, .. }) = &res_ty else {
                    return Err(err("a broadcast that is not a tile"));
                };
                Some(self.broadcast(self.get(op.args[0])?, shape)?)
            }
            OpKind::InsertBlock(at) => Some(self.insert_block(at, self.get(op.args[0])?, self.get(op.args[1])?)?),
            OpKind::Map => Some(self.map_op(op)?),
            OpKind::Matmul | OpKind::MatmulAcc => Some(self.matmul(op)?),
            OpKind::Cholesky => Some(self.cholesky(op)?),
            OpKind::Lu => Some(self.lu(op)?),
            OpKind::Trsm(k) => Some(self.trsm(*k, op)?),
            other => return Err(err(format!("no SIMT lowering for `{}`", crate::print::op_name(other)))),
        };
        Ok(lv)
    }

    /// Applies `f` to every register (and to a vector's distributed form).
    fn map_regs(&mut self, v: Lv, mut f: impl FnMut(&mut Self, Value, Scalar) -> Value) -> Lv {
        match v {
            Lv::Mat { rows, cols, elem, regs } => {
                let regs = regs.iter().map(|r| f(self, *r, elem)).collect();
                Lv::Mat { rows, cols, elem, regs }
            }
            Lv::Vec { n, elem, rep, dist } => {
                let rep = rep.iter().map(|r| f(self, *r, elem)).collect();
                let dist = dist.map(|d| d.iter().map(|r| f(self, *r, elem)).collect());
                Lv::Vec { n, elem, rep, dist }
            }
            Lv::Dist { n, elem, regs } => {
                let regs = regs.iter().map(|r| f(self, *r, elem)).collect();
                Lv::Dist { n, elem, regs }
            }
            other => other,
        }
    }

    fn fill(&mut self, f: Fill, op: &Op, ty: Type) -> Result<Lv, SimtError> {
        let Type::Tile { elem, shape } = ty else {
            return Err(err("fill of a non-tile"));
        };
        let x = match f {
            Fill::Full => self.scalar(op.args[0])?,
            _ => self.elemc(0.0, elem),
        };
        if shape.len() == 1 && self.is_dist(shape[0]) {
            return Ok(self.fill_dist(f, x, shape[0], elem));
        }
        if shape.len() == 1 {
            let mut rep = vec![x; shape[0] as usize];
            if f == Fill::Eye {
                rep[0] = self.elemc(1.0, elem);
            }
            if f == Fill::Iota(0) {
                rep = (0..shape[0]).map(|i| self.elemc(i as f64, elem)).collect();
            }
            return Ok(Lv::Vec { n: shape[0], elem, rep, dist: None });
        }
        let (rows, cols) = (shape[0], shape[1]);
        let mut regs = vec![x; (self.slots(rows) * cols) as usize];
        if let Fill::Iota(axis) = f {
            for s in 0..self.slots(rows) {
                // Rows: this lane's row index of the slot; columns: the column, a constant.
                let row = self.cast_i32(self.rows[s as usize], elem);
                for c in 0..cols {
                    regs[(s * cols + c) as usize] = if axis == 0 { row } else { self.elemc(c as f64, elem) };
                }
            }
        }
        if f == Fill::Eye {
            let one = self.elemc(1.0, elem);
            for s in 0..self.slots(rows) {
                for c in 0..cols {
                    let cc = self.i32c(c as i64);
                    let on = self.cmp(CmpOp::Eq, self.rows[s as usize], cc);
                    regs[(s * cols + c) as usize] = self.select(on, one, x, elem);
                }
            }
        }
        Ok(Lv::Mat { rows, cols, elem, regs })
    }

    fn bin_tile(&mut self, k: BinOp, a: Lv, b: Lv) -> Result<Lv, SimtError> {
        Ok(match (a, b) {
            (Lv::Mat { rows, cols, elem, regs: ra }, Lv::Mat { regs: rb, .. }) => {
                let regs = ra.iter().zip(&rb).map(|(x, y)| self.bin(k, *x, *y, elem)).collect();
                Lv::Mat { rows, cols, elem, regs }
            }
            (Lv::Vec { n, elem, rep: ra, dist: da }, Lv::Vec { rep: rb, dist: db, .. }) => {
                let rep = ra.iter().zip(&rb).map(|(x, y)| self.bin(k, *x, *y, elem)).collect();
                let dist = match (da, db) {
                    (Some(da), Some(db)) => Some(da.iter().zip(&db).map(|(x, y)| self.bin(k, *x, *y, elem)).collect()),
                    _ => None,
                };
                Lv::Vec { n, elem, rep, dist }
            }
            (Lv::Dist { n, elem, regs: ra }, Lv::Dist { regs: rb, .. }) => {
                let regs = ra.iter().zip(&rb).map(|(x, y)| self.bin(k, *x, *y, elem)).collect();
                Lv::Dist { n, elem, regs }
            }
            (t, Lv::Scalar(y)) => self.map_regs(t, |l, x, s| l.bin(k, x, y, s)),
            (Lv::Scalar(x), t) => self.map_regs(t, |l, y, s| l.bin(k, x, y, s)),
            _ => return Err(err("mismatched tile operands")),
        })
    }

    /// Index operands of a memory op: for a tile access, the positions of the slice
    /// dimensions; the other indices are scalars.
    fn indices(&self, args: &[Value]) -> Result<Vec<Value>, SimtError> {
        args.iter().map(|a| self.scalar(*a)).collect()
    }

    /// A scalar memory op at `idx` (one index per dimension).
    fn access(
        &mut self,
        kind: &OpKind,
        array: Value,
        idx: Vec<Value>,
        extra: Option<Value>,
        elem: Scalar,
        old: Option<Value>,
    ) -> Option<Value> {
        let at = vec![Index::At; idx.len()];
        match kind {
            OpKind::Store(_) | OpKind::AtomicAdd(_) => {
                let k = if matches!(kind, OpKind::Store(_)) { OpKind::Store(at) } else { OpKind::AtomicAdd(at) };
                let mut args = vec![array];
                args.extend(idx);
                args.push(extra.expect("stored value"));
                self.emit(k, args, vec![]);
                None
            }
            _ => match old {
                Some(o) => {
                    let mut args = vec![o, array];
                    args.extend(idx);
                    Some(self.emit1(OpKind::LoadInto(at), args, Type::Scalar(elem)))
                }
                None => {
                    let mut args = vec![array];
                    args.extend(idx);
                    Some(self.emit1(OpKind::Load(at), args, Type::Scalar(elem)))
                }
            },
        }
    }

    /// The operands of a load `op` (of `kinds`) whose array is `op.args[base]`.
    pub(super) fn load_operands(&self, kinds: &[Index], op: &Op, base: usize) -> Result<LoadOperands, SimtError> {
        Ok(LoadOperands {
            array: self.scalar(op.args[base])?,
            idx: self.indices(&op.args[base + 1..])?,
            elem: self.src.ty(op.args[base]).elem().compute(),
            slices: kinds
                .iter()
                .enumerate()
                .filter_map(|(d, k)| if let Index::Slice(n) = k { Some((d, *n)) } else { None })
                .collect(),
        })
    }

    fn load(&mut self, kinds: &[Index], op: &Op, old: Option<Lv>) -> Result<Lv, SimtError> {
        let LoadOperands { array, idx, elem, slices } = self.load_operands(kinds, op, usize::from(old.is_some()))?;
        match slices.len() {
            0 => {
                let o = match old {
                    Some(Lv::Scalar(o)) => Some(o),
                    _ => None,
                };
                Ok(Lv::Scalar(self.access(&op.kind, array, idx, None, elem, o).expect("value")))
            }
            1 if self.is_dist(slices[0].1) => {
                // A distributed vector: each lane loads its own elements.
                let (d, n) = slices[0];
                let old_regs = match &old {
                    Some(o) => Some(Self::dist_regs(o)?.2),
                    None => None,
                };
                let mut regs = Vec::new();
                for s in 0..self.slots(n) {
                    let ix = self.dist_index(&idx, d, s, n, None);
                    let o = old_regs.as_ref().map(|r| r[s as usize]);
                    regs.push(self.access(&op.kind, array, ix, None, elem, o).expect("value"));
                }
                Ok(Lv::Dist { n, elem, regs })
            }
            1 => {
                let (d, n) = slices[0];
                let (old_rep, old_dist) = match &old {
                    Some(Lv::Vec { rep, .. }) => (Some(rep.clone()), old.as_ref().map(|o| self.dist(o)).transpose()?),
                    _ => (None, None),
                };
                let mut rep = Vec::new();
                for i in 0..n {
                    let off = self.i32c(i as i64);
                    let mut ix = idx.clone();
                    ix[d] = self.bin(BinOp::Add, idx[d], off, Scalar::I32);
                    let o = old_rep.as_ref().map(|r| r[i as usize]);
                    rep.push(self.access(&op.kind, array, ix, None, elem, o).expect("value"));
                }
                let mut dist = Vec::new();
                for s in 0..self.slots(n) {
                    let mut ix = idx.clone();
                    ix[d] = self.bin(BinOp::Add, idx[d], self.rows[s as usize], Scalar::I32);
                    let o = old_dist.as_ref().map(|r| r[s as usize]);
                    dist.push(self.access(&op.kind, array, ix, None, elem, o).expect("value"));
                }
                Ok(Lv::Vec { n, elem, rep, dist: Some(dist) })
            }
            _ => {
                let ((d1, rows), (d2, cols)) = (slices[0], slices[1]);
                let old_regs = match &old {
                    Some(Lv::Mat { regs, .. }) => Some(regs.clone()),
                    _ => None,
                };
                let mut regs = Vec::new();
                for s in 0..self.slots(rows) {
                    let r = self.bin(BinOp::Add, idx[d1], self.rows[s as usize], Scalar::I32);
                    for c in 0..cols {
                        let off = self.i32c(c as i64);
                        let mut ix = idx.clone();
                        ix[d1] = r;
                        ix[d2] = self.bin(BinOp::Add, idx[d2], off, Scalar::I32);
                        let o = old_regs.as_ref().map(|r| r[(s * cols + c) as usize]);
                        regs.push(self.access(&op.kind, array, ix, None, elem, o).expect("value"));
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs })
            }
        }
    }

    /// `i` if `keep`, else -1 (an index that is always out of bounds).
    pub(super) fn masked(&mut self, keep: Value, i: Value) -> Value {
        let m1 = self.i32c(-1);
        self.select(keep, i, m1, Scalar::I32)
    }

    fn store(&mut self, kinds: &[Index], op: &Op) -> Result<(), SimtError> {
        let n = kinds.len();
        let array = self.scalar(op.args[0])?;
        let idx = self.indices(&op.args[1..1 + n])?;
        let elem = self.src.ty(op.args[0]).elem().compute();
        // The value of `transpose(t)` that is only stored: `t`, stored with the roles of the
        // slice dimensions swapped (`transpose.rs`).
        let (value, swap) = match self.stored_t.get(&op.args[1 + n]) {
            Some(t) => (self.get(*t)?, true),
            None => (self.get(op.args[1 + n])?, false),
        };
        // A masked store: each register's store index is -1 (out of bounds: skipped) where
        // the mask's register, in the same layout, is false.
        let (kind, mask) = match op.kind {
            OpKind::StoreMasked(_) => (OpKind::Store(Vec::new()), Some(self.get(op.args[2 + n])?)),
            _ => (op.kind.clone(), None),
        };
        let slices: Vec<(usize, u32)> = kinds
            .iter()
            .enumerate()
            .filter_map(|(d, k)| if let Index::Slice(n) = k { Some((d, *n)) } else { None })
            .collect();
        let zero = self.i32c(0);
        let lane0 = self.cmp(CmpOp::Eq, self.lane, zero);
        match (slices.len(), value) {
            (0, Lv::Scalar(x)) => {
                // Every lane holds the value: lane 0 stores it (in a scatter's map, the
                // element's owner).
                let mut ix = idx.clone();
                let who = self.owner.unwrap_or(lane0);
                ix[0] = self.masked(who, idx[0]);
                self.access(&kind, array, ix, Some(x), elem, None);
            }
            (1, Lv::Dist { n, regs, .. }) => {
                // A distributed vector: each lane stores its own elements.
                let d = slices[0].0;
                for (s, r) in regs.iter().enumerate() {
                    let keep = match &mask {
                        Some(m) => Some(Self::dist_regs(m)?.2[s]),
                        None => None,
                    };
                    let ix = self.dist_index(&idx, d, s as u32, n, keep);
                    self.access(&kind, array, ix, Some(*r), elem, None);
                }
            }
            (1, Lv::Vec { rep, .. }) => {
                // Element i is stored by lane i % lanes.
                let (d, len) = slices[0];
                for i in 0..len {
                    let owner = self.i32c((i % self.lanes) as i64);
                    let mine = self.cmp(CmpOp::Eq, self.lane, owner);
                    let off = self.i32c(i as i64);
                    let at = self.bin(BinOp::Add, idx[d], off, Scalar::I32);
                    let mut ix = idx.clone();
                    ix[d] = self.masked(mine, at);
                    if let Some(Lv::Vec { rep: m, .. }) = &mask {
                        ix[d] = self.masked(m[i as usize], ix[d]);
                    }
                    self.access(&kind, array, ix, Some(rep[i as usize]), elem, None);
                }
            }
            (2, Lv::Mat { rows, cols, regs, .. }) => {
                let ((d1, _), (d2, _)) = (slices[0], slices[1]);
                let (d1, d2) = if swap { (d2, d1) } else { (d1, d2) };
                for s in 0..self.slots(rows) {
                    let valid = self.row_lt(s, rows as i64);
                    let r = self.bin(BinOp::Add, idx[d1], self.rows[s as usize], Scalar::I32);
                    let r = self.masked(valid, r);
                    for c in 0..cols {
                        let off = self.i32c(c as i64);
                        let mut ix = idx.clone();
                        ix[d1] = r;
                        ix[d2] = self.bin(BinOp::Add, idx[d2], off, Scalar::I32);
                        let k = (s * cols + c) as usize;
                        if let Some(Lv::Mat { regs: m, .. }) = &mask {
                            ix[d1] = self.masked(m[k], ix[d1]);
                        }
                        self.access(&kind, array, ix, Some(regs[k]), elem, None);
                    }
                }
            }
            _ => return Err(err("store value does not match its slice")),
        }
        // Barrier insertion: lanes write a tile at their own rows and the program may read any
        // row later (potrf stores a tile, then loads its columns into every lane), so every
        // tile store to an array, global or shared, is followed by a barrier. Shuffles order
        // execution, not memory.
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(())
    }

    /// An atomic read-modify-write of one element (`AtomicRmw`), made once: by lane 0 for a
    /// uniform element, by the owner in a scatter's map (`map_op`). Every lane that holds the
    /// element gets the old value: shuffled from the lane that made the update, or the
    /// owner's own where only it holds the element.
    pub(super) fn rmw(&mut self, k: Rmw, op: &Op) -> Result<Lv, SimtError> {
        let mut args = op.args.iter().map(|a| self.scalar(*a)).collect::<Result<Vec<_>, _>>()?;
        let elem = self.src.ty(op.results[0]).elem();
        let zero = self.i32c(0);
        let (who, from) = match self.owner {
            Some(o) => (o, self.owner_lane),
            None => (self.cmp(CmpOp::Eq, self.lane, zero), Some(zero)),
        };
        args[1] = self.masked(who, args[1]);
        let old = self.emit1(OpKind::AtomicRmw(k), args, Type::Scalar(elem));
        // As after a store: other lanes may read the element next.
        self.emit(OpKind::Barrier, vec![], vec![]);
        Ok(Lv::Scalar(match from {
            Some(l) => self.shuffle_from(old, l, elem),
            None => old,
        }))
    }

    /// Sum (max, min, product) over the lanes of a per-lane value: the result is uniform.
    /// With a power-of-two lane count, a butterfly: at step `d = 1, 2, 4, ..` every lane
    /// combines its value with lane `lane ^ d`'s (log2(lanes) shuffles; partners combine the
    /// same two values, and these operations are commutative, so every lane ends with the
    /// same bits); otherwise the lanes' values broadcast and combined in lane order.
    pub(super) fn across_lanes(&mut self, k: Reduce, p: Value, elem: Scalar) -> Value {
        if self.lanes.is_power_of_two() {
            let mut acc = p;
            for partner in self.partners.clone() {
                let y = self.shuffle_from(acc, partner, elem);
                acc = self.bin(reduce_op(k), acc, y, elem);
            }
            return acc;
        }
        let mut acc = self.shuffle(p, 0, elem);
        for l in 1..self.lanes {
            let x = self.shuffle(p, l, elem);
            acc = self.bin(reduce_op(k), acc, x, elem);
        }
        acc
    }

    /// The elements `xs` (every lane holds them all) combined in index order.
    fn in_index_order(&mut self, k: Reduce, elem: Scalar, xs: &[Value]) -> Value {
        xs[1..].iter().fold(xs[0], |acc, x| self.bin(reduce_op(k), acc, *x, elem))
    }

    fn reduce(&mut self, k: Reduce, axis: Option<u8>, t: Lv) -> Result<Lv, SimtError> {
        match (t, axis) {
            // A float sum or product of a short vector in index order, as on a replicated one
            // (`dist.rs`, `needs_replicated`); the others combine the lanes' partials.
            (Lv::Dist { n, elem, regs }, None)
                if n <= super::dist::DIST_ABOVE && elem.is_float() && matches!(k, Reduce::Sum | Reduce::Prod) =>
            {
                let rep = self.rep_from_dist(n, elem, &regs);
                Ok(Lv::Scalar(self.in_index_order(k, elem, &rep)))
            }
            (Lv::Dist { n, elem, regs }, None) => Ok(Lv::Scalar(self.reduce_dist(k, n, elem, &regs))),
            (Lv::Vec { elem, rep, .. }, None) => Ok(Lv::Scalar(self.in_index_order(k, elem, &rep))),
            (Lv::Mat { rows, cols, elem, regs }, axis) => {
                let id = self.elemc(identity(k, elem), elem);
                let slots = self.slots(rows);
                let masked: Vec<Value> = {
                    let mut m = Vec::new();
                    for s in 0..slots {
                        let valid = self.row_lt(s, rows as i64);
                        for c in 0..cols {
                            m.push(self.select(valid, regs[(s * cols + c) as usize], id, elem));
                        }
                    }
                    m
                };
                match axis {
                    None => {
                        let mut p = masked[0];
                        for x in &masked[1..] {
                            p = self.bin(reduce_op(k), p, *x, elem);
                        }
                        Ok(Lv::Scalar(self.across_lanes(k, p, elem)))
                    }
                    Some(1) => {
                        // Along the columns of each row: local to the lane.
                        let mut dist = Vec::new();
                        for s in 0..slots {
                            let mut p = regs[(s * cols) as usize];
                            for c in 1..cols {
                                p = self.bin(reduce_op(k), p, regs[(s * cols + c) as usize], elem);
                            }
                            dist.push(p);
                        }
                        if self.is_dist(rows) {
                            return Ok(Lv::Dist { n: rows, elem, regs: dist });
                        }
                        Ok(self.vec_from_dist(rows, elem, dist))
                    }
                    _ => {
                        // Down the rows of each column: across lanes.
                        let mut rep = Vec::new();
                        for c in 0..cols {
                            let mut p = masked[c as usize];
                            for s in 1..slots {
                                p = self.bin(reduce_op(k), p, masked[(s * cols + c) as usize], elem);
                            }
                            rep.push(self.across_lanes(k, p, elem));
                        }
                        Ok(Lv::Vec { n: cols, elem, rep, dist: None })
                    }
                }
            }
            _ => Err(err("reduction of a non-tile")),
        }
    }

    /// The inclusive scan of a tile, in index order as on the CPU. Along a row (axis 1, or a
    /// replicated vector) a lane-local chain over its registers; down the columns (axis 0) each
    /// row's value is broadcast from its lane in turn, combined into a running result that all
    /// lanes hold, and kept by the row's owner (rows x cols shuffles).
    fn scan(&mut self, k: Reduce, axis: u8, t: Lv) -> Result<Lv, SimtError> {
        let op = reduce_op(k);
        match t {
            Lv::Vec { n, elem, rep, .. } => {
                let mut out: Vec<Value> = Vec::with_capacity(rep.len());
                for x in rep {
                    let y = match out.last() {
                        Some(a) => self.bin(op, *a, x, elem),
                        None => x,
                    };
                    out.push(y);
                }
                Ok(Lv::Vec { n, elem, rep: out, dist: None })
            }
            // A distributed vector is a one-column matrix: scanned down its column.
            Lv::Dist { n, elem, regs } => match self.scan(k, 0, Lv::Mat { rows: n, cols: 1, elem, regs })? {
                Lv::Mat { regs, .. } => Ok(Lv::Dist { n, elem, regs }),
                _ => Err(err("scan of a distributed vector")),
            },
            Lv::Mat { rows, cols, elem, regs } if axis == 1 => {
                let mut out = regs.clone();
                for s in 0..self.slots(rows) {
                    for c in 1..cols {
                        let i = (s * cols + c) as usize;
                        out[i] = self.bin(op, out[i - 1], regs[i], elem);
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs: out })
            }
            Lv::Mat { rows, cols, elem, regs } => {
                let mut out = regs.clone();
                for c in 0..cols {
                    let mut acc: Option<Value> = None;
                    for r in 0..rows {
                        let (s, l) = (r / self.lanes, r % self.lanes);
                        let i = (s * cols + c) as usize;
                        let x = self.shuffle(regs[i], l, elem);
                        let a = match acc {
                            Some(a) => self.bin(op, a, x, elem),
                            None => x,
                        };
                        acc = Some(a);
                        let owner = self.i32c(l as i64);
                        let mine = self.cmp(CmpOp::Eq, self.lane, owner);
                        out[i] = self.select(mine, a, out[i], elem);
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs: out })
            }
            _ => Err(err("scan of a non-tile")),
        }
    }

    /// `0 <= i < n` for a uniform index `i`.
    pub(super) fn in_range(&mut self, i: Value, n: u32) -> Value {
        let zero = self.i32c(0);
        let nn = self.i32c(n as i64);
        let ge = self.cmp(CmpOp::Ge, i, zero);
        let lt = self.cmp(CmpOp::Lt, i, nn);
        self.bin(BinOp::And, ge, lt, Scalar::Bool)
    }

    fn extract(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let t = self.get(op.args[0])?;
        let idx = self.indices(&op.args[1..])?;
        match t {
            Lv::Dist { n, elem, regs } => Ok(Lv::Scalar(self.extract_dist(n, elem, &regs, idx[0]))),
            Lv::Vec { n, elem, rep, .. } => {
                let zero = self.elemc(0.0, elem);
                let mut x = zero;
                for (k, r) in rep.iter().enumerate() {
                    let kc = self.i32c(k as i64);
                    let is = self.cmp(CmpOp::Eq, idx[0], kc);
                    x = self.select(is, *r, x, elem);
                }
                let ok = self.in_range(idx[0], n);
                Ok(Lv::Scalar(self.select(ok, x, zero, elem)))
            }
            Lv::Mat { rows, cols, elem, regs } => {
                let (i, j) = (idx[0], idx[1]);
                let lanes = self.i32c(self.lanes as i64);
                let slot = self.bin(BinOp::Div, i, lanes, Scalar::I32);
                let src = self.bin(BinOp::Rem, i, lanes, Scalar::I32);
                let zero = self.elemc(0.0, elem);
                let mut x = zero;
                for s in 0..self.slots(rows) {
                    let sc = self.i32c(s as i64);
                    let at_s = self.cmp(CmpOp::Eq, slot, sc);
                    for c in 0..cols {
                        let cc = self.i32c(c as i64);
                        let at_c = self.cmp(CmpOp::Eq, j, cc);
                        let here = self.bin(BinOp::And, at_s, at_c, Scalar::Bool);
                        x = self.select(here, regs[(s * cols + c) as usize], x, elem);
                    }
                }
                let ri = self.in_range(i, rows);
                let rj = self.in_range(j, cols);
                let ok = self.bin(BinOp::And, ri, rj, Scalar::Bool);
                let z = self.i32c(0);
                let src = self.select(ok, src, z, Scalar::I32);
                let y = self.shuffle_from(x, src, elem);
                Ok(Lv::Scalar(self.select(ok, y, zero, elem)))
            }
            _ => Err(err("element of a non-tile")),
        }
    }

    fn insert(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let t = self.get(op.args[0])?;
        let n = op.args.len();
        let idx = self.indices(&op.args[1..n - 1])?;
        let x = self.scalar(op.args[n - 1])?;
        match t {
            Lv::Dist { n, elem, regs } => Ok(self.insert_dist(n, elem, &regs, idx[0], x)),
            Lv::Vec { n, elem, rep, .. } => {
                let mut out = Vec::new();
                for (k, r) in rep.iter().enumerate() {
                    let kc = self.i32c(k as i64);
                    let is = self.cmp(CmpOp::Eq, idx[0], kc);
                    out.push(self.select(is, x, *r, elem));
                }
                Ok(Lv::Vec { n, elem, rep: out, dist: None })
            }
            Lv::Mat { rows, cols, elem, regs } => {
                let mut out = Vec::new();
                for s in 0..self.slots(rows) {
                    let at_r = self.cmp(CmpOp::Eq, self.rows[s as usize], idx[0]);
                    for c in 0..cols {
                        let cc = self.i32c(c as i64);
                        let at_c = self.cmp(CmpOp::Eq, idx[1], cc);
                        let here = self.bin(BinOp::And, at_r, at_c, Scalar::Bool);
                        out.push(self.select(here, x, regs[(s * cols + c) as usize], elem));
                    }
                }
                Ok(Lv::Mat { rows, cols, elem, regs: out })
            }
            _ => Err(err("element of a non-tile")),
        }
    }

    /// `map(f, t)`: the region, inlined once per register.
    fn map_op(&mut self, op: &Op) -> Result<Lv, SimtError> {
        let r = &op.regions[0];
        let out_elem = self.src.ty(op.results[0]).elem();
        // The operands' registers, position by position (one layout for one shape).
        let mut regs: Vec<Vec<Value>> = Vec::new();
        let mut shape = None;
        let mut dist = false;
        for a in &op.args {
            match self.get(*a)? {
                Lv::Mat { rows, cols, regs: rs, .. } => {
                    shape = Some((rows, cols, true));
                    regs.push(rs);
                }
                Lv::Vec { n, rep, .. } => {
                    shape = Some((n, 0, false));
                    regs.push(rep);
                }
                Lv::Dist { n, regs: rs, .. } => {
                    shape = Some((n, 0, false));
                    dist = true;
                    regs.push(rs);
                }
                _ => return Err(err("map of a non-tile")),
            }
        }
        let Some((rows, cols, mat)) = shape else {
            return Err(err("map without operands"));
        };
        let mut out = Vec::new();
        // A scatter's stores are made once per element, by the lane that holds it: for a
        // matrix or a distributed vector the lane whose row slot is real, for a replicated
        // vector lane `k % lanes`.
        let stores = op.has_effect();
        for k in 0..regs[0].len() {
            for (p, rs) in r.params.iter().zip(&regs) {
                let x = *rs.get(k).ok_or_else(|| err("map operands of different layouts"))?;
                self.map.insert(*p, Lv::Scalar(x));
            }
            if stores {
                let k = k as u32;
                self.owner = Some(if mat {
                    self.row_lt(k / cols, rows as i64)
                } else if dist {
                    self.row_lt(k, rows as i64)
                } else {
                    let l = self.i32c((k % self.lanes) as i64);
                    self.owner_lane = Some(l);
                    self.cmp(CmpOp::Eq, self.lane, l)
                });
            }
            let mut shared = 0;
            let ys = self.region_ops(r, &mut shared);
            (self.owner, self.owner_lane) = (None, None);
            match ys? {
                Some(ys) => out.push(ys[0]),
                None => return Err(err("`map` region does not yield")),
            }
        }
        Ok(if mat {
            Lv::Mat { rows, cols, elem: out_elem, regs: out }
        } else if dist {
            Lv::Dist { n: rows, elem: out_elem, regs: out }
        } else {
            Lv::Vec { n: rows, elem: out_elem, rep: out, dist: None }
        })
    }
}
