//! Structured control flow as LLVM blocks, and the dispatch of every operation. Values carried
//! by loops and ifs live in `alloca`s (one per result: a scalar slot or a tile's storage), which
//! LLVM's `mem2reg`/SROA turn into phis of registers; `map` regions run in a loop over the
//! tile's elements.

use super::{be, err, Gen, Held};
use crate::CodegenError;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{IntValue, PointerValue};
use inkwell::IntPredicate;
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
            i += self.op_or_fused(&r.ops[i..]).map_err(|e| e.at(r.ops[i].loc))?;
        }
        Ok(())
    }

    /// Lowers a region that ends in `Yield` (or `Return`); returns the yielded values.
    pub(crate) fn region_yield(&mut self, r: &Region) -> Result<Option<Vec<Value>>, CodegenError> {
        let mut i = 0;
        while i < r.ops.len() {
            if r.ops[i].kind == OpKind::Yield {
                return Ok(Some(r.ops[i].args.clone()));
            }
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
    /// the yield copies nothing: a value yielded at position `k` and used nowhere else, made by
    /// an op of `r` that reads the carried tile `params[k]` (which nothing else reads, but for
    /// element, line and block reads before it) and writes each element of its result only
    /// after reading that element: `matmul_acc` and `rank1` into their accumulator, an
    /// elementwise binary op of two same-shaped tiles (a fused `t - a @ b` too), and element and
    /// line inserts. The loop-carried products of potrf and the trsm kernels, and loops that
    /// rewrite a tile row by row (`for i in 0..32 { t[i, :] = t[i, :] * 2.0; }`).
    ///
    /// Sound because no other value of the body names the carried storage: tile storage is
    /// only handed out by `new_tile` (fresh, or this map) and `bind_carried`. An op that made
    /// its result a view of an operand's storage would break the "nothing else reads it" count.
    fn in_place_results(&mut self, r: &Region, params: &[Value], carried: &[Carried<'ctx>]) {
        let Some(y) = r.ops.last().filter(|o| o.kind == OpKind::Yield) else { return };
        for ((&v, &param), c) in y.args.iter().zip(params).zip(carried) {
            let Carried::Tile(ptr, _) = c else { continue };
            if v == param || self.uses.get(&v) != Some(&1) {
                continue;
            }
            let Some(at) = r.ops.iter().position(|o| o.results.first() == Some(&v)) else { continue };
            let op = &r.ops[at];
            // Other reads of the carried tile: only element, line and block reads before `op`,
            // whose results are copies (`t[i, :] = t[i, :] * 2.0`).
            let copies = r.ops[..at]
                .iter()
                .filter(|o| o.args.contains(&param))
                .map(|o| {
                    let copy = matches!(o.kind, OpKind::Extract | OpKind::ExtractLine(_) | OpKind::ExtractBlock(_));
                    copy.then(|| o.args.iter().filter(|a| **a == param).count())
                })
                .sum::<Option<usize>>();
            let once = op.args.iter().filter(|a| **a == param).count() == 1;
            if copies.map(|n| n + 1) != self.uses.get(&param).copied() || !(once || matches!(op.kind, OpKind::Bin(_))) {
                continue;
            }
            let in_place = match op.kind {
                OpKind::MatmulAcc | OpKind::Rank1(_) | OpKind::Insert | OpKind::InsertLine(_) => op.args[0] == param,
                OpKind::Bin(_) => op.args.contains(&param) && op.args.iter().all(|a| self.f.ty(*a) == self.f.ty(v)),
                _ => false,
            };
            if in_place {
                self.in_place.insert(v, *ptr);
            }
        }
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
        let carried = self.carried(&op.results)?;
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
        self.in_place_results(r, &r.params[1..], &carried);
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
        let carried = self.carried(&op.results)?;
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
        let carried = self.carried(&op.results)?;
        let (then, els, merge) = (self.block(), self.block(), self.block());
        self.b.build_conditional_branch(c, then, els).map_err(be)?;
        for (blk, r) in [(then, &op.regions[0]), (els, &op.regions[1])] {
            self.b.position_at_end(blk);
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

    /// `map`: the region applied to every element, in a loop over the tile.
    fn map(&mut self, op: &Op) -> Result<(), CodegenError> {
        let t = self.f.ty(op.args[0]).clone();
        let de = self.elem(op.results[0]);
        let mut srcs = Vec::new();
        for a in &op.args {
            srcs.push((self.tile(*a)?, self.f.ty(*a).elem()));
        }
        let dst = self.new_tile(op.results[0])?;
        let r = &op.regions[0];
        let (lo, hi) = (self.i64c(0), self.i64c(t.tile_len() as i64));
        self.dyn_loop(lo, hi, |g, i| {
            for ((src, se), p) in srcs.iter().zip(&r.params) {
                let x = g.load_elem(*src, *se, i)?;
                g.held.insert(*p, Held::Val(x));
            }
            let Some(ys) = g.region_yield(r)? else {
                return Err(err("`map` region does not yield"));
            };
            let y = g.val(ys[0])?;
            let _ = de;
            g.store_elem(dst, de, i, y)
        })
    }
}
