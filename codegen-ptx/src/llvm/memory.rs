//! Memory: the params buffer, array elements in global memory and shared arrays in `.shared`
//! memory, with the SIMT form's bounds rules (loads out of bounds read 0 or keep the old
//! value; stores and atomic adds out of bounds do nothing), barriers, and atomic adds
//! (`atomicrmw add` for integers, `atomicrmw fadd` for floats).

use super::{be, err, segment, Gen, Held, SHARED};
use crate::PtxError;
use inkwell::types::BasicType;
use inkwell::values::{BasicValueEnum, IntValue, PointerValue};
use inkwell::{AddressSpace, IntPredicate};
use tilec_midend::{Op, OpKind, Scalar, Type, Value};

impl<'ctx> Gen<'ctx, '_> {
    /// Word `w` of the params buffer, as an `i32`.
    pub(crate) fn param_word(&self, w: u32) -> Result<BasicValueEnum<'ctx>, PtxError> {
        let i32t = self.cx.i32_type();
        // SAFETY (LLVM semantics): the params buffer has `layout.words` words.
        let p = unsafe { self.b.build_in_bounds_gep(i32t, self.params, &[i32t.const_int(w as u64, false)], "") }
            .map_err(be)?;
        self.b.build_load(i32t, p, "").map_err(be)
    }

    /// Loads the scalar parameters from the params buffer.
    pub(crate) fn load_scalar_params(&mut self) -> Result<(), PtxError> {
        let params = self.k.func.body.params.clone();
        for (i, p) in params.iter().enumerate() {
            let Type::Scalar(s) = self.k.func.ty(*p).clone() else { continue };
            let w = self.layout.offsets[i];
            let v = match s {
                Scalar::F64 | Scalar::I64 => {
                    let (lo, hi) = (self.param_word(w)?, self.param_word(w + 1)?);
                    let i64t = self.cx.i64_type();
                    let lo = self.b.build_int_z_extend(lo.into_int_value(), i64t, "").map_err(be)?;
                    let hi = self.b.build_int_z_extend(hi.into_int_value(), i64t, "").map_err(be)?;
                    let hi = self.b.build_left_shift(hi, i64t.const_int(32, false), "").map_err(be)?;
                    let bits = self.b.build_or(lo, hi, "").map_err(be)?;
                    self.b.build_bit_cast(bits, self.ty(s), "").map_err(be)?
                }
                Scalar::F32 => {
                    let x = self.param_word(w)?;
                    self.b.build_bit_cast(x, self.cx.f32_type(), "").map_err(be)?
                }
                Scalar::Bool => {
                    let x = self.param_word(w)?.into_int_value();
                    self.b.build_int_compare(IntPredicate::NE, x, x.get_type().const_zero(), "").map_err(be)?.into()
                }
                Scalar::I32 | Scalar::U32 => self.param_word(w)?,
                Scalar::F16 | Scalar::BF16 => return Err(err("a scalar of a storage type")),
            };
            self.held.insert(*p, Held::Val(v));
        }
        Ok(())
    }

    /// Extent `axis` of an array as an `i32`.
    pub(crate) fn dim(&self, array: Value, axis: u32) -> Result<BasicValueEnum<'ctx>, PtxError> {
        match self.held.get(&array) {
            Some(Held::Global { dims_word, .. }) => self.param_word(dims_word + axis),
            Some(Held::Shared { dims, .. }) => Ok(self.i32c(self.shared_dims[*dims][axis as usize] as i64)),
            _ => Err(err("extent of a non-array")),
        }
    }

    /// The element pointer of `idx` (element 0 when out of bounds) and the in-bounds flag.
    pub(super) fn element(
        &self,
        array: Value,
        idx: &[Value],
    ) -> Result<(PointerValue<'ctx>, IntValue<'ctx>, Scalar), PtxError> {
        let elem = self.elem(array);
        let i32t = self.cx.i32_type();
        let mut lin = i32t.const_zero();
        let mut inb = self.cx.bool_type().const_int(1, false);
        for (d, i) in idx.iter().enumerate() {
            let iv = self.val(*i)?.into_int_value();
            let n = self.dim(array, d as u32)?.into_int_value();
            let ok = self.b.build_int_compare(IntPredicate::ULT, iv, n, "").map_err(be)?;
            inb = self.b.build_and(inb, ok, "").map_err(be)?;
            let scaled = self.b.build_int_mul(lin, n, "").map_err(be)?;
            lin = self.b.build_int_add(scaled, iv, "").map_err(be)?;
        }
        let safe = self.b.build_select(inb, lin, i32t.const_zero(), "").map_err(be)?.into_int_value();
        let wide = self.b.build_int_z_extend(safe, self.cx.i64_type(), "").map_err(be)?;
        let base = match self.held.get(&array) {
            Some(Held::Global { ptr, .. }) | Some(Held::Shared { ptr, .. }) => *ptr,
            _ => return Err(err("element of a non-array")),
        };
        // SAFETY (LLVM semantics): `safe` is in bounds, or 0.
        let p = unsafe { self.b.build_in_bounds_gep(self.mem_ty(elem), base, &[wide], "") }.map_err(be)?;
        Ok((p, inb, elem))
    }

    fn guarded(
        &mut self,
        cond: IntValue<'ctx>,
        then: impl FnOnce(&mut Self) -> Result<(), PtxError>,
    ) -> Result<(), PtxError> {
        let (yes, done) = (self.cx.append_basic_block(self.f, "store"), self.cx.append_basic_block(self.f, "stored"));
        self.b.build_conditional_branch(cond, yes, done).map_err(be)?;
        self.b.position_at_end(yes);
        then(self)?;
        self.b.build_unconditional_branch(done).map_err(be)?;
        self.b.position_at_end(done);
        Ok(())
    }

    pub(crate) fn memory_op(&mut self, op: &Op) -> Result<(), PtxError> {
        match &op.kind {
            OpKind::Load(_) | OpKind::LoadInto(_) => {
                let into = matches!(op.kind, OpKind::LoadInto(_));
                let base = usize::from(into);
                let (p, inb, elem) = self.element(op.args[base], &op.args[base + 1..])?;
                let v = self.b.build_load(self.mem_ty(elem), p, "").map_err(be)?;
                let v = self.widen_mem(elem, v)?;
                let fallback = if into { self.val(op.args[0])? } else { self.constant(elem, 0.0) };
                let r = self.b.build_select(inb, v, fallback, "").map_err(be)?;
                self.held.insert(op.results[0], Held::Val(r));
            }
            OpKind::Store(_) | OpKind::AtomicAdd(_) => {
                let n = op.args.len();
                let (p, inb, elem) = self.element(op.args[0], &op.args[1..n - 1])?;
                let x = self.val(op.args[n - 1])?;
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                self.guarded(inb, |g| {
                    if atomic {
                        g.atomic_add(p, x, elem)
                    } else {
                        let x = g.narrow_mem(elem, x)?;
                        g.b.build_store(p, x).map(|_| ()).map_err(be)
                    }
                })?;
            }
            OpKind::AllocShared(shape) => {
                let elem = self.elem(op.results[0]);
                let len: u32 = shape.iter().product();
                // One copy per program of the block (`segment.rs`), each 16-byte aligned so
                // that LLVM merges loads at consecutive constant positions into `ld.shared.v4`
                // (the staged products of `tilec_midend::simt`).
                let stride = len.next_multiple_of(16 / elem.bytes().clamp(1, 16));
                let copies = (segment::WARP / self.k.lanes).max(1);
                self.shared_bytes += stride * copies * elem.bytes();
                let arr = self.ty(elem).array_type(stride * copies);
                let gv = self.m.add_global(
                    arr,
                    Some(AddressSpace::from(SHARED)),
                    &format!("shared{}", self.shared_dims.len()),
                );
                gv.set_initializer(&arr.get_undef());
                gv.set_alignment(16);
                let mut ptr = gv.as_pointer_value();
                if let Some(seg) = self.segment {
                    let i64t = self.cx.i64_type();
                    let first = self
                        .b
                        .build_int_mul(seg.index, self.cx.i32_type().const_int(stride as u64, false), "")
                        .map_err(be)?;
                    let first = self.b.build_int_z_extend(first, i64t, "").map_err(be)?;
                    // SAFETY (LLVM semantics): segment index < 32 / lanes.
                    ptr = unsafe { self.b.build_in_bounds_gep(self.ty(elem), ptr, &[first], "") }.map_err(be)?;
                }
                self.shared_dims.push(shape.clone());
                self.held.insert(op.results[0], Held::Shared { ptr, dims: self.shared_dims.len() - 1 });
                self.zero_shared(ptr, elem, len)?;
            }
            OpKind::Barrier => match self.segment {
                Some(seg) => self.call_void("llvm.nvvm.bar.warp.sync", &[seg.mask.into()])?,
                None => self.call_void("llvm.nvvm.barrier0", &[])?,
            },
            _ => return Err(err("not a memory op")),
        }
        Ok(())
    }

    /// Lane `l` clears elements `l, l + lanes, ..` of a shared array (its program's copy);
    /// then a barrier.
    fn zero_shared(&mut self, ptr: PointerValue<'ctx>, elem: Scalar, len: u32) -> Result<(), PtxError> {
        let i32t = self.cx.i32_type();
        let lane = match self.segment {
            Some(seg) => seg.lane,
            None => self.call("llvm.nvvm.read.ptx.sreg.tid.x", i32t.into(), &[])?.into_int_value(),
        };
        let zero = self.constant(elem, 0.0);
        for start in (0..len).step_by(self.k.lanes as usize) {
            let i = self.b.build_int_add(lane, i32t.const_int(start as u64, false), "").map_err(be)?;
            let ok =
                self.b.build_int_compare(IntPredicate::ULT, i, i32t.const_int(len as u64, false), "").map_err(be)?;
            self.guarded(ok, |g| {
                let wide = g.b.build_int_z_extend(i, g.cx.i64_type(), "").map_err(be)?;
                // SAFETY (LLVM semantics): i < len.
                let p = unsafe { g.b.build_in_bounds_gep(g.ty(elem), ptr, &[wide], "") }.map_err(be)?;
                g.b.build_store(p, zero).map(|_| ()).map_err(be)
            })?;
        }
        match self.segment {
            Some(seg) => self.call_void("llvm.nvvm.bar.warp.sync", &[seg.mask.into()]),
            None => self.call_void("llvm.nvvm.barrier0", &[]),
        }
    }

    /// `*p += x` atomically: `atomicrmw add` for integers, `atomicrmw fadd` for floats (one
    /// `red.global.add.f32` / `.f64` instruction, native since sm_60), monotonic ordering.
    fn atomic_add(&mut self, p: PointerValue<'ctx>, x: BasicValueEnum<'ctx>, elem: Scalar) -> Result<(), PtxError> {
        if elem.is_half() {
            return self.rmw_half(tilec_midend::Rmw::Add, p, x, None, elem).map(|_| ());
        }
        let op = if elem.is_float() {
            llvm_sys::LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpFAdd
        } else {
            llvm_sys::LLVMAtomicRMWBinOp::LLVMAtomicRMWBinOpAdd
        };
        self.atomicrmw(op, p, x).map(|_| ())
    }
}
