//! Global-array access on the CPU: element offsets from indices and row-major strides, the
//! bounds of each slice (elements outside the array are skipped: loads read zero or keep the
//! tile's value, stores write nothing), and copies between tiles and arrays with a vectorised
//! path for rows that lie wholly inside the array.

use crate::lower::{cl_type, Lower};
use crate::tile::Operand;
use crate::CodegenError;
use cranelift_codegen::ir::{self, condcodes::IntCC, types, AtomicRmwOp, InstBuilder, MemFlagsData};
use cranelift_module::Module as ClModule;
use tilec_midend::{Index, Op, OpKind, Rmw, Scalar, Type, Value};

/// A slice dimension of an access: valid range `lo..hi` of tile positions and the array
/// stride (in elements) of that dimension.
struct SliceDim {
    extent: u32,
    lo: ir::Value,
    hi: ir::Value,
    stride: ir::Value,
    /// The innermost axis: stride 1, the slice's elements one after another.
    unit: bool,
}

/// A checked array access.
struct Access {
    ptr: ir::Value,
    /// Element offset of the first element of the slice (or of the scalar).
    base: ir::Value,
    /// For a scalar access: whether every index is in bounds.
    in_bounds: ir::Value,
    slices: Vec<SliceDim>,
    elem: Scalar,
}

/// What moves between an array and a tile.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Xfer {
    /// Array to tile.
    Load,
    /// Tile to array.
    Store,
    /// Tile added atomically to the array.
    AtomicAdd,
    /// Tile to array where the `bool` tile at `mask` (one byte an element) is true; `tile` is
    /// the stored tile's address, to find an element's mask byte.
    StoreMasked { mask: ir::Value, tile: ir::Value },
}

/// Longest 1-D slice whose in-bounds copy is unrolled.
const UNROLL_1D: u32 = 64;

