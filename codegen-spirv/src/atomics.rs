//! Atomic read-modify-writes in the shader: `AtomicRmw` (the update of one element with the
//! old value as the result, 0 out of bounds, through an `OpPhi` after the guarded update) and
//! the adds of `AtomicAdd`. Integers use `OpAtomicIAdd`, `OpAtomicExchange`,
//! `OpAtomic{S,U}{Min,Max}` and `OpAtomicCompareExchange`; floats work on their bits (Vulkan
//! has no float atomics without extensions): exchanges and compare-and-swaps directly, minima
//! and maxima in IEEE 754 `totalOrder` as integer ones chosen by the operand's sign
//! (`Rmw::Min`), additions as a compare-and-swap loop.

use crate::body::be;
use crate::memory::{SCOPE_DEVICE, SCOPE_WORKGROUP, SEM_RELAXED};
use crate::module::{Gen, Held};
use crate::{err, SpirvError};
use rspirv::spirv::{Capability, LoopControl, SelectionControl, StorageClass, Word};
use tilec_midend::{Op, Rmw, Scalar};

impl Gen<'_> {
    /// `AtomicRmw(k)`: `(array, i.., [cmp,] x) -> old`.
    pub(crate) fn rmw_op(&mut self, op: &Op, k: Rmw) -> Result<(), SpirvError> {
        let n = op.args.len();
        let rank = n - if k == Rmw::Cas { 3 } else { 2 };
        let idx = &op.args[1..1 + rank];
        let x = self.id(op.args[n - 1])?;
        let cmp = if k == Rmw::Cas { Some(self.id(op.args[n - 2])?) } else { None };
        let r = if let Some(c) = self.chunked(op.args[0], idx)? {
            let mut v = self.constant(c.elem, 0.0);
            for j in 0..c.count {
                let (ptr, here) = self.chunk_ptr(&c, j)?;
                let go = self.b.logical_and(self.t_bool, None, here, c.inb).map_err(be)?;
                let old = self.rmw_guarded(go, k, ptr, x, cmp, c.elem, false)?;
                let t = self.ty(c.elem);
                v = self.b.select(t, None, go, old, v).map_err(be)?;
            }
            v
        } else {
            let (ptr, inb, elem) = self.element(op.args[0], idx)?;
            let shared = matches!(self.held.get(&op.args[0]), Some(Held::Shared { .. }));
            self.rmw_guarded(inb, k, ptr, x, cmp, elem, shared)?
        };
        self.held.insert(op.results[0], Held::Id(r));
        Ok(())
    }

    /// The update of the element at `ptr` where `cond` holds: its old value, else 0.
    #[allow(clippy::too_many_arguments)]
    fn rmw_guarded(
        &mut self,
        cond: Word,
        k: Rmw,
        ptr: Word,
        x: Word,
        cmp: Option<Word>,
        elem: Scalar,
        shared: bool,
    ) -> Result<Word, SpirvError> {
        let zero = self.constant(elem, 0.0);
        let entry = self.cur;
        let (yes, merge) = (self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE).map_err(be)?;
        self.b.branch_conditional(cond, yes, merge, []).map_err(be)?;
        self.b.begin_block(Some(yes)).map_err(be)?;
        self.cur = yes;
        let old = self.rmw_at(k, ptr, x, cmp, elem, shared)?;
        let last = self.cur;
        self.b.branch(merge).map_err(be)?;
        self.b.begin_block(Some(merge)).map_err(be)?;
        self.cur = merge;
        let t = self.ty(elem);
        self.b.phi(t, None, [(old, last), (zero, entry)]).map_err(be)
    }

    /// The atomic update `k` of the element of `elem` at `ptr` (in a shared array when
    /// `shared`) with `x` (and the comparand `cmp` of `Cas`); returns the old value.
    pub(crate) fn rmw_at(
        &mut self,
        k: Rmw,
        ptr: Word,
        x: Word,
        cmp: Option<Word>,
        elem: Scalar,
        shared: bool,
    ) -> Result<Word, SpirvError> {
        let scope = self.u32c(if shared { SCOPE_WORKGROUP } else { SCOPE_DEVICE });
        let sem = self.u32c(SEM_RELAXED);
        let t = self.ty(elem);
        if elem.bytes() == 8 {
            // 64-bit atomics: shaderBufferInt64Atomics / shaderSharedInt64Atomics.
            self.b.capability(Capability::Int64Atomics);
        }
        // Floats as their bits: an unsigned integer pointer to the same element.
        let (ut, p, xv, cv) = if elem.is_float() {
            let ut = if elem == Scalar::F32 {
                self.t_u32
            } else {
                self.b.capability(Capability::Int64);
                self.b.type_int(64, 0)
            };
            let sc = if shared { StorageClass::Workgroup } else { StorageClass::StorageBuffer };
            let up = self.b.type_pointer(None, sc, ut);
            let p = self.b.bitcast(up, None, ptr).map_err(be)?;
            if k == Rmw::Add {
                return self.float_add_loop(p, x, ut, t, scope, sem);
            }
            let xv = self.b.bitcast(ut, None, x).map_err(be)?;
            let cv = cmp.map(|c| self.b.bitcast(ut, None, c)).transpose().map_err(be)?;
            (ut, p, xv, cv)
        } else {
            (t, ptr, x, cmp)
        };
        let unsigned = elem == Scalar::U32;
        let old = match (k, elem.is_float()) {
            (Rmw::Add, false) => self.b.atomic_i_add(ut, None, p, scope, sem, xv),
            (Rmw::Xchg, _) => self.b.atomic_exchange(ut, None, p, scope, sem, xv),
            (Rmw::Cas, _) => {
                let c = cv.ok_or_else(|| err("compare-and-swap without a comparand"))?;
                self.b.atomic_compare_exchange(ut, None, p, scope, sem, sem, xv, c)
            }
            (Rmw::Min, false) if unsigned => self.b.atomic_u_min(ut, None, p, scope, sem, xv),
            (Rmw::Min, false) => self.b.atomic_s_min(ut, None, p, scope, sem, xv),
            (Rmw::Max, false) if unsigned => self.b.atomic_u_max(ut, None, p, scope, sem, xv),
            (Rmw::Max, false) => self.b.atomic_s_max(ut, None, p, scope, sem, xv),
            (Rmw::Min | Rmw::Max, true) => return self.total_order_rmw(k, p, xv, ut, t, scope, sem),
            (Rmw::Add, true) => return Err(err("a float add is a compare-and-swap loop")),
        }
        .map_err(be)?;
        if elem.is_float() {
            return self.b.bitcast(t, None, old).map_err(be);
        }
        Ok(old)
    }

    /// A float minimum or maximum in totalOrder on the bits `xv` (unsigned type `ut`): a signed
    /// min (max) for an operand with the sign bit clear, an unsigned max (min) for one with it
    /// set; the old value as a float of type `t`.
    #[allow(clippy::too_many_arguments)]
    fn total_order_rmw(
        &mut self,
        k: Rmw,
        p: Word,
        xv: Word,
        ut: Word,
        t: Word,
        scope: Word,
        sem: Word,
    ) -> Result<Word, SpirvError> {
        let st = if ut == self.t_u32 { self.t_i32 } else { self.b.type_int(64, 1) };
        let xs = self.b.bitcast(st, None, xv).map_err(be)?;
        let z = if ut == self.t_u32 { self.i32c(0) } else { self.b.constant_bit64(st, 0) };
        let set = self.b.s_less_than(self.t_bool, None, xs, z).map_err(be)?;
        let (pos, neg, merge) = (self.b.id(), self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE).map_err(be)?;
        self.b.branch_conditional(set, neg, pos, []).map_err(be)?;
        let mut olds = Vec::new();
        for (block, signed) in [(pos, true), (neg, false)] {
            self.b.begin_block(Some(block)).map_err(be)?;
            let old = match (k == Rmw::Min, signed) {
                (true, true) => self.b.atomic_s_min(ut, None, p, scope, sem, xv),
                (true, false) => self.b.atomic_u_max(ut, None, p, scope, sem, xv),
                (false, true) => self.b.atomic_s_max(ut, None, p, scope, sem, xv),
                (false, false) => self.b.atomic_u_min(ut, None, p, scope, sem, xv),
            }
            .map_err(be)?;
            olds.push((old, block));
            self.b.branch(merge).map_err(be)?;
        }
        self.b.begin_block(Some(merge)).map_err(be)?;
        self.cur = merge;
        let old = self.b.phi(ut, None, olds).map_err(be)?;
        self.b.bitcast(t, None, old).map_err(be)
    }

    /// `*p += x` for a float `x` (type `t`) as a compare-and-swap loop on the bits (unsigned
    /// type `ut`); the old value as a float.
    fn float_add_loop(
        &mut self,
        p: Word,
        x: Word,
        ut: Word,
        t: Word,
        scope: Word,
        sem: Word,
    ) -> Result<Word, SpirvError> {
        let (header, body, cont, merge) = (self.b.id(), self.b.id(), self.b.id(), self.b.id());
        self.b.branch(header).map_err(be)?;
        self.b.begin_block(Some(header)).map_err(be)?;
        self.b.loop_merge(merge, cont, LoopControl::NONE, []).map_err(be)?;
        self.b.branch(body).map_err(be)?;
        self.b.begin_block(Some(body)).map_err(be)?;
        let old = self.b.atomic_load(ut, None, p, scope, sem).map_err(be)?;
        let oldf = self.b.bitcast(t, None, old).map_err(be)?;
        let newf = self.b.f_add(t, None, oldf, x).map_err(be)?;
        let new = self.b.bitcast(ut, None, newf).map_err(be)?;
        let seen = self.b.atomic_compare_exchange(ut, None, p, scope, sem, sem, new, old).map_err(be)?;
        let done = self.b.i_equal(self.t_bool, None, seen, old).map_err(be)?;
        self.b.branch_conditional(done, merge, cont, []).map_err(be)?;
        self.b.begin_block(Some(cont)).map_err(be)?;
        self.b.branch(header).map_err(be)?;
        self.b.begin_block(Some(merge)).map_err(be)?;
        self.cur = merge;
        Ok(oldf)
    }
}
