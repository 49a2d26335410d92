//! Memory in the shader: the params buffer (extents, scalars, grid), array elements in
//! storage buffers and shared arrays in workgroup memory, with the SIMT form's bounds rules
//! (loads out of bounds read 0 or keep the old value; stores and atomic adds out of bounds do
//! nothing), barriers; atomic adds through `atomics.rs`.

use crate::body::be;
use crate::module::{Gen, Held};
use crate::{err, SpirvError};
use rspirv::dr::{Instruction, Operand};
use rspirv::spirv::{Op as SpvOp, SelectionControl, StorageClass, Word};
use tilec_midend::{Op, OpKind, Rmw, Scalar, Type, Value};

/// An access to a chunked array (see `Chunks`).
pub(crate) struct ChunkedAccess {
    var: Word,
    pub(crate) count: u32,
    which: Word,
    at: Word,
    pub(crate) inb: Word,
    pub(crate) elem: Scalar,
}

/// Scope and memory-semantics constants of SPIR-V.
pub(crate) const SCOPE_DEVICE: u32 = 1;
pub(crate) const SCOPE_WORKGROUP: u32 = 2;
/// AcquireRelease on workgroup memory (shared arrays) and uniform memory (storage buffers:
/// the global arrays), so that a barrier orders the lanes' stores to both before later loads.
const SEM_ACQ_REL_WG: u32 = 0x8 | 0x40 | 0x100;
pub(crate) const SEM_RELAXED: u32 = 0;