/// Memory flags for data that may be unaligned but is known to be accessible.
pub(crate) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl<M: ClModule> Lower<'_, '_, M> {
    fn access(&mut self, array: Value, kinds: &[Index], idx: &[Value]) -> Access {
        let (ptr, dims) = self.array(array);
        let elem = self.f.ty(array).elem();
        let n = dims.len();
        // Row-major strides, innermost first.
        let mut strides = vec![self.b.ins().iconst(types::I64, 1); n];
        for d in (0..n.saturating_sub(1)).rev() {
            strides[d] = self.b.ins().imul(strides[d + 1], dims[d + 1]);
        }
        let mut base = self.b.ins().iconst(types::I64, 0);
        let mut in_bounds = self.b.ins().iconst(types::I8, 1);
        let mut slices = Vec::new();
        let zero = self.b.ins().iconst(types::I64, 0);
        for d in 0..n {
            let i32v = self.val(idx[d]);
            let i = self.b.ins().sextend(types::I64, i32v);
            let t = self.b.ins().imul(i, strides[d]);
            base = self.b.ins().iadd(base, t);
            match kinds[d] {
                // Proven in bounds (`tilec_midend::bounds`): no check, the whole slice.
                Index::At if self.bounds.inside(array, d, idx[d], None) => {}
                Index::Slice(k) if self.bounds.inside(array, d, idx[d], Some(k)) => {
                    let (lo, hi) = (zero, self.b.ins().iconst(types::I64, k as i64));
                    slices.push(SliceDim { extent: k, lo, hi, stride: strides[d], unit: d + 1 == n });
                }
                Index::At => {
                    let ok = self.b.ins().icmp(IntCC::UnsignedLessThan, i, dims[d]);
                    in_bounds = self.b.ins().band(in_bounds, ok);
                }
                Index::Slice(k) => {
                    let kk = self.b.ins().iconst(types::I64, k as i64);
                    let neg = self.b.ins().ineg(i);
                    let lo = self.b.ins().smax(neg, zero);
                    let lo = self.b.ins().smin(lo, kk);
                    let room = self.b.ins().isub(dims[d], i);
                    let hi = self.b.ins().smin(room, kk);
                    let hi = self.b.ins().smax(hi, lo);
                    slices.push(SliceDim { extent: k, lo, hi, stride: strides[d], unit: d + 1 == n });
                }
            }
        }
        // An out-of-range single index empties every slice.
        for s in &mut slices {
            s.hi = self.b.ins().select(in_bounds, s.hi, s.lo);
        }
        Access { ptr, base, in_bounds, slices, elem }
    }

    /// The address of tile `v`'s elements at its slot's layout (rows of its width one after
    /// another): its slot, or for a pending load where `pending_view` reads it so, in the
    /// array where the tile lies inside it (a `map`'s one-row operand, `in_place_loads`; a
    /// product's left operand, `fusion::packed_left_operands`, only where its rows follow one
    /// another there), else in its slot, filled with the load's bounds rules.
    pub(crate) fn slot_layout_operand(&mut self, v: Value) -> ir::Value {
        if !self.pending.contains_key(&v) {
            return self.tile_addr(v);
        }
        self.pending_view(v, true).0
    }

    /// An operand of an element-wise op read from a pending tile load (`in_place_loads`): a
    /// 1-D tile at one address, a matrix tile as rows at a pitch (`pending_view`).
    pub(crate) fn view_operand(&mut self, v: Value) -> Operand {
        match self.pending_view(v, false) {
            (base, Some(stride)) => Operand::Rows { base, stride },
            (base, None) => Operand::Tile(base),
        }
    }

    /// Where the elements of pending load `v` are read: the tile's first element in its array
    /// where the whole tile lies inside it, else the load's own slot filled with the load's
    /// bounds rules; for a matrix tile also the row pitch in bytes (the array's, or the
    /// slot's). `packed`: the array only where its row pitch is the tile's too.
    fn pending_view(&mut self, v: Value, packed: bool) -> (ir::Value, Option<ir::Value>) {
        let Type::Tile { shape, elem } = self.f.ty(v).clone() else { unreachable!("a load's tile") };
        let op = self.pending.remove(&v).expect("a pending load");
        let OpKind::Load(kinds) = &op.kind else { unreachable!("a pending load is a load") };
        let acc = self.access(op.args[0], kinds, &op.args[1..]);
        let rows = shape.len() == 2;
        let mut inside = if rows { self.inside(&acc) } else { self.whole(&acc.slices[0]) };
        if packed && rows {
            let adjacent = self.b.ins().icmp_imm_s(IntCC::Equal, acc.slices[0].stride, shape[1] as i64);
            inside = self.b.ins().band(inside, adjacent);
        }
        let (yes, no, done) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        let base = self.b.append_block_param(done, types::I64);
        let stride = rows.then(|| self.b.append_block_param(done, types::I64));
        self.b.ins().brif(inside, yes, &[], no, &[]);
        self.b.switch_to_block(yes);
        let zero = self.b.ins().iconst(types::I64, 0);
        let mut args = vec![self.elem_addr(&acc, zero).into()];
        if rows {
            args.push(self.b.ins().imul_imm_s(acc.slices[0].stride, elem.bytes() as i64).into());
        }
        self.b.ins().jump(done, &args);
        self.b.switch_to_block(no);
        let dst = self.tile_addr(v);
        self.load_into_slot(&acc, dst, self.f.ty(v).tile_len());
        let mut args = vec![dst.into()];
        if rows {
            args.push(self.b.ins().iconst(types::I64, (shape[1] * elem.bytes()) as i64).into());
        }
        self.b.ins().jump(done, &args);
        self.b.switch_to_block(done);
        (base, stride)
    }

    /// Whether every slice of `acc` lies wholly inside the array (so does the tile).
    fn inside(&mut self, acc: &Access) -> ir::Value {
        let mut all = self.b.ins().iconst(types::I8, 1);
        for s in &acc.slices {
            let w = self.whole(s);
            all = self.b.ins().band(all, w);
        }
        all
    }

    /// Fills the tile of `len` elements at `dst` from the access `acc`, zero outside the array
    /// (zeroed first only when the tile does not lie wholly inside it).
    fn load_into_slot(&mut self, acc: &Access, dst: ir::Value, len: u32) {
        let inside = self.inside(acc);
        let (zero_b, copy_b) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(inside, copy_b, &[], zero_b, &[]);
        self.b.switch_to_block(zero_b);
        self.zero_bytes(dst, len * acc.elem.compute().bytes());
        self.b.ins().jump(copy_b, &[]);
        self.b.switch_to_block(copy_b);
        self.copy_slices(acc, dst, Xfer::Load);
    }

    /// Whether slice dimension `s` lies wholly inside the array (`lo == 0` and `hi == extent`).
    fn whole(&mut self, s: &SliceDim) -> ir::Value {
        let k = self.b.ins().iconst(types::I64, s.extent as i64);
        let from_start = self.b.ins().icmp_imm_s(IntCC::Equal, s.lo, 0);
        let to_end = self.b.ins().icmp(IntCC::Equal, s.hi, k);
        self.b.ins().band(from_start, to_end)
    }

    /// The address of array element `base + off` (element units).
    fn elem_addr(&mut self, acc: &Access, off: ir::Value) -> ir::Value {
        let e = self.b.ins().iadd(acc.base, off);
        let bytes = self.b.ins().imul_imm_s(e, acc.elem.bytes() as i64);
        self.b.ins().iadd(acc.ptr, bytes)
    }

    /// A scalar load `A[i, j]`: zero when out of bounds.
    pub(crate) fn load_scalar(&mut self, op: &Op, kinds: &[Index]) -> Result<ir::Value, CodegenError> {
        let acc = self.access(op.args[0], kinds, &op.args[1..]);
        let c = acc.elem.compute();
        let var = self.b.declare_var(cl_type(c));
        let zero = self.const_val(tilec_midend::Const::Int(0, c), c);
        self.b.def_var(var, zero);
        let (yes, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(acc.in_bounds, yes, &[], done, &[]);
        self.b.switch_to_block(yes);
        let zero_off = self.b.ins().iconst(types::I64, 0);
        let a = self.elem_addr(&acc, zero_off);
        let v = self.load_elem(acc.elem, a);
        self.b.def_var(var, v);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(self.b.use_var(var))
    }

    /// An element of an array of `elem` at `a`, as a value of `elem`'s compute type.
    fn load_elem(&mut self, elem: Scalar, a: ir::Value) -> ir::Value {
        let v = self.b.ins().load(cl_type(elem), flags(), a, 0);
        if elem.is_half() {
            self.widen_half(elem, v)
        } else {
            v
        }
    }

    /// Stores `v` (of `elem`'s compute type) as the element of an array of `elem` at `a`.
    fn store_elem(&mut self, elem: Scalar, v: ir::Value, a: ir::Value) {
        let v = if elem.is_half() { self.narrow_half(elem, v) } else { v };
        self.b.ins().store(flags(), v, a, 0);
    }

    /// One element moved between the array of `elem` (at `ga`) and the tile (at `ta`).
    fn xfer_elem(&mut self, mode: Xfer, ga: ir::Value, ta: ir::Value, elem: Scalar) {
        let ty = cl_type(elem.compute());
        match mode {
            Xfer::Load => {
                let v = self.load_elem(elem, ga);
                self.b.ins().store(flags(), v, ta, 0);
            }
            Xfer::Store => {
                let v = self.b.ins().load(ty, flags(), ta, 0);
                self.store_elem(elem, v, ga);
            }
            Xfer::AtomicAdd => {
                let v = self.b.ins().load(ty, flags(), ta, 0);
                self.atomic_add_elem(ga, v, elem);
            }
            Xfer::StoreMasked { mask, tile } => {
                let off = self.b.ins().isub(ta, tile);
                let k = self.b.ins().ushr_imm_u(off, elem.compute().bytes().trailing_zeros() as i64);
                let ma = self.b.ins().iadd(mask, k);
                let m = self.b.ins().load(types::I8, flags(), ma, 0);
                let (yes, done) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(m, yes, &[], done, &[]);
                self.b.switch_to_block(yes);
                let v = self.b.ins().load(ty, flags(), ta, 0);
                self.store_elem(elem, v, ga);
                self.b.ins().jump(done, &[]);
                self.b.switch_to_block(done);
            }
        }
    }

    /// `*addr += v` atomically.
    fn atomic_add_elem(&mut self, addr: ir::Value, v: ir::Value, elem: Scalar) {
        self.rmw_elem(Rmw::Add, addr, v, None, elem);
    }

    /// The atomic read-modify-write `k` of the element of `elem` at `addr` with the operand
    /// `v` (and the comparand `cmp` of `Cas`); returns the old value. Integers use
    /// `atomic_rmw` and `atomic_cas`; floats work on the bits: exchanges and compare-and-swaps
    /// directly, minima and maxima as integer ones chosen by `v`'s sign ([`Rmw::Min`]), and
    /// additions as a compare-and-swap loop.
    fn rmw_elem(&mut self, k: Rmw, addr: ir::Value, v: ir::Value, cmp: Option<ir::Value>, elem: Scalar) -> ir::Value {
        let fl = MemFlagsData::new();
        let ty = cl_type(elem);
        let int_op = |signed: bool| match k {
            Rmw::Add => AtomicRmwOp::Add,
            Rmw::Xchg => AtomicRmwOp::Xchg,
            Rmw::Min if signed => AtomicRmwOp::Smin,
            Rmw::Min => AtomicRmwOp::Umin,
            Rmw::Max if signed => AtomicRmwOp::Smax,
            _ => AtomicRmwOp::Umax,
        };
        if elem.is_half() {
            return self.rmw_half(k, addr, v, cmp, elem);
        }
        if !elem.is_float() {
            if k == Rmw::Cas {
                return self.b.ins().atomic_cas(fl, addr, cmp.expect("comparand"), v);
            }
            return self.b.ins().atomic_rmw(ty, fl, int_op(elem != Scalar::U32), addr, v);
        }
        let it = if elem == Scalar::F32 { types::I32 } else { types::I64 };
        let bits = |l: &mut Self, x: ir::Value| l.b.ins().bitcast(it, MemFlagsData::new(), x);
        let float = |l: &mut Self, x: ir::Value| l.b.ins().bitcast(ty, MemFlagsData::new(), x);
        let vb = bits(self, v);
        match k {
            Rmw::Xchg => {
                let old = self.b.ins().atomic_rmw(it, fl, AtomicRmwOp::Xchg, addr, vb);
                float(self, old)
            }
            Rmw::Cas => {
                let cb = bits(self, cmp.expect("comparand"));
                let old = self.b.ins().atomic_cas(fl, addr, cb, vb);
                float(self, old)
            }
            Rmw::Min | Rmw::Max => {
                // totalOrder: a signed min (max) of the bits for a `v` with the sign bit
                // clear, an unsigned max (min) for one with it set.
                let (pos, neg, done) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
                let oldv = self.b.append_block_param(done, it);
                let set = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, vb, 0);
                self.b.ins().brif(set, neg, &[], pos, &[]);
                for (block, signed) in [(pos, true), (neg, false)] {
                    self.b.switch_to_block(block);
                    let op = if signed {
                        int_op(true)
                    } else if k == Rmw::Min {
                        AtomicRmwOp::Umax
                    } else {
                        AtomicRmwOp::Umin
                    };
                    let old = self.b.ins().atomic_rmw(it, fl, op, addr, vb);
                    self.b.ins().jump(done, &[old.into()]);
                }
                self.b.switch_to_block(done);
                float(self, oldv)
            }
            Rmw::Add => {
                let (retry, done) = (self.b.create_block(), self.b.create_block());
                let oldv = self.b.append_block_param(done, it);
                self.b.ins().jump(retry, &[]);
                self.b.switch_to_block(retry);
                let old = self.b.ins().atomic_load(it, fl, addr);
                let oldf = float(self, old);
                let newf = self.b.ins().fadd(oldf, v);
                let new = bits(self, newf);
                let seen = self.b.ins().atomic_cas(fl, addr, old, new);
                let ok = self.b.ins().icmp(IntCC::Equal, seen, old);
                self.b.ins().brif(ok, done, &[old.into()], retry, &[]);
                self.b.switch_to_block(done);
                float(self, oldv)
            }
        }
    }

    /// [`Self::rmw_elem`] on an `f16`/`bf16` element (IR [`Rmw`]): a compare-and-swap loop on
    /// its 16 bits, whose new bits are the operands rounded to the half type (`narrow_half`)
    /// and, for `Add`, the `f32` sum of the old value and the rounded operand, rounded;
    /// minima and maxima compare `totalOrder` keys of the bits. Returns the old value (`f32`).
    fn rmw_half(&mut self, k: Rmw, addr: ir::Value, v: ir::Value, cmp: Option<ir::Value>, elem: Scalar) -> ir::Value {
        let fl = MemFlagsData::new();
        let vb = self.narrow_half(elem, v);
        let cb = cmp.map(|c| self.narrow_half(elem, c));
        let (retry, done) = (self.b.create_block(), self.b.create_block());
        let cur = self.b.append_block_param(retry, types::I16);
        let first = self.b.ins().atomic_load(types::I16, fl, addr);
        self.b.ins().jump(retry, &[first.into()]);
        self.b.switch_to_block(retry);
        // totalOrder of half bits: a signed comparison of `b ^ 0x7fff` for negative `b`.
        let key = |l: &mut Self, b: ir::Value| {
            let neg = l.b.ins().icmp_imm_s(IntCC::SignedLessThan, b, 0);
            let flipped = l.b.ins().bxor_imm_s(b, 0x7fff);
            l.b.ins().select(neg, flipped, b)
        };
        let new = match k {
            Rmw::Xchg => vb,
            Rmw::Cas => {
                let same = self.b.ins().icmp(IntCC::Equal, cur, cb.expect("comparand"));
                self.b.ins().select(same, vb, cur)
            }
            Rmw::Min | Rmw::Max => {
                let (kv, kc) = (key(self, vb), key(self, cur));
                let cc = if k == Rmw::Min { IntCC::SignedLessThan } else { IntCC::SignedGreaterThan };
                let pick = self.b.ins().icmp(cc, kv, kc);
                self.b.ins().select(pick, vb, cur)
            }
            Rmw::Add => {
                let (of, vf) = (self.widen_half(elem, cur), self.widen_half(elem, vb));
                let sum = self.b.ins().fadd(of, vf);
                self.narrow_half(elem, sum)
            }
        };
        let seen = self.b.ins().atomic_cas(fl, addr, cur, new);
        let ok = self.b.ins().icmp(IntCC::Equal, seen, cur);
        self.b.ins().brif(ok, done, &[], retry, &[seen.into()]);
        self.b.switch_to_block(done);
        self.widen_half(elem, cur)
    }

    /// `AtomicRmw(k)`: the update of one element, 0 (and no update) out of bounds.
    pub(crate) fn rmw_scalar(&mut self, op: &Op, k: Rmw) -> Result<ir::Value, CodegenError> {
        let elem = self.f.ty(op.args[0]).elem();
        let rank = op.args.len() - if k == Rmw::Cas { 3 } else { 2 };
        let at = vec![Index::At; rank];
        let acc = self.access(op.args[0], &at, &op.args[1..1 + rank]);
        let n = op.args.len();
        let v = self.val(op.args[n - 1]);
        let cmp = (k == Rmw::Cas).then(|| self.val(op.args[n - 2]));
        let (yes, done) = (self.b.create_block(), self.b.create_block());
        let c = elem.compute();
        let res = self.b.append_block_param(done, cl_type(c));
        let zero = self.const_val(tilec_midend::Const::Int(0, c), c);
        self.b.ins().brif(acc.in_bounds, yes, &[], done, &[zero.into()]);
        self.b.switch_to_block(yes);
        let zero_off = self.b.ins().iconst(types::I64, 0);
        let a = self.elem_addr(&acc, zero_off);
        let old = self.rmw_elem(k, a, v, cmp, elem);
        self.b.ins().jump(done, &[old.into()]);
        self.b.switch_to_block(done);
        Ok(res)
    }

    /// Moves the in-bounds part of an access between an array and the tile at `tile`.
    fn copy_slices(&mut self, acc: &Access, tile: ir::Value, mode: Xfer) {
        let esz = acc.elem.bytes() as i64;
        // Tile elements are of the compute type (wider than storage types).
        let tsz = acc.elem.compute().bytes() as i64;
        let elem = acc.elem;
        // Storage types are converted element by element.
        let same = !elem.is_half();
        match acc.slices.len() {
            1 => {
                let s = &acc.slices[0];
                let (lo, hi, stride, extent) = (s.lo, s.hi, s.stride, s.extent);
                let done = self.b.create_block();
                let short = same && matches!(mode, Xfer::Load | Xfer::Store) && extent <= UNROLL_1D;
                if short {
                    // The whole slice in bounds: unrolled. A row (the innermost axis) with
                    // vector moves (the 16-lane rows of the compact kernels, `A[p, i, j, 0:W]`,
                    // had been moved element by element: getrf_compact_batched 1024 x 64 x 64
                    // f64 98 -> 74 ms); a column of a matrix, typically, one pointer step per
                    // element.
                    let full = self.whole(s);
                    let (fast_b, slow_b) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(full, fast_b, &[], slow_b, &[]);
                    self.b.switch_to_block(fast_b);
                    if s.unit {
                        let zero = self.b.ins().iconst(types::I64, 0);
                        let ga = self.elem_addr(acc, zero);
                        let (src, dst) = if mode == Xfer::Store { (tile, ga) } else { (ga, tile) };
                        self.copy_bytes(dst, src, extent * esz as u32);
                    } else {
                        let step = self.b.ins().imul_imm_s(stride, esz);
                        let zero = self.b.ins().iconst(types::I64, 0);
                        let mut ga = self.elem_addr(acc, zero);
                        let lanes = 16 / esz as u32;
                        let vt = crate::tile::vec_ty(elem).filter(|_| mode == Xfer::Load && extent % lanes == 0);
                        let mut pending = Vec::new();
                        for r in 0..extent {
                            if r > 0 {
                                ga = self.b.ins().iadd(ga, step);
                            }
                            match vt {
                                // Gathered into vectors and stored whole, so that the vector loads
                                // of the tile that follow are forwarded from these stores.
                                Some(vt) => {
                                    pending.push(self.b.ins().load(cl_type(elem), flags(), ga, 0));
                                    if pending.len() as u32 == lanes {
                                        let v = self.vector_of(vt, &pending);
                                        let off = ((r + 1 - lanes) as i64 * esz) as i32;
                                        self.b.ins().store(flags(), v, tile, off);
                                        pending.clear();
                                    }
                                }
                                None => {
                                    let ta = self.b.ins().iadd_imm_s(tile, r as i64 * esz);
                                    self.xfer_elem(mode, ga, ta, elem);
                                }
                            }
                        }
                    }
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(slow_b);
                }
                if same && matches!(mode, Xfer::Load | Xfer::Store) {
                    // Contiguous in the array (a row, typically): the in-bounds run with
                    // vector moves, then single elements.
                    let unit = self.b.ins().icmp_imm_s(IntCC::Equal, stride, 1);
                    self.run_when(unit, (acc, tile, mode, elem), done, |_| (lo, hi));
                }
                self.dyn_loop(lo, hi, |l, r| {
                    let off = l.b.ins().imul(r, stride);
                    let ga = l.elem_addr(acc, off);
                    let tb = l.b.ins().imul_imm_s(r, tsz);
                    let ta = l.b.ins().iadd(tile, tb);
                    l.xfer_elem(mode, ga, ta, elem);
                });
                self.b.ins().jump(done, &[]);
                self.b.switch_to_block(done);
            }
            _ => {
                let (s0, s1) = (&acc.slices[0], &acc.slices[1]);
                let cols = s1.extent;
                let (rlo, rhi, rstride) = (s0.lo, s0.hi, s0.stride);
                let (clo, chi, cstride) = (s1.lo, s1.hi, s1.stride);
                let done = self.b.create_block();
                if same && matches!(mode, Xfer::Load | Xfer::Store) {
                    // Whole rows in bounds and contiguous in the array: vector copies.
                    let full = self.whole(s1);
                    let unit = self.b.ins().icmp_imm_s(IntCC::Equal, cstride, 1);
                    let fast = self.b.ins().band(full, unit);
                    let (fast_b, slow_b) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(fast, fast_b, &[], slow_b, &[]);
                    self.b.switch_to_block(fast_b);
                    let row_bytes = esz * cols as i64;
                    // Short rows one after another in the array too (a column of a `T[N, 1]`,
                    // `W[i0:i0+256, 0:8]` of a `T[N, 8]`): the in-bounds rows as one run (the
                    // walker's 256 x 1 store had a loop step per element). Rows of 64 bytes
                    // and more keep their unrolled copies (as one run, 1000 x 32 x 32 f32 rows
                    // took 0.31 -> 0.66 ms).
                    if row_bytes < 64 {
                        let adjacent = self.b.ins().icmp_imm_s(IntCC::Equal, rstride, cols as i64);
                        self.run_when(adjacent, (acc, tile, mode, elem), done, |l| {
                            (l.b.ins().imul_imm_s(rlo, cols as i64), l.b.ins().imul_imm_s(rhi, cols as i64))
                        });
                    }
                    self.rows_loop(acc, tile, mode, row_bytes, |l, dst, src| l.copy_bytes(dst, src, row_bytes as u32));
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(slow_b);
                    // Rows partly in bounds but contiguous: the in-bounds run of each row with
                    // vector moves, then single elements.
                    let (run_b, elem_b) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(unit, run_b, &[], elem_b, &[]);
                    self.b.switch_to_block(run_b);
                    self.rows_loop(acc, tile, mode, row_bytes, |l, dst, src| l.copy_run(dst, src, clo, chi, elem));
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(elem_b);
                }
                self.dyn_loop(rlo, rhi, |l, r| {
                    l.dyn_loop(clo, chi, |l, c| {
                        let ro = l.b.ins().imul(r, rstride);
                        let co = l.b.ins().imul(c, cstride);
                        let off = l.b.ins().iadd(ro, co);
                        let ga = l.elem_addr(acc, off);
                        let t = l.b.ins().imul_imm_s(r, cols as i64);
                        let t = l.b.ins().iadd(t, c);
                        let tb = l.b.ins().imul_imm_s(t, tsz);
                        let ta = l.b.ins().iadd(tile, tb);
                        l.xfer_elem(mode, ga, ta, elem);
                    });
                });
                self.b.ins().jump(done, &[]);
                self.b.switch_to_block(done);
            }
        }
    }

    /// `Load`, `LoadInto` and `Store` of tiles, and scalar stores.
    pub(crate) fn memory_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        match &op.kind {
            // Left for its `map`, which reads it in place (`slot_layout_operand`).
            OpKind::Load(_) if self.direct.contains(&op.results[0]) => {
                self.pending.insert(op.results[0], op.clone());
            }
            OpKind::Load(kinds) => {
                let acc = self.access(op.args[0], kinds, &op.args[1..]);
                let dst = self.tile_addr(op.results[0]);
                self.load_into_slot(&acc, dst, self.f.ty(op.results[0]).tile_len());
            }
            OpKind::LoadInto(kinds) => {
                let acc = self.access(op.args[1], kinds, &op.args[2..]);
                self.copy_tile_to_result(op.args[0], op.results[0]);
                let dst = self.tile_addr(op.results[0]);
                self.copy_slices(&acc, dst, Xfer::Load);
            }
            OpKind::Store(kinds) | OpKind::AtomicAdd(kinds) => {
                let n = kinds.len();
                let value = op.args[1 + n];
                let acc = self.access(op.args[0], kinds, &op.args[1..1 + n]);
                let atomic = matches!(op.kind, OpKind::AtomicAdd(_));
                let mode = if atomic { Xfer::AtomicAdd } else { Xfer::Store };
                if self.f.ty(value).is_tile() {
                    let src = self.tile_addr(value);
                    self.copy_slices(&acc, src, mode);
                } else if atomic {
                    let v = self.val(value);
                    let (yes, done) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(acc.in_bounds, yes, &[], done, &[]);
                    self.b.switch_to_block(yes);
                    let zero = self.b.ins().iconst(types::I64, 0);
                    let a = self.elem_addr(&acc, zero);
                    self.atomic_add_elem(a, v, acc.elem);
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(done);
                } else {
                    let v = self.val(value);
                    let (yes, done) = (self.b.create_block(), self.b.create_block());
                    self.b.ins().brif(acc.in_bounds, yes, &[], done, &[]);
                    self.b.switch_to_block(yes);
                    let zero = self.b.ins().iconst(types::I64, 0);
                    let a = self.elem_addr(&acc, zero);
                    self.store_elem(acc.elem, v, a);
                    self.b.ins().jump(done, &[]);
                    self.b.switch_to_block(done);
                }
            }
            OpKind::StoreMasked(kinds) => {
                let n = kinds.len();
                let acc = self.access(op.args[0], kinds, &op.args[1..1 + n]);
                let (tile, mask) = (self.tile_addr(op.args[1 + n]), self.tile_addr(op.args[2 + n]));
                self.copy_slices(&acc, tile, Xfer::StoreMasked { mask, tile });
            }
            _ => unreachable!("memory_op on {:?}", op.kind),
        }
        Ok(())
    }

    /// A counted loop `for i in lo..hi` (i64 bounds) around `body`.
    pub(crate) fn dyn_loop(&mut self, lo: ir::Value, hi: ir::Value, mut body: impl FnMut(&mut Self, ir::Value)) {
        let var = self.b.declare_var(types::I64);
        self.b.def_var(var, lo);
        let (header, blk, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(var);
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i, hi);
        self.b.ins().brif(c, blk, &[], exit, &[]);
        self.b.switch_to_block(blk);
        let i = self.b.use_var(var);
        body(self, i);
        let next = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(var, next);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
    }

    /// `body(i, in_loop)` for `i` in `0..n` (`n` static): `u` bodies per iteration of a loop
    /// tested at its bottom (`n / u` iterations, `in_loop` true, `i` derived from the loop's
    /// counter), then the `n % u` bodies left in straight-line code (`in_loop` false, `i` a
    /// constant).
    pub(crate) fn unrolled_loop(&mut self, n: u32, u: u32, mut body: impl FnMut(&mut Self, ir::Value, bool)) {
        let u = u.max(1);
        let main = n / u * u;
        if main > 0 {
            let var = self.b.declare_var(types::I64);
            let zero = self.b.ins().iconst(types::I64, 0);
            self.b.def_var(var, zero);
            let (blk, exit) = (self.b.create_block(), self.b.create_block());
            self.b.ins().jump(blk, &[]);
            self.b.switch_to_block(blk);
            let i = self.b.use_var(var);
            for j in 0..u {
                let ij = if j == 0 { i } else { self.b.ins().iadd_imm_s(i, j as i64) };
                body(self, ij, true);
            }
            let next = self.b.ins().iadd_imm_s(i, u as i64);
            self.b.def_var(var, next);
            let hi = self.b.ins().iconst(types::I64, main as i64);
            let c = self.b.ins().icmp(IntCC::SignedLessThan, next, hi);
            self.b.ins().brif(c, blk, &[], exit, &[]);
            self.b.switch_to_block(exit);
        }
        for j in main..n {
            let ij = self.b.ins().iconst(types::I64, j as i64);
            body(self, ij, false);
        }
    }

    /// Where `cond` holds, elements `lo..hi` of `acc` (counted from its first element; `span`
    /// computes them there) and of the tile moved as `mode` says, as one contiguous run
    /// (`copy_run`), then on to `done`; the code emitted after this runs where `cond` does not
    /// hold.
    fn run_when(
        &mut self,
        cond: ir::Value,
        (acc, tile, mode, elem): (&Access, ir::Value, Xfer, Scalar),
        done: ir::Block,
        span: impl FnOnce(&mut Self) -> (ir::Value, ir::Value),
    ) {
        let (run_b, other_b) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(cond, run_b, &[], other_b, &[]);
        self.b.switch_to_block(run_b);
        let zero = self.b.ins().iconst(types::I64, 0);
        let ga = self.elem_addr(acc, zero);
        let (src, dst) = if mode == Xfer::Store { (tile, ga) } else { (ga, tile) };
        let (lo, hi) = span(self);
        self.copy_run(dst, src, lo, hi, elem);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(other_b);
    }

    /// For each in-bounds row of a 2-D access, `body(dst, src)` with the addresses of the row's
    /// first element in the array and in the tile (rows `row_bytes` apart), as `mode` moves it.
    fn rows_loop(
        &mut self,
        acc: &Access,
        tile: ir::Value,
        mode: Xfer,
        row_bytes: i64,
        mut body: impl FnMut(&mut Self, ir::Value, ir::Value),
    ) {
        let s0 = &acc.slices[0];
        let (rlo, rhi, rstride) = (s0.lo, s0.hi, s0.stride);
        self.dyn_loop(rlo, rhi, |l, r| {
            let off = l.b.ins().imul(r, rstride);
            let ga = l.elem_addr(acc, off);
            let tb = l.b.ins().imul_imm_s(r, row_bytes);
            let ta = l.b.ins().iadd(tile, tb);
            let (src, dst) = if mode == Xfer::Store { (ta, ga) } else { (ga, ta) };
            body(l, dst, src);
        });
    }

    /// Copies elements `lo..hi` (i64 values) of a contiguous run from `src` to `dst` (both the
    /// address of element 0): 16-byte vector moves, then single elements.
    pub(crate) fn copy_run(&mut self, dst: ir::Value, src: ir::Value, lo: ir::Value, hi: ir::Value, elem: Scalar) {
        let esz = elem.bytes() as i64;
        let per = 16 / esz;
        let len = self.b.ins().isub(hi, lo);
        let chunks = self.b.ins().sshr_imm_u(len, per.trailing_zeros() as i64);
        let zero = self.b.ins().iconst(types::I64, 0);
        let first = self.b.ins().imul_imm_s(lo, esz);
        let (src0, dst0) = (self.b.ins().iadd(src, first), self.b.ins().iadd(dst, first));
        self.dyn_loop(zero, chunks, |l, q| {
            let o = l.b.ins().imul_imm_s(q, 16);
            let (s, d) = (l.b.ins().iadd(src0, o), l.b.ins().iadd(dst0, o));
            let v = l.b.ins().load(types::I8X16, flags(), s, 0);
            l.b.ins().store(flags(), v, d, 0);
        });
        let done = self.b.ins().imul_imm_s(chunks, per);
        let tail = self.b.ins().iadd(lo, done);
        self.dyn_loop(tail, hi, |l, c| {
            let o = l.b.ins().imul_imm_s(c, esz);
            let (s, d) = (l.b.ins().iadd(src, o), l.b.ins().iadd(dst, o));
            let v = l.b.ins().load(cl_type(elem), flags(), s, 0);
            l.b.ins().store(flags(), v, d, 0);
        });
    }

    /// Copies `bytes` from `src` to `dst` with 16-byte vector moves (4-byte and 1-byte moves
    /// for the rest).
    pub(crate) fn copy_bytes(&mut self, dst: ir::Value, src: ir::Value, bytes: u32) {
        let mut off = 0u32;
        while off + 16 <= bytes {
            let v = self.b.ins().load(types::I8X16, flags(), src, off as i32);
            self.b.ins().store(flags(), v, dst, off as i32);
            off += 16;
        }
        while off + 4 <= bytes {
            let v = self.b.ins().load(types::I32, flags(), src, off as i32);
            self.b.ins().store(flags(), v, dst, off as i32);
            off += 4;
        }
        while off < bytes {
            let v = self.b.ins().load(types::I8, flags(), src, off as i32);
            self.b.ins().store(flags(), v, dst, off as i32);
            off += 1;
        }
    }

    /// Zeroes `bytes` (a multiple of 4) at `dst`.
    pub(crate) fn zero_bytes(&mut self, dst: ir::Value, bytes: u32) {
        let z = self.b.ins().iconst(types::I64, 0);
        let zv = self.b.ins().splat(types::I64X2, z);
        let z32 = self.b.ins().iconst(types::I32, 0);
        let mut off = 0u32;
        while off + 16 <= bytes {
            self.b.ins().store(flags(), zv, dst, off as i32);
            off += 16;
        }
        while off + 4 <= bytes {
            self.b.ins().store(flags(), z32, dst, off as i32);
            off += 4;
        }
    }

    /// Makes the result tile hold the operand's value (a copy unless they share a slot).
    pub(crate) fn copy_tile_to_result(&mut self, operand: Value, result: Value) {
        if self.same_slot(operand, result) {
            return;
        }
        let src = self.tile_addr(operand);
        let dst = self.tile_addr(result);
        let bytes = self.f.ty(result).tile_len() * self.f.ty(result).elem().bytes();
        self.copy_bytes(dst, src, bytes);
    }
}
