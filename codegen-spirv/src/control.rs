//! Structured control flow: `for` and `while` as SPIR-V loops (header with OpPhi for the
//! carried values, OpLoopMerge, a continue block), `if` as a selection with OpPhi at the
//! merge. Carried values reach the header through ids reserved in advance and defined in the
//! continue block (OpCopyObject), so the header can name them before the body is emitted.

use crate::body::be;
use crate::module::{Gen, Held};
use crate::{err, SpirvError};
use rspirv::spirv::{LoopControl, SelectionControl, Word};
use tilec_midend::{Op, Region, Value};

impl Gen<'_> {
    fn begin(&mut self, label: Word) -> Result<(), SpirvError> {
        self.b.begin_block(Some(label)).map_err(be)?;
        self.cur = label;
        Ok(())
    }

    fn vty(&mut self, v: Value) -> Word {
        let s = self.elem(v);
        self.ty(s)
    }

    /// Emits a region that ends in `yield` (returns the yielded ids) or `return` (None).
    fn region_yield(&mut self, r: &Region) -> Result<Option<Vec<Word>>, SpirvError> {
        let n = r.ops.len();
        let (body, last) = match r.ops.last() {
            Some(op) if op.kind == tilec_midend::OpKind::Yield => (&r.ops[..n - 1], Some(op)),
            _ => (&r.ops[..], None),
        };
        let sub = Region { params: vec![], ops: body.to_vec() };
        if self.region(&sub)? {
            return Ok(None);
        }
        match last {
            Some(y) => Ok(Some(y.args.iter().map(|a| self.id(*a)).collect::<Result<_, _>>()?)),
            None => Err(err("a structured region ends without yield")),
        }
    }

    pub(crate) fn for_loop(&mut self, op: &Op) -> Result<(), SpirvError> {
        let (lo, hi, step) = (self.id(op.args[0])?, self.id(op.args[1])?, self.id(op.args[2])?);
        let inits: Vec<Word> = op.args[3..].iter().map(|a| self.id(*a)).collect::<Result<_, _>>()?;
        let r = &op.regions[0];
        let pre = self.cur;
        let (header, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        let iv_next = self.b.id();
        let nexts: Vec<Word> = inits.iter().map(|_| self.b.id()).collect();
        self.b.branch(header).map_err(be)?;
        self.begin(header)?;
        let ity = self.vty(r.params[0]);
        let iv = self.b.phi(ity, None, [(lo, pre), (iv_next, cont)]).map_err(be)?;
        self.held.insert(r.params[0], Held::Id(iv));
        let mut phis = Vec::new();
        for (k, p) in r.params[1..].iter().enumerate() {
            let t = self.vty(*p);
            let ph = self.b.phi(t, None, [(inits[k], pre), (nexts[k], cont)]).map_err(be)?;
            self.held.insert(*p, Held::Id(ph));
            phis.push(ph);
        }
        let tb = self.t_bool;
        let c = self.b.s_less_than(tb, None, iv, hi).map_err(be)?;
        self.b.loop_merge(merge, cont, LoopControl::NONE, []).map_err(be)?;
        self.b.branch_conditional(c, body, merge, []).map_err(be)?;
        self.begin(body)?;
        let ys = self.region_yield(r)?;
        if ys.is_some() {
            self.b.branch(cont).map_err(be)?;
        } else {
            // The body returned: the continue block is unreachable.
            self.begin_unreachable()?;
            self.b.branch(cont).map_err(be)?;
        }
        self.begin(cont)?;
        for (k, n) in nexts.iter().enumerate() {
            let t = self.vty(op.results[k]);
            let y = ys.as_ref().map_or(phis[k], |ys| ys[k]);
            self.b.copy_object(t, Some(*n), y).map_err(be)?;
        }
        self.b.i_add(ity, Some(iv_next), iv, step).map_err(be)?;
        self.b.branch(header).map_err(be)?;
        self.begin(merge)?;
        for (res, ph) in op.results.iter().zip(&phis) {
            self.held.insert(*res, Held::Id(*ph));
        }
        Ok(())
    }

    pub(crate) fn while_loop(&mut self, op: &Op) -> Result<(), SpirvError> {
        let inits: Vec<Word> = op.args.iter().map(|a| self.id(*a)).collect::<Result<_, _>>()?;
        let pre = self.cur;
        let (header, cond_b, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id(), self.b.id());
        let nexts: Vec<Word> = inits.iter().map(|_| self.b.id()).collect();
        self.b.branch(header).map_err(be)?;
        self.begin(header)?;
        let mut phis = Vec::new();
        for (k, r) in op.results.iter().enumerate() {
            let t = self.vty(*r);
            let ph = self.b.phi(t, None, [(inits[k], pre), (nexts[k], cont)]).map_err(be)?;
            phis.push(ph);
        }
        self.b.loop_merge(merge, cont, LoopControl::NONE, []).map_err(be)?;
        self.b.branch(cond_b).map_err(be)?;
        self.begin(cond_b)?;
        for (p, ph) in op.regions[0].params.iter().zip(&phis) {
            self.held.insert(*p, Held::Id(*ph));
        }
        let c = self.region_yield(&op.regions[0])?.ok_or_else(|| err("return in a while condition"))?;
        self.b.branch_conditional(c[0], body, merge, []).map_err(be)?;
        self.begin(body)?;
        for (p, ph) in op.regions[1].params.iter().zip(&phis) {
            self.held.insert(*p, Held::Id(*ph));
        }
        let ys = self.region_yield(&op.regions[1])?;
        if ys.is_none() {
            self.begin_unreachable()?;
        }
        self.b.branch(cont).map_err(be)?;
        self.begin(cont)?;
        for (k, n) in nexts.iter().enumerate() {
            let t = self.vty(op.results[k]);
            let y = ys.as_ref().map_or(phis[k], |ys| ys[k]);
            self.b.copy_object(t, Some(*n), y).map_err(be)?;
        }
        self.b.branch(header).map_err(be)?;
        self.begin(merge)?;
        for (res, ph) in op.results.iter().zip(&phis) {
            self.held.insert(*res, Held::Id(*ph));
        }
        Ok(())
    }

    pub(crate) fn if_op(&mut self, op: &Op) -> Result<(), SpirvError> {
        let c = self.id(op.args[0])?;
        let (then_b, else_b, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE).map_err(be)?;
        self.b.branch_conditional(c, then_b, else_b, []).map_err(be)?;
        let mut incoming: Vec<(Vec<Word>, Word)> = Vec::new();
        for (label, r) in [(then_b, &op.regions[0]), (else_b, &op.regions[1])] {
            self.begin(label)?;
            if let Some(ys) = self.region_yield(r)? {
                incoming.push((ys, self.cur));
                self.b.branch(merge).map_err(be)?;
            }
        }
        self.begin(merge)?;
        for (k, res) in op.results.iter().enumerate() {
            let t = self.vty(*res);
            let v = if incoming.is_empty() {
                self.b.undef(t, None)
            } else {
                let pairs: Vec<(Word, Word)> = incoming.iter().map(|(ys, l)| (ys[k], *l)).collect();
                self.b.phi(t, None, pairs).map_err(be)?
            };
            self.held.insert(*res, Held::Id(v));
        }
        Ok(())
    }

    /// After a `return`, continues in a new block that nothing branches to.
    pub(crate) fn begin_unreachable(&mut self) -> Result<(), SpirvError> {
        let l = self.b.id();
        self.begin(l)
    }
}