impl Gen<'_> {
    /// Word `w` of the params buffer, as a `u32`.
    pub(crate) fn param_word(&mut self, w: u32) -> Result<Word, SpirvError> {
        let pu = self.b.type_pointer(None, StorageClass::StorageBuffer, self.t_u32);
        let (z, wi) = (self.i32c(0), self.i32c(w as i32));
        let p = self.b.access_chain(pu, None, self.params, [z, wi]).map_err(be)?;
        self.b.load(self.t_u32, None, p, None, []).map_err(be)
    }

    /// Loads the scalar parameters from the params buffer (at the start of `main`).
    pub(crate) fn load_scalar_params(&mut self) -> Result<(), SpirvError> {
        let params = self.k.func.body.params.clone();
        for (i, p) in params.iter().enumerate() {
            let Type::Scalar(s) = self.k.func.ty(*p).clone() else {
                continue;
            };
            let w = self.layout.offsets[i];
            let t = self.ty(s);
            let v = if s.bytes() == 8 {
                let (lo, hi) = (self.param_word(w)?, self.param_word(w + 1)?);
                let uv2 = self.b.type_vector(self.t_u32, 2);
                let v2 = self.b.composite_construct(uv2, None, [lo, hi]).map_err(be)?;
                self.b.bitcast(t, None, v2).map_err(be)?
            } else if s == Scalar::Bool {
                let x = self.param_word(w)?;
                let z = self.u32c(0);
                self.b.i_not_equal(self.t_bool, None, x, z).map_err(be)?
            } else {
                let x = self.param_word(w)?;
                if s == Scalar::U32 {
                    x
                } else {
                    self.b.bitcast(t, None, x).map_err(be)?
                }
            };
            self.held.insert(*p, Held::Id(v));
        }
        Ok(())
    }

    /// Extent `axis` of an array (parameter or shared) as an `i32`.
    pub(crate) fn dim(&mut self, array: Value, axis: u32) -> Result<Word, SpirvError> {
        match self.held.get(&array).copied() {
            Some(Held::Buffer { dims_word, .. }) => {
                let w = self.param_word(dims_word + axis)?;
                self.b.bitcast(self.t_i32, None, w).map_err(be)
            }
            Some(Held::Shared { dims, .. }) => {
                let d = self.shared_dims[dims][axis as usize];
                Ok(self.i32c(d as i32))
            }
            _ => Err(err("extent of a non-array")),
        }
    }

    /// The row-major linear index of `idx` in an array, and whether every index is in bounds.
    fn linear(&mut self, array: Value, idx: &[Value]) -> Result<(Word, Word), SpirvError> {
        let mut lin = self.i32c(0);
        let mut inb = self.constant_bits(Scalar::Bool, 1);
        for (d, i) in idx.iter().enumerate() {
            let iv = self.id(*i)?;
            let n = self.dim(array, d as u32)?;
            let (iu, nu) =
                (self.b.bitcast(self.t_u32, None, iv).map_err(be)?, self.b.bitcast(self.t_u32, None, n).map_err(be)?);
            let ok = self.b.u_less_than(self.t_bool, None, iu, nu).map_err(be)?;
            inb = self.b.logical_and(self.t_bool, None, inb, ok).map_err(be)?;
            let scaled = self.b.i_mul(self.t_i32, None, lin, n).map_err(be)?;
            lin = self.b.i_add(self.t_i32, None, scaled, iv).map_err(be)?;
        }
        Ok((lin, inb))
    }

    /// The pointer to element `idx` of an array, the in-bounds flag, and the element type.
    /// Out of bounds, the pointer is to element 0 (never dereferenced for stores; loads
    /// select the fallback value).
    pub(crate) fn element(&mut self, array: Value, idx: &[Value]) -> Result<(Word, Word, Scalar), SpirvError> {
        let elem = self.elem(array);
        let (lin, inb) = self.linear(array, idx)?;
        let zero = self.i32c(0);
        let safe = self.b.select(self.t_i32, None, inb, lin, zero).map_err(be)?;
        let t = self.ty(elem);
        let ptr = match self.held.get(&array).copied() {
            Some(Held::Buffer { var, chunk: None, .. }) => {
                let p = self.b.type_pointer(None, StorageClass::StorageBuffer, t);
                self.b.access_chain(p, None, var, [zero, safe]).map_err(be)?
            }
            Some(Held::Buffer { chunk: Some(_), .. }) => return Err(err("chunked array accessed as one buffer")),
            Some(Held::Shared { var, .. }) => {
                let p = self.b.type_pointer(None, StorageClass::Workgroup, t);
                self.b.access_chain(p, None, var, [safe]).map_err(be)?
            }
            _ => return Err(err("element of a non-array")),
        };
        Ok((ptr, inb, elem))
    }

    /// Emits `then` under `if cond`.
    fn guarded(
        &mut self,
        cond: Word,
        then: impl FnOnce(&mut Self) -> Result<(), SpirvError>,
    ) -> Result<(), SpirvError> {
        let (yes, merge) = (self.b.id(), self.b.id());
        self.b.selection_merge(merge, SelectionControl::NONE).map_err(be)?;
        self.b.branch_conditional(cond, yes, merge, []).map_err(be)?;
        self.b.begin_block(Some(yes)).map_err(be)?;
        self.cur = yes;
        then(self)?;
        self.b.branch(merge).map_err(be)?;
        self.b.begin_block(Some(merge)).map_err(be)?;
        self.cur = merge;
        Ok(())
    }

    /// For a chunked array: `(descriptor array variable, element type, chunks, log2)` and the
    /// linear index and in-bounds flag of `idx`.
    pub(crate) fn chunked(&mut self, array: Value, idx: &[Value]) -> Result<Option<ChunkedAccess>, SpirvError> {
        let Some(Held::Buffer { var, chunk: Some(log2), .. }) = self.held.get(&array).copied() else {
            return Ok(None);
        };
        if log2 >= 31 {
            return Err(err(format!("chunks of 2^{log2} elements are too large")));
        }
        let count = self.chunk_counts.get(&var).copied().unwrap_or(1);
        let (lin, inb) = self.linear(array, idx)?;
        let lu = self.b.bitcast(self.t_u32, None, lin).map_err(be)?;
        let sh = self.u32c(log2 as u32);
        let mask = self.u32c(((1u64 << log2) - 1) as u32);
        let which = self.b.shift_right_logical(self.t_u32, None, lu, sh).map_err(be)?;
        let at = self.b.bitwise_and(self.t_u32, None, lu, mask).map_err(be)?;
        Ok(Some(ChunkedAccess { var, count, which, at, inb, elem: self.elem(array) }))
    }

    /// Pointer to element `at` of chunk `j` (a constant descriptor index: no device feature
    /// is needed); `at` is replaced by 0 unless `which == j`, so the address is always valid.
    pub(crate) fn chunk_ptr(&mut self, c: &ChunkedAccess, j: u32) -> Result<(Word, Word), SpirvError> {
        let jc = self.u32c(j);
        let here = self.b.i_equal(self.t_bool, None, c.which, jc).map_err(be)?;
        let z = self.u32c(0);
        let at = self.b.select(self.t_u32, None, here, c.at, z).map_err(be)?;
        let t = self.ty(c.elem);
        let p = self.b.type_pointer(None, StorageClass::StorageBuffer, t);
        let ptr = self.b.access_chain(p, None, c.var, [jc, z, at]).map_err(be)?;
        Ok((ptr, here))
    }

    fn chunked_op(&mut self, op: &Op, c: ChunkedAccess) -> Result<(), SpirvError> {
        let t = self.ty(c.elem);
        match &op.kind {
            OpKind::Load(_) | OpKind::LoadInto(_) => {
                let into = matches!(op.kind, OpKind::LoadInto(_));
                let fallback = if into { self.id(op.args[0])? } else { self.constant(c.elem, 0.0) };
                let tc = self.ty(c.elem.compute());
                let mut v = fallback;
                for j in 0..c.count {
                    let (ptr, here) = self.chunk_ptr(&c, j)?;
                    let x = self.b.load(t, None, ptr, None, []).map_err(be)?;
                    let x = self.widen_loaded(c.elem, x)?;
                    v = self.b.select(tc, None, here, x, v).map_err(be)?;
                }
                let r = self.b.select(tc, None, c.inb, v, fallback).map_err(be)?;
                self.held.insert(op.results[0], Held::Id(r));
            }
            _ => {
                let x = self.id(*op.args.last().expect("value"))?;
                let x = self.narrow_stored(c.elem, x)?;
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                for j in 0..c.count {
                    let (ptr, here) = self.chunk_ptr(&c, j)?;
                    let go = self.b.logical_and(self.t_bool, None, here, c.inb).map_err(be)?;
                    self.guarded(go, |g| {
                        if atomic {
                            g.atomic_add(ptr, x, c.elem, false)
                        } else {
                            g.b.store(ptr, x, None, []).map_err(be)
                        }
                    })?;
                }
            }
        }
        Ok(())
    }

    pub(crate) fn memory_op(&mut self, op: &Op) -> Result<(), SpirvError> {
        if matches!(op.kind, OpKind::Load(_) | OpKind::LoadInto(_) | OpKind::Store(_) | OpKind::AtomicAdd(_)) {
            let (array, idx) = match op.kind {
                OpKind::LoadInto(_) => (op.args[1], &op.args[2..]),
                OpKind::Load(_) => (op.args[0], &op.args[1..]),
                _ => (op.args[0], &op.args[1..op.args.len() - 1]),
            };
            if let Some(c) = self.chunked(array, idx)? {
                return self.chunked_op(op, c);
            }
        }
        match &op.kind {
            OpKind::Load(_) | OpKind::LoadInto(_) => {
                let into = matches!(op.kind, OpKind::LoadInto(_));
                let base = usize::from(into);
                let (ptr, inb, elem) = self.element(op.args[base], &op.args[base + 1..])?;
                let t = self.ty(elem);
                let v = self.b.load(t, None, ptr, None, []).map_err(be)?;
                let v = self.widen_loaded(elem, v)?;
                let fallback = if into { self.id(op.args[0])? } else { self.constant(elem, 0.0) };
                let tc = self.ty(elem.compute());
                let r = self.b.select(tc, None, inb, v, fallback).map_err(be)?;
                self.held.insert(op.results[0], Held::Id(r));
            }
            OpKind::Store(_) | OpKind::AtomicAdd(_) => {
                let n = op.args.len();
                let (ptr, inb, elem) = self.element(op.args[0], &op.args[1..n - 1])?;
                let x = self.id(op.args[n - 1])?;
                let x = self.narrow_stored(elem, x)?;
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                let shared = matches!(self.held.get(&op.args[0]), Some(Held::Shared { .. }));
                self.guarded(inb, |g| {
                    if atomic {
                        g.atomic_add(ptr, x, elem, shared)
                    } else {
                        g.b.store(ptr, x, None, []).map_err(be)
                    }
                })?;
            }
            OpKind::AllocShared(shape) => {
                let elem = self.elem(op.results[0]);
                let t = self.ty(elem);
                let len: u32 = shape.iter().product();
                let lc = self.u32c(len);
                let arr = self.b.type_array(t, lc);
                let p = self.b.type_pointer(None, StorageClass::Workgroup, arr);
                // Workgroup variables live at module scope, not in the function's blocks.
                let var = self.b.id();
                let inst = Instruction::new(
                    SpvOp::Variable,
                    Some(p),
                    Some(var),
                    vec![Operand::StorageClass(StorageClass::Workgroup)],
                );
                self.b.module_mut().types_global_values.push(inst);
                self.shared_dims.push(shape.clone());
                self.held.insert(op.results[0], Held::Shared { var, dims: self.shared_dims.len() - 1 });
                self.zero_shared(var, elem, len)?;
            }
            OpKind::Barrier => self.barrier()?,
            _ => return Err(err("not a memory op")),
        }
        Ok(())
    }

    fn barrier(&mut self) -> Result<(), SpirvError> {
        let (wg, sem) = (self.u32c(SCOPE_WORKGROUP), self.u32c(SEM_ACQ_REL_WG));
        self.b.control_barrier(wg, wg, sem).map_err(be)
    }

    /// Zero-fills a shared array: lane `l` clears elements `l, l + lanes, ..`; then a barrier.
    fn zero_shared(&mut self, var: Word, elem: Scalar, len: u32) -> Result<(), SpirvError> {
        let t = self.ty(elem);
        let p = self.b.type_pointer(None, StorageClass::Workgroup, t);
        let lane = self.b.load(self.t_u32, None, self.lane_var, None, []).map_err(be)?;
        let lane = self.b.bitcast(self.t_i32, None, lane).map_err(be)?;
        let zero = self.constant(elem, 0.0);
        let lanes = self.k.lanes;
        for start in (0..len).step_by(lanes as usize) {
            let s = self.i32c(start as i32);
            let i = self.b.i_add(self.t_i32, None, s, lane).map_err(be)?;
            let lim = self.i32c(len as i32);
            let ok = self.b.s_less_than(self.t_bool, None, i, lim).map_err(be)?;
            self.guarded(ok, |g| {
                let ptr = g.b.access_chain(p, None, var, [i]).map_err(be)?;
                g.b.store(ptr, zero, None, []).map_err(be)
            })?;
        }
        self.barrier()
    }

    /// `*ptr += x` atomically (`atomics.rs`).
    fn atomic_add(&mut self, ptr: Word, x: Word, elem: Scalar, shared: bool) -> Result<(), SpirvError> {
        self.rmw_at(Rmw::Add, ptr, x, None, elem, shared).map(|_| ())
    }
}
