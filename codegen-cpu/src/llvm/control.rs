//! Structured control flow as LLVM blocks, and the dispatch of every operation. Values carried
//! by loops and ifs live in `alloca`s (one per result: a scalar slot or a tile's storage), which
//! LLVM's `mem2reg`/SROA turn into phis of registers; `map` regions run in a loop over the
//! tile's elements.

use super::views::Strided;
use super::{be, err, Gen, Held};
use crate::CodegenError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;
use std::collections::HashMap;
use tilec_midend::{Op, OpKind, Region, Type, Value};

/// Where a carried value lives across a loop or an if.
#[derive(Clone, Copy)]
pub(crate) enum Carried<'ctx> {
    Scalar(PointerValue<'ctx>, BasicTypeEnum<'ctx>),
    Tile(PointerValue<'ctx>, u32),
}

impl<'ctx> Gen<'ctx, '_> {
    pub(crate) fn region(&mut self, r: &Region) -> Result<(), CodegenError> {
        let mut i = 0;
        while i < r.ops.len() {
            self.note_lendable(r, i);
            i += self.op_or_fused(&r.ops[i..]).map_err(|e| e.at(r.ops[i].loc))?;
        }
        Ok(())
    }

    /// Before an `if` or a loop at `r.ops[i]`: the values of `r` (its parameters and the
    /// results of the ops before it) that no later op of `r` reads, for `carried_if` and
    /// `carried_from`. A value made outside `r` is never among them: `r` may run again (a loop
    /// body) and read it again.
    fn note_lendable(&mut self, r: &Region, i: usize) {
        if !matches!(r.ops[i].kind, OpKind::If | OpKind::For | OpKind::While) {
            return;
        }
        let mut later = HashMap::new();
        for op in &r.ops[i + 1..] {
            for a in &op.args {
                *later.entry(*a).or_insert(0) += 1;
            }
            for reg in &op.regions {
                reg.count_uses(&mut later);
            }
        }
        let defined = r.params.iter().chain(r.ops[..i].iter().flat_map(|o| o.results.iter()));
        self.lendable = defined.filter(|v| !later.contains_key(*v)).copied().collect();
    }

    /// Lowers a region that ends in `Yield` (or `Return`); returns the yielded values.
    pub(crate) fn region_yield(&mut self, r: &Region) -> Result<Option<Vec<Value>>, CodegenError> {
        let mut i = 0;
        while i < r.ops.len() {
            if r.ops[i].kind == OpKind::Yield {
                return Ok(Some(r.ops[i].args.clone()));
            }
            self.note_lendable(r, i);
            i += self.op_or_fused(&r.ops[i..])?;
        }
        Ok(None)
    }

    /// Lowers `ops[0]`, or `ops[0]` and `ops[1]` together when they are `t - a @ b`
    /// (`tilec_midend::fusion`); returns how many ops it took.
    fn op_or_fused(&mut self, ops: &[Op]) -> Result<usize, CodegenError> {
        if let [mm, sub, ..] = ops {
            if tilec_midend::fusion::is_matmul_sub(self.f, &self.uses, mm, sub) {
                self.matmul_sub(mm, sub)?;
                return Ok(2);
            }
        }
        self.op(&ops[0])?;
        Ok(1)
    }

    fn op(&mut self, op: &Op) -> Result<(), CodegenError> {
        match &op.kind {
            OpKind::For => self.for_loop(op),
            OpKind::While => self.while_loop(op),
            OpKind::If => self.if_op(op),
            OpKind::Return => {
                if let Some((grid, flops)) = self.results {
                    if op.args.len() != 4 {
                        return Err(err("a launch function returns the grid and the flops"));
                    }
                    for (i, a) in op.args.iter().enumerate() {
                        let x = self.val(*a)?;
                        let p = if i < 3 {
                            let i64t = self.cx.i64_type();
                            // SAFETY (LLVM semantics): `grid` has three elements.
                            unsafe { self.b.build_in_bounds_gep(i64t, grid, &[self.i64c(i as i64)], "") }.map_err(be)?
                        } else {
                            flops
                        };
                        self.b.build_store(p, x).map_err(be)?;
                    }
                }
                self.b.build_unconditional_branch(self.exit).map_err(be)?;
                self.fresh_block();
                Ok(())
            }
            OpKind::Yield => Err(err("yield outside a structured region")),
            // Programs run on one thread each on the CPU: shared arrays need no barrier.
            OpKind::Barrier => Ok(()),
            OpKind::Call(_) => Err(err("calls must be inlined before CPU code generation")),
            OpKind::Map => self.map(op),
            OpKind::AtomicRmw(k) => {
                let v = self.rmw_scalar(op, *k)?;
                self.held.insert(op.results[0], super::Held::Val(v));
                Ok(())
            }
            OpKind::Load(_)
            | OpKind::LoadInto(_)
            | OpKind::Store(_)
            | OpKind::AtomicAdd(_)
            | OpKind::StoreMasked(_)
            | OpKind::AllocShared(_) => self.memory_op(op),
            _ if op.results.iter().any(|r| self.f.ty(*r).is_tile()) => self.tile_op(op),
            _ => self.scalar_op(op),
        }
    }

    /// After a terminator, continues in a fresh (unreachable) block.
    fn fresh_block(&mut self) {
        let b = self.cx.append_basic_block(self.func, "");
        self.b.position_at_end(b);
    }

    pub(crate) fn block(&self) -> inkwell::basic_block::BasicBlock<'ctx> {
        self.cx.append_basic_block(self.func, "")
    }

    /// Storage for the results of a loop whose initial values are `inits`: a tile init that
    /// the loop is the only user of, made in the loop's own region (`note_lendable`; a tile
    /// made outside it is read again when that region runs again), lends its own storage, so
    /// entering the loop copies nothing and a loop nested in another, carrying the outer
    /// loop's tile, works in the outer loop's storage; other results get fresh storage
    /// (`carried`).
    fn carried_from(&mut self, results: &[Value], inits: &[Value]) -> Result<Vec<Carried<'ctx>>, CodegenError> {
        let mut carried = self.carried(results)?;
        for (k, init) in inits.iter().enumerate() {
            let Some(Carried::Tile(ptr, _)) = carried.get_mut(k) else { continue };
            let only_here = self.uses.get(init) == Some(&1)
                && inits.iter().filter(|i| *i == init).count() == 1
                && self.lendable.contains(init);
            if let (true, Some(Held::Tile(p))) = (only_here, self.held.get(init)) {
                *ptr = *p;
            }
        }
        Ok(carried)
    }

    /// Storage for the results of an if: a tile that one branch yields unchanged, that no
    /// other result yields and that nothing reads after the if (`note_lendable`: made in the
    /// if's own region, which does not read it after the if) lends its storage to that
    /// result (and is returned at its position in the second vector), so the branch that yields it
    /// copies nothing and the other computes its value there, in place where
    /// `in_place_results` allows (`if d != 0.0 { a[:, k] = l; a = a - outer(l, u); }`);
    /// other results get fresh storage. A tile made outside the if is the only kind that is
    /// held before its branches are lowered.
    fn carried_if(&mut self, op: &Op) -> Result<(Vec<Carried<'ctx>>, Vec<Option<Value>>), CodegenError> {
        let mut carried = self.carried(&op.results)?;
        let mut lent = vec![None; op.results.len()];
        let yields: Vec<&[Value]> = op
            .regions
            .iter()
            .filter_map(|r| r.ops.last().filter(|o| o.kind == OpKind::Yield).map(|o| o.args.as_slice()))
            .collect();
        for (k, c) in carried.iter_mut().enumerate() {
            let Carried::Tile(ptr, _) = c else { continue };
            let outer: Vec<Value> =
                yields.iter().map(|y| y[k]).filter(|v| matches!(self.held.get(v), Some(Held::Tile(_)))).collect();
            let [x] = outer[..] else { continue };
            let yielded_once = yields.iter().flat_map(|y| y.iter()).filter(|v| **v == x).count() == 1;
            let dies_here = self.lendable.contains(&x);
            if let (true, true, Some(Held::Tile(p))) = (yielded_once, dies_here, self.held.get(&x)) {
                *ptr = *p;
                lent[k] = Some(x);
            }
        }
        Ok((carried, lent))
    }

    /// Storage for the results of a loop or an if.
    fn carried(&mut self, results: &[Value]) -> Result<Vec<Carried<'ctx>>, CodegenError> {
        results
            .iter()
            .map(|r| match self.f.ty(*r) {
                Type::Tile { .. } => {
                    let t = self.f.ty(*r);
                    Ok(Carried::Tile(self.alloca(t.elem(), t.tile_len())?, t.tile_len() * t.elem().bytes()))
                }
                t => {
                    let ty = self.ty(t.elem());
                    Ok(Carried::Scalar(self.allocas.build_alloca(ty, "").map_err(be)?, ty))
                }
            })
            .collect()
    }

    /// Lets the tiles that the body `r` yields be computed in their carried storage, so that
    /// the yield copies nothing: a value yielded at position `k` and used nowhere else, made
    /// from the carried tile `params[k]` by a chain of ops of `r`, each of which reads the
    /// previous link (which nothing else reads, but for element, line and block reads before
    /// that op) and writes each element of its result only after reading that element:
    /// `matmul_acc` and `rank1` into their accumulator, an elementwise binary op of two
    /// same-shaped tiles (a fused `t - a @ b` too), a `map` of operands of its result's type
    /// (`acc += A[i, j0:j0+1024] * y`), and element and line inserts. The
    /// loop-carried products of potrf and the trsm kernels, loops that rewrite a tile row by row
    /// (`for i in 0..32 { t[i, :] = t[i, :] * 2.0; }`), and rotations that rewrite two rows
    /// and two columns (`syevj_batched`: four line inserts in a row).
    ///
    /// Sound because no other value of the body names the carried storage: tile storage is
    /// only handed out by `new_tile` (fresh, or this map) and `bind_carried`, and each link is
    /// dead once the next op has read it. An op that made its result a view of an operand's
    /// storage would break the "nothing else reads it" count.
    fn in_place_results(&mut self, r: &Region, params: &[Option<Value>], carried: &[Carried<'ctx>]) {
        let Some(y) = r.ops.last().filter(|o| o.kind == OpKind::Yield) else { return };
        // Uses within `r`: a loop's carried tile is used only in its body; an if's lent tile
        // (`carried_if`) may also be read by the other branch, which never runs with this one.
        let mut local = HashMap::new();
        r.count_uses(&mut local);
        for ((&v, &param), c) in y.args.iter().zip(params).zip(carried) {
            let (Carried::Tile(ptr, _), Some(param)) = (c, param) else { continue };
            if v == param || self.uses.get(&v) != Some(&1) {
                continue;
            }
            let mut chain = vec![v];
            let mut cur = v;
            let complete = loop {
                let Some(at) = r.ops.iter().position(|o| o.results.first() == Some(&cur)) else { break false };
                let links = self.in_place_links(r, at, &local);
                // The carried tile itself, else an operand made in `r` to follow further.
                let prev = links
                    .iter()
                    .find(|l| **l == param)
                    .or_else(|| links.iter().find(|l| r.ops.iter().any(|o| o.results.first() == Some(*l))));
                let Some(&prev) = prev else { break false };
                if prev == param {
                    break true;
                }
                chain.push(prev);
                cur = prev;
            };
            if complete {
                for link in chain {
                    self.in_place.insert(link, *ptr);
                }
            }
        }
    }

    /// The operands that op `r.ops[at]` may overwrite with its result (`in_place_results`):
    /// ones it reads in an order that allows it, and that nothing else reads but element,
    /// line and block reads before `at`.
    fn in_place_links(&self, r: &Region, at: usize, local: &HashMap<Value, usize>) -> Vec<Value> {
        let op = &r.ops[at];
        let Some(&v) = op.results.first() else { return vec![] };
        let candidates: Vec<Value> = match op.kind {
            OpKind::MatmulAcc | OpKind::Rank1(_) | OpKind::Insert | OpKind::InsertLine(_) => vec![op.args[0]],
            OpKind::Bin(_) if op.args.iter().all(|a| self.f.ty(*a) == self.f.ty(v)) => op.args.clone(),
            // A map reads element `i` of each operand before it writes element `i`.
            OpKind::Map => op.args.iter().copied().filter(|a| self.f.ty(*a) == self.f.ty(v)).collect(),
            _ => vec![],
        };
        candidates
            .into_iter()
            .filter(|&src| {
                let copies = r.ops[..at]
                    .iter()
                    .filter(|o| o.args.contains(&src))
                    .map(|o| {
                        let copy = matches!(o.kind, OpKind::Extract | OpKind::ExtractLine(_) | OpKind::ExtractBlock(_));
                        copy.then(|| o.args.iter().filter(|a| **a == src).count())
                    })
                    .sum::<Option<usize>>();
                let reads = op.args.iter().filter(|a| **a == src).count();
                let once = reads == 1 || matches!(op.kind, OpKind::Bin(_) | OpKind::Map);
                once && copies.map(|c| c + reads) == local.get(&src).copied()
            })
            .collect()
    }

    /// Stores the yielded `vals` into the carried storage, staging tiles through temporaries
    /// when a source is another carried value's storage.
    fn yield_to(&mut self, vals: &[Value], targets: &[Carried<'ctx>]) -> Result<(), CodegenError> {
        let mut moves = Vec::new();
        for (v, t) in vals.iter().zip(targets) {
            match t {
                Carried::Scalar(p, _) => {
                    let x = self.val(*v)?;
                    self.b.build_store(*p, x).map_err(be)?;
                }
                Carried::Tile(dst, bytes) => {
                    let src = self.tile(*v)?;
                    if src != *dst {
                        moves.push((src, *dst, *bytes));
                    }
                }
            }
        }
        let conflict = moves.iter().any(|(src, _, _)| moves.iter().any(|(_, d, _)| d == src));
        if conflict {
            let mut staged = Vec::new();
            for (src, dst, bytes) in &moves {
                let tmp = self.alloca(tilec_midend::Scalar::I32, bytes.div_ceil(4))?;
                self.copy(tmp, *src, *bytes)?;
                staged.push((tmp, *dst, *bytes));
            }
            moves = staged;
        }
        for (src, dst, bytes) in moves {
            self.copy(dst, src, bytes)?;
        }
        Ok(())
    }

    /// `bytes` bytes from `src` to `dst` (tile storage, 64-byte aligned).
    pub(crate) fn copy(
        &self,
        dst: PointerValue<'ctx>,
        src: PointerValue<'ctx>,
        bytes: u32,
    ) -> Result<(), CodegenError> {
        self.b.build_memcpy(dst, 64, src, 64, self.i64c(bytes as i64)).map_err(be)?;
        Ok(())
    }

    fn bind_carried(&mut self, params: &[Value], carried: &[Carried<'ctx>]) -> Result<(), CodegenError> {
        for (p, c) in params.iter().zip(carried) {
            let h = match c {
                Carried::Scalar(ptr, ty) => Held::Val(self.b.build_load(*ty, *ptr, "").map_err(be)?),
                Carried::Tile(ptr, _) => Held::Tile(*ptr),
            };
            self.held.insert(*p, h);
        }
        Ok(())
    }

    fn for_loop(&mut self, op: &Op) -> Result<(), CodegenError> {
        let (lo, hi, step) = (self.val(op.args[0])?, self.val(op.args[1])?, self.val(op.args[2])?);
        let carried = self.carried_from(&op.results, &op.args[3..])?;
        self.yield_to(&op.args[3..], &carried)?;
        let ity = lo.get_type();
        let iv = self.allocas.build_alloca(ity, "").map_err(be)?;
        self.b.build_store(iv, lo).map_err(be)?;
        let (header, body, exit) = (self.block(), self.block(), self.block());
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(header);
        let i = self.b.build_load(ity, iv, "").map_err(be)?.into_int_value();
        let c = self.b.build_int_compare(IntPredicate::SLT, i, hi.into_int_value(), "").map_err(be)?;
        self.b.build_conditional_branch(c, body, exit).map_err(be)?;
        self.b.position_at_end(body);
        let r = &op.regions[0];
        self.held.insert(r.params[0], Held::Val(i.into()));
        self.bind_carried(&r.params[1..], &carried)?;
        let params: Vec<Option<Value>> = r.params[1..].iter().copied().map(Some).collect();
        self.in_place_results(r, &params, &carried);
        if let Some(ys) = self.region_yield(r)? {
            self.yield_to(&ys, &carried)?;
        }
        let next = self.b.build_int_add(i, step.into_int_value(), "").map_err(be)?;
        self.b.build_store(iv, next).map_err(be)?;
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(exit);
        self.bind_carried(&op.results, &carried)
    }

    fn while_loop(&mut self, op: &Op) -> Result<(), CodegenError> {
        let carried = self.carried_from(&op.results, &op.args)?;
        self.yield_to(&op.args, &carried)?;
        let (header, body, exit) = (self.block(), self.block(), self.block());
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(header);
        self.bind_carried(&op.regions[0].params, &carried)?;
        match self.region_yield(&op.regions[0])? {
            Some(c) => {
                let c = self.val(c[0])?.into_int_value();
                self.b.build_conditional_branch(c, body, exit).map_err(be)?;
            }
            None => {
                self.b.build_unconditional_branch(exit).map_err(be)?;
            }
        }
        self.b.position_at_end(body);
        self.bind_carried(&op.regions[1].params, &carried)?;
        if let Some(ys) = self.region_yield(&op.regions[1])? {
            self.yield_to(&ys, &carried)?;
        }
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(exit);
        self.bind_carried(&op.results, &carried)
    }

    fn if_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let c = self.val(op.args[0])?.into_int_value();
        let (carried, lent) = self.carried_if(op)?;
        let (then, els, merge) = (self.block(), self.block(), self.block());
        self.b.build_conditional_branch(c, then, els).map_err(be)?;
        for (blk, r) in [(then, &op.regions[0]), (els, &op.regions[1])] {
            self.b.position_at_end(blk);
            self.in_place_results(r, &lent, &carried);
            if let Some(ys) = self.region_yield(r)? {
                self.yield_to(&ys, &carried)?;
            }
            self.b.build_unconditional_branch(merge).map_err(be)?;
        }
        self.b.position_at_end(merge);
        self.bind_carried(&op.results, &carried)
    }

    /// A loop `for i in lo..hi` (`i64`) around `body`.
    pub(crate) fn dyn_loop(
        &mut self,
        lo: IntValue<'ctx>,
        hi: IntValue<'ctx>,
        mut body: impl FnMut(&mut Self, IntValue<'ctx>) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let i64t = self.cx.i64_type();
        let iv = self.allocas.build_alloca(i64t, "").map_err(be)?;
        self.b.build_store(iv, lo).map_err(be)?;
        let (header, blk, exit) = (self.block(), self.block(), self.block());
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(header);
        let i = self.b.build_load(i64t, iv, "").map_err(be)?.into_int_value();
        let c = self.b.build_int_compare(IntPredicate::SLT, i, hi, "").map_err(be)?;
        self.b.build_conditional_branch(c, blk, exit).map_err(be)?;
        self.b.position_at_end(blk);
        body(self, i)?;
        let next = self.b.build_int_add(i, self.i64c(1), "").map_err(be)?;
        self.b.build_store(iv, next).map_err(be)?;
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(exit);
        Ok(())
    }

    /// Runs `body` under `cond`.
    pub(crate) fn guarded(
        &mut self,
        cond: IntValue<'ctx>,
        body: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        self.branches(cond, body, |_| Ok(()))
    }

    /// `if cond { fast } else { slow }`.
    pub(crate) fn branches(
        &mut self,
        cond: IntValue<'ctx>,
        fast: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
        slow: impl FnOnce(&mut Self) -> Result<(), CodegenError>,
    ) -> Result<(), CodegenError> {
        let (yes, no, done) = (self.block(), self.block(), self.block());
        self.b.build_conditional_branch(cond, yes, no).map_err(be)?;
        self.b.position_at_end(yes);
        fast(self)?;
        self.b.build_unconditional_branch(done).map_err(be)?;
        self.b.position_at_end(no);
        slow(self)?;
        self.b.build_unconditional_branch(done).map_err(be)?;
        self.b.position_at_end(done);
        Ok(())
    }

    /// `map`: the region applied to every element, in a loop over the tile. An operand loaded
    /// for the map alone (`tilec_midend::fusion::map_loads`) is read from its array where the
    /// tile lies inside it, else from a copy made behind a branch with the load's rules; the
    /// loop then runs over rows and columns, so that both offsets are consecutive.
    fn map(&mut self, op: &Op) -> Result<(), CodegenError> {
        let t = self.f.ty(op.args[0]).clone();
        let de = self.elem(op.results[0]);
        let (rows, cols) = super::tile::shape(&t);
        let (mut srcs, mut direct_none) = (Vec::new(), 0);
        for a in &op.args {
            let se = self.f.ty(*a).elem();
            match self.pending_view(*a)? {
                Some(view) => srcs.push((view, se)),
                None => {
                    srcs.push((Strided::tile(self, self.tile(*a)?, cols, false), se));
                    direct_none += 1;
                }
            }
        }
        let dst = self.new_tile(op.results[0])?;
        // One run of elements: a row, or tiles all in their own (row-major) storage.
        let flat = rows == 1 || srcs.len() == direct_none;
        if self.map_vectors(op, &srcs, flat, dst, de, rows * cols)? {
            return Ok(());
        }
        let r = &op.regions[0];
        let body = |g: &mut Self,
                    i: IntValue<'ctx>,
                    at: &dyn Fn(&Self, &Strided<'ctx>) -> Result<IntValue<'ctx>, CodegenError>| {
            for ((src, se), p) in srcs.iter().zip(&r.params) {
                let x = g.load_elem(src.ptr, *se, at(g, src)?)?;
                g.held.insert(*p, Held::Val(x));
            }
            let Some(ys) = g.region_yield(r)? else {
                return Err(err("`map` region does not yield"));
            };
            let y = g.val(ys[0])?;
            g.store_elem(dst, de, i, y)
        };
        let zero = self.i64c(0);
        if flat {
            // One loop over the elements (a tile's offset is the element's).
            return self.dyn_loop(zero, self.i64c((rows * cols) as i64), |g, i| body(g, i, &|g, s| s.at(g, zero, i)));
        }
        self.dyn_loop(zero, self.i64c(rows as i64), |g, row| {
            let first = g.b.build_int_mul(row, g.i64c(cols as i64), "").map_err(be)?;
            g.dyn_loop(zero, g.i64c(cols as i64), |g, c| {
                let i = g.b.build_int_add(first, c, "").map_err(be)?;
                body(g, i, &|g, s| s.at(g, row, c))
            })
        })
    }
}
