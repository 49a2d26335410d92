//! Lowering of one kernel function to Cranelift IR: parameters from the argument block,
//! structured control flow to blocks (loop-carried scalars become Cranelift variables, carried
//! tiles share stack slots), and dispatch of every operation to `scalar.rs`, `tile.rs` and
//! `memory.rs`.

use crate::slots::{self, Slots};
use crate::{err, CodegenError};
use cranelift_codegen::ir::{
    self, types, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{Linkage, Module as ClModule};
use std::collections::{HashMap, HashSet};
use tilec_midend::fusion::LeftOperand;
use tilec_midend::{Function, Kernel, Op, OpKind, Region, Scalar, Type, Value};

/// How an IR value is held in Cranelift code.
#[derive(Clone)]
pub(crate) enum Held {
    Val(ir::Value),
    Var(Variable),
    Tile,
    Array { ptr: ir::Value, dims: Vec<ir::Value> },
}

/// The Cranelift type of a scalar (booleans are `i8` holding 0 or 1).
pub(crate) fn cl_type(s: Scalar) -> ir::Type {
    match s {
        Scalar::Bool => types::I8,
        Scalar::I32 | Scalar::U32 => types::I32,
        Scalar::I64 => types::I64,
        Scalar::F32 => types::F32,
        Scalar::F64 => types::F64,
        // Storage types: their bits (values are computed in f32).
        Scalar::F16 | Scalar::BF16 => types::I16,
    }
}

/// Most bytes of tile storage one program may use (its threads have 64 MiB stacks).
const MAX_FRAME: u64 = 32 << 20;

/// The error for a kernel whose programs need `frame` bytes of tile storage, above
/// [`MAX_FRAME`] (both CPU backends).
pub(crate) fn check_frame(k: &Kernel, frame: u64) -> Result<(), CodegenError> {
    if frame > MAX_FRAME {
        return Err(err(format!(
            "kernel `{}` needs {frame} bytes of tile storage per program, more than {MAX_FRAME}",
            k.name
        )));
    }
    Ok(())
}

/// The translation state of one function.
pub(crate) struct Lower<'b, 'm, M: ClModule> {
    pub(crate) b: FunctionBuilder<'b>,
    module: &'m mut M,
    pub(crate) f: &'b Function,
    held: HashMap<Value, Held>,
    pub(crate) slots: Slots,
    slot_ids: Vec<StackSlot>,
    exit: Block,
    ids: ir::Value,
    /// For a launch function: where `Return` writes the grid (`int64_t[3]`) and the flops.
    results: Option<(ir::Value, ir::Value)>,
    pub(crate) fma: bool,
    libm: HashMap<&'static str, FuncRef>,
    /// How many operands (in all regions) refer to each value.
    uses: HashMap<Value, usize>,
    /// Left operands of products read in place (`tilec_midend::fusion::left_operands`):
    /// the product's operand -> the tile it reads, transposed and/or negated.
    pub(crate) left_views: HashMap<Value, LeftOperand>,
    /// The `transpose`/`neg` results that those products read through and that are not formed.
    unformed: HashSet<Value>,
    /// Tile loads that their reader reads from the array (`in_place_loads`).
    pub(crate) direct: HashSet<Value>,
    /// Those loads reached so far, not yet read: their ops, lowered at the reader.
    pub(crate) pending: HashMap<Value, Op>,
    /// Element-wise ops computed by their reader (`chains.rs`).
    pub(crate) chains: crate::chains::Chains,
    /// The array indices proven in bounds, whose checks are left out.
    pub(crate) bounds: tilec_midend::bounds::Bounds,
}

/// The results of tile loads read in place (`tilec_midend::fusion::map_loads`; of those,
/// `memory_op` leaves the `load`s, not the `load_into`s, to their reader): a `map` reads
/// 1-D tiles so, a `Bin` or `Un` 1-D and 2-D ones, from the array where the tile lies inside
/// it, else from the load's own slot, filled there with the load's bounds rules
/// (`Lower::slot_layout_operand`, `Lower::view_operand`). One pass over the tile instead of a copy and
/// a pass.
fn in_place_loads(f: &Function, uses: &HashMap<Value, usize>) -> HashSet<Value> {
    fn walk(r: &tilec_midend::Region, f: &Function, cands: &HashSet<Value>, out: &mut HashSet<Value>) {
        for op in &r.ops {
            let row = |a: &Value| matches!(f.ty(*a), Type::Tile { shape, .. } if shape.len() == 1);
            match op.kind {
                OpKind::Map => out.extend(op.args.iter().filter(|a| cands.contains(a) && row(a))),
                OpKind::Bin(_) | OpKind::Un(_) => out.extend(op.args.iter().filter(|a| cands.contains(a))),
                _ => {}
            }
            for reg in &op.regions {
                walk(reg, f, cands, out);
            }
        }
    }
    let cands = tilec_midend::fusion::map_loads(f, uses);
    let mut out = HashSet::new();
    walk(&f.body, f, &cands, &mut out);
    out
}

/// Translates a kernel's body function `f` (signature: `args`, `ids`), or its launch function
/// (signature: `args`, `grid`, `flops`; its `Return` stores the three grid extents as
/// `int64_t` and the flop count as a `double`), into `func`. `launch` is the kernel's launch
/// function (its grid bounds `program_id`).
pub(crate) fn lower_function<M: ClModule>(
    module: &mut M,
    func: &mut ir::Function,
    f: &Function,
    k: &Kernel,
    launch: &Function,
) -> Result<(), CodegenError> {
    let mut fctx = FunctionBuilderContext::new();
    let b = FunctionBuilder::new(func, &mut fctx);
    let mut uses = HashMap::new();
    f.body.count_uses(&mut uses);
    let (left_views, unformed) = tilec_midend::fusion::left_operands(f, &uses);
    let chains = crate::chains::find(f, &uses, &unformed);
    let slots = slots::assign(f, &left_views, &chains);
    let mut direct = in_place_loads(f, &uses);
    direct.extend(tilec_midend::fusion::packed_left_operands(f, &uses, &left_views, &unformed));
    let mut l = Lower {
        b,
        module,
        f,
        held: HashMap::new(),
        slots,
        slot_ids: Vec::new(),
        exit: Block::from_u32(0),
        ids: ir::Value::from_u32(0),
        results: None,
        fma: crate::isa::host_has_fma(),
        libm: HashMap::new(),
        uses,
        left_views,
        unformed,
        direct,
        pending: HashMap::new(),
        chains,
        bounds: tilec_midend::bounds::Bounds::of(k, f, launch),
    };
    let entry = l.b.create_block();
    l.b.append_block_params_for_function_params(entry);
    l.b.switch_to_block(entry);
    let args = l.b.block_params(entry)[0];
    l.ids = l.b.block_params(entry)[1];
    if f.kind == tilec_midend::FuncKind::Launch {
        let params = l.b.block_params(entry);
        l.results = Some((params[1], params[2]));
    }
    l.exit = l.b.create_block();
    check_frame(k, l.slots.sizes.iter().map(|s| *s as u64).sum())?;
    for size in l.slots.sizes.clone() {
        let s = l.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, size, 4));
        l.slot_ids.push(s);
    }
    // Parameters from the argument block.
    let mut off = 0i32;
    if f.body.params.len() != k.params.len() {
        return Err(err("kernel parameters do not match its body function"));
    }
    for p in &f.body.params {
        match f.ty(*p).clone() {
            Type::Array { rank, .. } => {
                let ptr = l.b.ins().load(types::I64, MemFlagsData::trusted(), args, off);
                let mut dims = Vec::new();
                for d in 0..rank as i32 {
                    dims.push(l.b.ins().load(types::I64, MemFlagsData::trusted(), args, off + 8 * (d + 1)));
                }
                off += 8 * (1 + rank as i32);
                l.held.insert(*p, Held::Array { ptr, dims });
            }
            Type::Scalar(s) => {
                let v = l.b.ins().load(cl_type(s), MemFlagsData::trusted(), args, off);
                off += 8;
                l.held.insert(*p, Held::Val(v));
            }
            Type::Tile { .. } | Type::Mat { .. } => return Err(err("a kernel parameter cannot be a tile")),
        }
    }
    l.region(&f.body)?;
    l.b.ins().jump(l.exit, &[]);
    l.b.switch_to_block(l.exit);
    l.b.ins().return_(&[]);
    l.b.seal_all_blocks();
    let cfg = l.module.isa().frontend_config();
    l.b.finalize(cfg);
    Ok(())
}

