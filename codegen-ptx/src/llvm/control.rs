//! Structured control flow as LLVM basic blocks: loops with a header of phis (incoming values
//! from the preheader and, once the body is emitted, from the latch), ifs with phis at the
//! merge.

use super::{be, err, Gen, Held};
use crate::PtxError;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{BasicValue, BasicValueEnum, PhiValue};
use inkwell::IntPredicate;
use tilec_midend::{Op, OpKind, Region, Value};

impl<'ctx> Gen<'ctx, '_> {
    fn block(&self, name: &str) -> BasicBlock<'ctx> {
        self.cx.append_basic_block(self.f, name)
    }

    fn current(&self) -> Result<BasicBlock<'ctx>, PtxError> {
        self.b.get_insert_block().ok_or_else(|| err("no insertion block"))
    }

    /// Emits a region ending in `yield` (the yielded values) or `return` (None).
    fn region_yield(&mut self, r: &Region) -> Result<Option<Vec<BasicValueEnum<'ctx>>>, PtxError> {
        let n = r.ops.len();
        let (body, last) = match r.ops.last() {
            Some(op) if op.kind == OpKind::Yield => (&r.ops[..n - 1], Some(op)),
            _ => (&r.ops[..], None),
        };
        if self.region(&Region { params: vec![], ops: body.to_vec() })? {
            return Ok(None);
        }
        match last {
            Some(y) => Ok(Some(y.args.iter().map(|a| self.val(*a)).collect::<Result<_, _>>()?)),
            None => Err(err("a structured region ends without yield")),
        }
    }

    fn phis(&mut self, vals: &[Value], inits: &[BasicValueEnum<'ctx>], pre: BasicBlock<'ctx>) -> Vec<PhiValue<'ctx>> {
        vals.iter()
            .zip(inits)
            .map(|(v, init)| {
                let phi = self.b.build_phi(self.ty(self.elem(*v)), "").expect("positioned");
                phi.add_incoming(&[(init as &dyn BasicValue, pre)]);
                phi
            })
            .collect()
    }

    pub(crate) fn for_loop(&mut self, op: &Op) -> Result<(), PtxError> {
        let (lo, hi, step) = (self.val(op.args[0])?, self.val(op.args[1])?, self.val(op.args[2])?);
        let inits: Vec<_> = op.args[3..].iter().map(|a| self.val(*a)).collect::<Result<_, _>>()?;
        let r = &op.regions[0];
        let pre = self.current()?;
        let (header, body, exit) = (self.block("for"), self.block("body"), self.block("endfor"));
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(header);
        let iv = self.phis(&r.params[..1], &[lo], pre)[0];
        let carried = self.phis(&op.results, &inits, pre);
        self.held.insert(r.params[0], Held::Val(iv.as_basic_value()));
        for (p, ph) in r.params[1..].iter().zip(&carried) {
            self.held.insert(*p, Held::Val(ph.as_basic_value()));
        }
        let c = self
            .b
            .build_int_compare(IntPredicate::SLT, iv.as_basic_value().into_int_value(), hi.into_int_value(), "")
            .map_err(be)?;
        self.b.build_conditional_branch(c, body, exit).map_err(be)?;
        self.b.position_at_end(body);
        if let Some(ys) = self.region_yield(r)? {
            let latch = self.current()?;
            let next =
                self.b.build_int_add(iv.as_basic_value().into_int_value(), step.into_int_value(), "").map_err(be)?;
            iv.add_incoming(&[(&next, latch)]);
            for (ph, y) in carried.iter().zip(&ys) {
                ph.add_incoming(&[(y as &dyn BasicValue, latch)]);
            }
            self.b.build_unconditional_branch(header).map_err(be)?;
        }
        self.b.position_at_end(exit);
        for (res, ph) in op.results.iter().zip(&carried) {
            self.held.insert(*res, Held::Val(ph.as_basic_value()));
        }
        Ok(())
    }

    pub(crate) fn while_loop(&mut self, op: &Op) -> Result<(), PtxError> {
        let inits: Vec<_> = op.args.iter().map(|a| self.val(*a)).collect::<Result<_, _>>()?;
        let pre = self.current()?;
        let (header, body, exit) = (self.block("while"), self.block("body"), self.block("endwhile"));
        self.b.build_unconditional_branch(header).map_err(be)?;
        self.b.position_at_end(header);
        let carried = self.phis(&op.results, &inits, pre);
        for r in &op.regions {
            for (p, ph) in r.params.iter().zip(&carried) {
                self.held.insert(*p, Held::Val(ph.as_basic_value()));
            }
        }
        let c = self.region_yield(&op.regions[0])?.ok_or_else(|| err("return in a while condition"))?;
        self.b.build_conditional_branch(c[0].into_int_value(), body, exit).map_err(be)?;
        self.b.position_at_end(body);
        if let Some(ys) = self.region_yield(&op.regions[1])? {
            let latch = self.current()?;
            for (ph, y) in carried.iter().zip(&ys) {
                ph.add_incoming(&[(y as &dyn BasicValue, latch)]);
            }
            self.b.build_unconditional_branch(header).map_err(be)?;
        }
        self.b.position_at_end(exit);
        for (res, ph) in op.results.iter().zip(&carried) {
            self.held.insert(*res, Held::Val(ph.as_basic_value()));
        }
        Ok(())
    }

    pub(crate) fn if_op(&mut self, op: &Op) -> Result<(), PtxError> {
        let c = self.val(op.args[0])?.into_int_value();
        let (then_b, else_b, merge) = (self.block("then"), self.block("else"), self.block("endif"));
        self.b.build_conditional_branch(c, then_b, else_b).map_err(be)?;
        let mut incoming = Vec::new();
        for (blk, r) in [(then_b, &op.regions[0]), (else_b, &op.regions[1])] {
            self.b.position_at_end(blk);
            if let Some(ys) = self.region_yield(r)? {
                incoming.push((ys, self.current()?));
                self.b.build_unconditional_branch(merge).map_err(be)?;
            }
        }
        self.b.position_at_end(merge);
        if incoming.is_empty() {
            self.b.build_unreachable().map_err(be)?;
            let cont = self.block("dead");
            self.b.position_at_end(cont);
        }
        for (k, res) in op.results.iter().enumerate() {
            let t = self.ty(self.elem(*res));
            let v = if incoming.is_empty() {
                t.const_zero()
            } else {
                let phi = self.b.build_phi(t, "").map_err(be)?;
                for (ys, blk) in &incoming {
                    phi.add_incoming(&[(&ys[k] as &dyn BasicValue, *blk)]);
                }
                phi.as_basic_value()
            };
            self.held.insert(*res, Held::Val(v));
        }
        Ok(())
    }
}