impl<M: ClModule> Lower<'_, '_, M> {
    /// The scalar value of `v` here.
    pub(crate) fn val(&mut self, v: Value) -> ir::Value {
        match &self.held[&v] {
            Held::Val(x) => *x,
            Held::Var(var) => {
                let var = *var;
                self.b.use_var(var)
            }
            _ => panic!("%{} is not a scalar", v.0),
        }
    }

    /// The address of the stack slot of tile `v`.
    pub(crate) fn tile_addr(&mut self, v: Value) -> ir::Value {
        let s = self.slots.of[&v];
        self.b.ins().stack_addr(types::I64, self.slot_ids[s], 0)
    }

    /// A fresh 16-byte aligned stack area of `bytes` bytes, outside the tile slots (its
    /// address): staging copies and the factorizations' scratch tiles.
    pub(crate) fn scratch(&mut self, bytes: u32) -> ir::Value {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes.max(16), 4));
        self.b.ins().stack_addr(types::I64, slot, 0)
    }

    /// The pointer to the six program ids and grid extents.
    pub(crate) fn ids_ptr(&self) -> ir::Value {
        self.ids
    }

    /// Whether tiles `a` and `b` share a slot.
    pub(crate) fn same_slot(&self, a: Value, b: Value) -> bool {
        self.slots.of.get(&a) == self.slots.of.get(&b)
    }

    /// The array data pointer and extents of `v`.
    pub(crate) fn array(&self, v: Value) -> (ir::Value, Vec<ir::Value>) {
        match &self.held[&v] {
            Held::Array { ptr, dims } => (*ptr, dims.clone()),
            _ => panic!("%{} is not an array", v.0),
        }
    }

    /// `map`: the region applied to every element, in a loop over the tile.
    fn map(&mut self, op: &Op) -> Result<(), CodegenError> {
        let t = self.f.ty(op.args[0]).clone();
        let de = self.f.ty(op.results[0]).elem();
        let srcs: Vec<(ir::Value, Scalar)> =
            op.args.iter().map(|a| (self.slot_layout_operand(*a), self.f.ty(*a).elem())).collect();
        let dst = self.tile_addr(op.results[0]);
        // Whole vectors first (`vmap.rs`), then the elements left one by one.
        let done = match crate::vmap::lane_bytes(self.f, op) {
            Some(bytes) => self.map_vectors(op, bytes, &srcs)?,
            None => 0,
        };
        if done == t.tile_len() {
            return Ok(());
        }
        let lo = self.b.ins().iconst(types::I64, done as i64);
        let hi = self.b.ins().iconst(types::I64, t.tile_len() as i64);
        let r = &op.regions[0];
        let mut res = Ok(());
        self.dyn_loop(lo, hi, |l, i| {
            // Every operand's element is read before the result's is written (the result may
            // share the first operand's storage).
            for ((src, se), p) in srcs.iter().zip(&r.params) {
                let sa = l.b.ins().imul_imm_s(i, se.bytes() as i64);
                let sa = l.b.ins().iadd(*src, sa);
                let x = l.b.ins().load(cl_type(*se), crate::memory::flags(), sa, 0);
                l.bind(*p, x);
            }
            match l.region_yield(r) {
                Ok(Some(ys)) => {
                    let y = l.val(ys[0]);
                    let da = l.b.ins().imul_imm_s(i, de.bytes() as i64);
                    let da = l.b.ins().iadd(dst, da);
                    l.b.ins().store(crate::memory::flags(), y, da, 0);
                }
                Ok(None) => res = Err(err("`map` region does not yield")),
                Err(e) => res = Err(e),
            }
        });
        res
    }

    pub(crate) fn bind(&mut self, v: Value, x: ir::Value) {
        self.held.insert(v, Held::Val(x));
    }

    /// How `v` is held now (to be put back with [`Self::rebind`]).
    pub(crate) fn held_of(&self, v: Value) -> Held {
        self.held[&v].clone()
    }

    pub(crate) fn rebind(&mut self, v: Value, h: Held) {
        self.held.insert(v, h);
    }

    fn bind_tile(&mut self, v: Value) {
        self.held.insert(v, Held::Tile);
    }

    /// A C library function `name` taking and returning one `ty`.
    pub(crate) fn libm(&mut self, name: &'static str, ty: ir::Type) -> Result<FuncRef, CodegenError> {
        if let Some(r) = self.libm.get(name) {
            return Ok(*r);
        }
        let mut sig = self.module.make_signature();
        sig.params.push(AbiParam::new(ty));
        sig.returns.push(AbiParam::new(ty));
        let id = self.module.declare_function(name, Linkage::Import, &sig).map_err(err)?;
        let r = self.module.declare_func_in_func(id, self.b.func);
        self.libm.insert(name, r);
        Ok(r)
    }

    fn region(&mut self, r: &Region) -> Result<(), CodegenError> {
        let mut i = 0;
        while i < r.ops.len() {
            i += self.op_or_fused(&r.ops[i..]).map_err(|e| e.at(r.ops[i].loc))?;
        }
        Ok(())
    }

    /// Lowers `ops[0]`, or `ops[0]` and `ops[1]` together when they fuse (`t - a @ b` whose
    /// product is used only by the subtraction: see `matmul_sub`); returns how many ops it took.
    fn op_or_fused(&mut self, ops: &[Op]) -> Result<usize, CodegenError> {
        if let [mm, sub, ..] = ops {
            if self.fuses_as_matmul_sub(mm, sub) {
                self.bind_tile(mm.results[0]);
                self.bind_tile(sub.results[0]);
                let s = self.f.ty(sub.results[0]).elem();
                self.matmul_sub(mm, sub, s)?;
                return Ok(2);
            }
        }
        self.op(&ops[0])?;
        Ok(1)
    }

    fn fuses_as_matmul_sub(&self, mm: &Op, sub: &Op) -> bool {
        if !tilec_midend::fusion::is_matmul_sub(self.f, &self.uses, mm, sub) {
            return false;
        }
        // The tile the product reads as its left operand (in place, `left_views`).
        let source = self.left_views.get(&mm.args[0]).map_or(mm.args[0], |v| v.source);
        !self.same_slot(sub.results[0], source) && !self.same_slot(sub.results[0], mm.args[1])
    }

    /// Copies tile `from` into the slot of `to` unless they share it.
    fn copy_into_slot(&mut self, from: Value, to_slot: slots::SlotId) {
        if self.slots.of[&from] == to_slot {
            return;
        }
        let src = self.tile_addr(from);
        let dst = self.b.ins().stack_addr(types::I64, self.slot_ids[to_slot], 0);
        let bytes = self.f.ty(from).tile_len() * self.f.ty(from).elem().bytes();
        self.copy_bytes(dst, src, bytes);
    }

    /// Yields `vals` into carried variables and slots: scalars to `vars`, tiles to `slots`,
    /// staging through temporaries when a source slot is another carried value's destination.
    fn yield_to(&mut self, vals: &[Value], targets: &[Carried]) {
        let scalars: Vec<(Variable, ir::Value)> = vals
            .iter()
            .zip(targets)
            .filter_map(|(v, t)| match t {
                Carried::Var(var) => Some((*var, *v)),
                Carried::Slot(_) => None,
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|(var, v)| (var, self.val(v)))
            .collect();
        let dsts: Vec<slots::SlotId> =
            targets.iter().filter_map(|t| if let Carried::Slot(s) = t { Some(*s) } else { None }).collect();
        let moves: Vec<(Value, slots::SlotId)> = vals
            .iter()
            .zip(targets)
            .filter_map(|(v, t)| match t {
                Carried::Slot(s) if self.slots.of[v] != *s => Some((*v, *s)),
                _ => None,
            })
            .collect();
        let conflict = moves.iter().any(|(v, s)| dsts.iter().any(|d| d != s && *d == self.slots.of[v]));
        if conflict {
            // Stage every move through a temporary so no source is overwritten early.
            let mut staged = Vec::new();
            for (v, s) in &moves {
                let bytes = self.f.ty(*v).tile_len() * self.f.ty(*v).elem().bytes();
                let src = self.tile_addr(*v);
                let tmp = self.scratch(bytes);
                self.copy_bytes(tmp, src, bytes);
                staged.push((tmp, *s, bytes));
            }
            for (src, s, bytes) in staged {
                let dst = self.b.ins().stack_addr(types::I64, self.slot_ids[s], 0);
                self.copy_bytes(dst, src, bytes);
            }
        } else {
            for (v, s) in moves {
                self.copy_into_slot(v, s);
            }
        }
        for (var, x) in scalars {
            self.b.def_var(var, x);
        }
    }

    /// Sets up carried values of a loop or an if: a variable per scalar, the shared slot per
    /// tile (`results[k]`'s slot).
    fn carried(&mut self, results: &[Value]) -> Vec<Carried> {
        results
            .iter()
            .map(|r| match self.f.ty(*r) {
                Type::Tile { .. } => Carried::Slot(self.slots.of[r]),
                t => Carried::Var(self.b.declare_var(cl_type(t.elem()))),
            })
            .collect()
    }

    fn bind_carried(&mut self, params: &[Value], carried: &[Carried]) {
        for (p, c) in params.iter().zip(carried) {
            match c {
                Carried::Var(var) => {
                    self.held.insert(*p, Held::Var(*var));
                }
                Carried::Slot(_) => self.bind_tile(*p),
            }
        }
    }

    /// After a terminator, continues in a fresh unreachable block.
    fn fresh_block(&mut self) {
        let b = self.b.create_block();
        self.b.switch_to_block(b);
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

    fn op(&mut self, op: &Op) -> Result<(), CodegenError> {
        if op.results.first().is_some_and(|r| self.unformed.contains(r) || self.chains.ops.contains_key(r)) {
            // Read in place by its product (`left_views`), or computed by its element-wise
            // reader (`chains`).
            return Ok(());
        }
        match &op.kind {
            OpKind::For => self.for_loop(op),
            OpKind::While => self.while_loop(op),
            OpKind::If => self.if_op(op),
            OpKind::Return => {
                if let Some((grid, flops)) = self.results {
                    if op.args.len() != 4 {
                        return Err(err("a launch function returns the grid and the flops"));
                    }
                    for (i, a) in op.args[..3].iter().enumerate() {
                        let x = self.val(*a);
                        self.b.ins().store(MemFlagsData::trusted(), x, grid, 8 * i as i32);
                    }
                    let x = self.val(op.args[3]);
                    self.b.ins().store(MemFlagsData::trusted(), x, flops, 0);
                }
                let exit = self.exit;
                self.b.ins().jump(exit, &[]);
                self.fresh_block();
                Ok(())
            }
            OpKind::Yield => Err(err("yield outside a structured region")),
            // Programs run on one thread each on the CPU: shared arrays need no barrier.
            OpKind::Barrier => Ok(()),
            OpKind::AllocShared(shape) => {
                let s = self.slots.of[&op.results[0]];
                let ptr = self.b.ins().stack_addr(types::I64, self.slot_ids[s], 0);
                let bytes = shape.iter().product::<u32>() * self.f.ty(op.results[0]).elem().bytes();
                self.zero_bytes(ptr, bytes);
                let dims = shape.iter().map(|d| self.b.ins().iconst(types::I64, *d as i64)).collect();
                self.held.insert(op.results[0], Held::Array { ptr, dims });
                Ok(())
            }
            OpKind::Map => {
                self.bind_tile(op.results[0]);
                self.map(op)
            }
            OpKind::AtomicAdd(_) | OpKind::StoreMasked(_) => self.memory_op(op),
            OpKind::Call(_) => Err(err("calls must be inlined before CPU code generation")),
            _ => {
                for res in &op.results {
                    if self.f.ty(*res).is_tile() {
                        self.bind_tile(*res);
                    }
                }
                if op.results.iter().any(|r| self.f.ty(*r).is_tile()) || matches!(op.kind, OpKind::Store(_)) {
                    self.tile_op(op)
                } else {
                    self.scalar_op(op)
                }
            }
        }
    }

    fn for_loop(&mut self, op: &Op) -> Result<(), CodegenError> {
        let (lo, hi, step) = (self.val(op.args[0]), self.val(op.args[1]), self.val(op.args[2]));
        let ity = cl_type(self.f.ty(op.args[0]).elem());
        let carried = self.carried(&op.results);
        // Initial values.
        self.yield_to(&op.args[3..], &carried);
        let iv = self.b.declare_var(ity);
        self.b.def_var(iv, lo);
        let (header, body, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(iv);
        let c = self.b.ins().icmp(ir::condcodes::IntCC::SignedLessThan, i, hi);
        self.b.ins().brif(c, body, &[], exit, &[]);
        self.b.switch_to_block(body);
        let r = &op.regions[0];
        let i = self.b.use_var(iv);
        self.bind(r.params[0], i);
        self.bind_carried(&r.params[1..], &carried);
        if let Some(ys) = self.region_yield(r)? {
            self.yield_to(&ys, &carried);
        }
        let i = self.b.use_var(iv);
        let next = self.b.ins().iadd(i, step);
        self.b.def_var(iv, next);
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
        self.bind_carried(&op.results, &carried);
        Ok(())
    }

    fn while_loop(&mut self, op: &Op) -> Result<(), CodegenError> {
        let carried = self.carried(&op.results);
        self.yield_to(&op.args, &carried);
        let (header, body, exit) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        self.bind_carried(&op.regions[0].params, &carried);
        match self.region_yield(&op.regions[0])? {
            Some(c) => {
                let c = self.val(c[0]);
                self.b.ins().brif(c, body, &[], exit, &[]);
            }
            None => {
                self.b.ins().jump(exit, &[]);
            }
        }
        self.b.switch_to_block(body);
        self.bind_carried(&op.regions[1].params, &carried);
        if let Some(ys) = self.region_yield(&op.regions[1])? {
            self.yield_to(&ys, &carried);
        }
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(exit);
        self.bind_carried(&op.results, &carried);
        Ok(())
    }

    fn if_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let c = self.val(op.args[0]);
        let carried = self.carried(&op.results);
        let (then, els, merge) = (self.b.create_block(), self.b.create_block(), self.b.create_block());
        self.b.ins().brif(c, then, &[], els, &[]);
        for (blk, r) in [(then, &op.regions[0]), (els, &op.regions[1])] {
            self.b.switch_to_block(blk);
            if let Some(ys) = self.region_yield(r)? {
                self.yield_to(&ys, &carried);
            }
            self.b.ins().jump(merge, &[]);
        }
        self.b.switch_to_block(merge);
        self.bind_carried(&op.results, &carried);
        Ok(())
    }
}

/// Where a carried value lives across a loop or if.
#[derive(Clone, Copy)]
pub(crate) enum Carried {
    Var(Variable),
    Slot(slots::SlotId),
}
