//! Lowering of a kernel from Tile IR (after the pass pipeline) to SIMT form: every tile value
//! becomes per-lane registers (see the module docs for the layouts), every tile operation
//! becomes per-lane scalar operations and shuffles of registers with static indices.

use super::{SimtError, SimtKernel};
use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;

/// A lowered value.
#[derive(Debug, Clone)]
pub(super) enum Lv {
    Scalar(Value),
    Array(Value),
    /// A row-distributed `rows x cols` tile: `regs[s * cols + c]` is row `lane + s * lanes`.
    Mat {
        rows: u32,
        cols: u32,
        elem: Scalar,
        regs: Vec<Value>,
    },
    /// A replicated vector of `n` elements, with its row-distributed form when known.
    Vec {
        n: u32,
        elem: Scalar,
        rep: Vec<Value>,
        dist: Option<Vec<Value>>,
    },
    /// A distributed vector of `n` elements (`n > DIST_ABOVE`, or a length the kernel uses
    /// only element-wise: `dist.rs`): `regs[s]` is element `lane + s * lanes`.
    Dist {
        n: u32,
        elem: Scalar,
        regs: Vec<Value>,
    },
}

pub(super) fn err(m: impl Into<String>) -> SimtError {
    SimtError { message: m.into() }
}

pub(super) struct Lower<'a> {
    pub(super) src: &'a Function,
    pub(super) out: Function,
    pub(super) lanes: u32,
    pub(super) map: HashMap<Value, Lv>,
    stack: Vec<Vec<Op>>,
    pub(super) lane: Value,
    /// `rows[s] = lane + s * lanes`, computed at entry for every row slot used.
    pub(super) rows: Vec<Value>,
    /// `partners[k] = lane ^ 2^k` for a power-of-two lane count (the butterfly of
    /// `across_lanes`), computed at entry (unused ones are removed as dead code).
    pub(super) partners: Vec<Value>,
    /// `low_bits[k] = (lane & 2^k) == 0`, next to `partners`.
    pub(super) low_bits: Vec<Value>,
    /// One shared array per element type for every `Reshape` of that type (`reshape.rs`),
    /// allocated at entry with the largest such reshape's element count: a reshape ends with
    /// a barrier, so the next one may reuse the array.
    pub(super) scratch: HashMap<Scalar, Value>,
    /// Inside the region of a `map` that stores (a scatter, `ops.rs` `map_op`): whether this
    /// lane owns the element being lowered (it holds a real, not a padding or replicated,
    /// copy of it). A scalar store there is made by the owner, not by lane 0.
    pub(super) owner: Option<Value>,
    /// With `owner`: the lane whose atomic result every lane takes (a replicated vector's
    /// element, held by every lane), or `None` when only the owner holds the element.
    pub(super) owner_lane: Option<Value>,
    /// `transpose(t)` results only stored, with their `t`: stored transposed, with no
    /// shuffles (`transpose.rs`).
    pub(super) stored_t: HashMap<Value, Value>,
    /// Products whose right operand is staged through the scratch arrays (`staged.rs`).
    pub(super) staging: super::staged::Staging,
    /// The lengths of 1-D tiles of at most 64 elements that this kernel keeps replicated
    /// (`dist.rs`, `replicated_lengths`); it distributes the others.
    pub(super) replicated: std::collections::HashSet<u32>,
    loc: Loc,
}

/// The largest element count of a `Reshape` result of each element type in `r` and its
/// nested regions.
fn reshape_sizes(f: &Function, r: &Region, out: &mut HashMap<Scalar, u32>) {
    for op in &r.ops {
        if op.kind == OpKind::Reshape {
            if let Type::Tile { elem, shape } = f.ty(op.results[0]) {
                let n = out.entry(*elem).or_insert(0);
                *n = (*n).max(shape.iter().product());
            }
        }
        for reg in &op.regions {
            reshape_sizes(f, reg, out);
        }
    }
}

/// Lowers kernel `k` of module `m` (after the pass pipeline) to SIMT form for subgroups of
/// `lanes` lanes (1 to 64), with every product's right operand broadcast by shuffles (the
/// SPIR-V form). Errors: an unsupported lane count, an op with no SIMT lowering.
pub fn lower_kernel(m: &Module, k: &Kernel, lanes: u32) -> Result<SimtKernel, SimtError> {
    lower_kernel_with(m, k, lanes, false)
}

/// [`lower_kernel`], with `stage_products`: large products read their right operand from
/// shared memory (`staged.rs`), as the PTX form does ([`lower_for_warp`]). Off for SPIR-V:
/// no Vulkan GPU has timed it, and on lavapipe it made the shaders several times slower to
/// compile and run.
pub fn lower_kernel_with(m: &Module, k: &Kernel, lanes: u32, stage_products: bool) -> Result<SimtKernel, SimtError> {
    if !(1..=64).contains(&lanes) {
        return Err(err(format!("{lanes} lanes per subgroup is not supported (1 to 64)")));
    }
    let src = &m.funcs[k.body];
    let mut l = Lower {
        src,
        out: Function::new(format!("{}__simt{lanes}", src.name), FuncKind::Kernel),
        lanes,
        map: HashMap::new(),
        stack: vec![Vec::new()],
        lane: Value(0),
        rows: Vec::new(),
        partners: Vec::new(),
        low_bits: Vec::new(),
        scratch: HashMap::new(),
        owner: None,
        owner_lane: None,
        stored_t: super::transpose::stored_transposes(src),
        staging: if stage_products && lanes >= 4 { super::staged::staging(src) } else { Default::default() },
        replicated: super::dist::replicated_lengths(src),
        loc: Loc::default(),
    };
    let mut params = Vec::new();
    for p in &src.body.params {
        let t = src.ty(*p).clone();
        let v = l.out.new_value(t.clone());
        params.push(v);
        l.map.insert(*p, if matches!(t, Type::Array { .. }) { Lv::Array(v) } else { Lv::Scalar(v) });
    }
    l.lane = l.emit1(OpKind::LaneId, vec![], Type::Scalar(Scalar::I32));
    let max_rows = max_rows(src);
    for s in 0..max_rows.div_ceil(lanes) {
        let off = l.i32c(s as i64 * lanes as i64);
        let r = l.bin(BinOp::Add, l.lane, off, Scalar::I32);
        l.rows.push(r);
    }
    if lanes.is_power_of_two() {
        let mut d = 1;
        while d < lanes {
            let dc = l.i32c(d as i64);
            let bit = l.bin(BinOp::And, l.lane, dc, Scalar::I32);
            let zero = l.i32c(0);
            let low = l.cmp(CmpOp::Eq, bit, zero);
            let up = l.bin(BinOp::Add, l.lane, dc, Scalar::I32);
            let down = l.bin(BinOp::Sub, l.lane, dc, Scalar::I32);
            let partner = l.select(low, up, down, Scalar::I32);
            l.partners.push(partner);
            l.low_bits.push(low);
            d *= 2;
        }
    }
    let mut shared = 0u32;
    let mut sizes = HashMap::new();
    reshape_sizes(src, &src.body, &mut sizes);
    for (elem, n) in &l.staging.sizes {
        let m = sizes.entry(*elem).or_insert(0);
        *m = (*m).max(*n);
    }
    let mut sizes: Vec<(Scalar, u32)> = sizes.into_iter().collect();
    sizes.sort_by_key(|(s, _)| s.name());
    for (elem, n) in sizes {
        shared += n * elem.bytes();
        let ty = Type::Array { elem, rank: 1, mutable: true };
        let a = l.emit1(OpKind::AllocShared(vec![n]), vec![], ty);
        l.scratch.insert(elem, a);
    }
    l.region_ops(&src.body, &mut shared)?;
    let ops = l.stack.pop().expect("body");
    l.out.body = Region { params, ops };
    let mut module = Module { funcs: vec![l.out], kernels: Vec::new(), sources: Vec::new(), debug: Vec::new() };
    crate::simplify::run(&mut module);
    let func = module.funcs.pop().expect("function");
    Ok(SimtKernel { kernel: k.clone(), func, lanes, shared_bytes: shared })
}

/// The SIMT form of a kernel for a GPU whose subgroups are warps of `warp` lanes that can run
/// several programs each (CUDA: `warp` = 32, and `codegen-ptx` runs `warp / lanes` programs
/// per warp). Lowered for the fewest lanes, a power of two from 4 to `warp`, whose one row
/// slot holds the kernel's tallest tile (or longest vector): a kernel of 16x16 tiles gets 16
/// lanes and two programs per warp instead of 16 idle lanes. A kernel that declares shared
/// arrays is lowered for `warp` lanes (one program per warp); the lowering's own scratch
/// arrays (reshapes, staged products) have a copy per program. Products are staged
/// ([`lower_kernel_with`]).
/// Errors: those of [`lower_kernel`].
pub fn lower_for_warp(m: &Module, k: &Kernel, warp: u32) -> Result<SimtKernel, SimtError> {
    let f = &m.funcs[k.body];
    let lanes = max_rows(f).next_power_of_two().clamp(4.min(warp), warp);
    lower_kernel_with(m, k, if declares_shared(&f.body) { warp } else { lanes }, true)
}

/// Whether a region (or one nested in it) allocates a shared array.
fn declares_shared(r: &Region) -> bool {
    r.ops.iter().any(|op| matches!(op.kind, OpKind::AllocShared(_)) || op.regions.iter().any(declares_shared))
}

/// The largest tile row count (or vector length) in a function.
fn max_rows(f: &Function) -> u32 {
    f.values.iter().map(|v| if let Type::Tile { shape, .. } = &v.ty { shape[0] } else { 0 }).max().unwrap_or(0).max(1)
}

impl Lower<'_> {
    pub(super) fn emit(&mut self, kind: OpKind, args: Vec<Value>, tys: Vec<Type>) -> Vec<Value> {
        self.emit_regions(kind, args, tys, Vec::new())
    }

    fn emit_regions(&mut self, kind: OpKind, args: Vec<Value>, tys: Vec<Type>, regions: Vec<Region>) -> Vec<Value> {
        let results: Vec<Value> = tys.into_iter().map(|t| self.out.new_value(t)).collect();
        let op = Op { kind, args, results: results.clone(), regions, loc: self.loc };
        self.stack.last_mut().expect("ops").push(op);
        results
    }

    pub(super) fn emit1(&mut self, kind: OpKind, args: Vec<Value>, ty: Type) -> Value {
        self.emit(kind, args, vec![ty])[0]
    }

    pub(super) fn cst(&mut self, c: Const) -> Value {
        self.emit1(OpKind::Const(c), vec![], Type::Scalar(c.ty()))
    }

    pub(super) fn i32c(&mut self, v: i64) -> Value {
        self.cst(Const::Int(v, Scalar::I32))
    }

    pub(super) fn elemc(&mut self, v: f64, s: Scalar) -> Value {
        let c = if s.is_float() {
            Const::Float(v, s)
        } else if s == Scalar::Bool {
            Const::Bool(v != 0.0)
        } else {
            Const::Int(v as i64, s)
        };
        self.cst(c)
    }

    pub(super) fn bin(&mut self, k: BinOp, a: Value, b: Value, s: Scalar) -> Value {
        if matches!(k, BinOp::Div | BinOp::Rem) && s.is_int() {
            return self.int_div(k, a, b, s);
        }
        if matches!(k, BinOp::Min | BinOp::Max | BinOp::Rem) && s.is_float() {
            return self.float_bin(k, a, b, s);
        }
        self.emit1(OpKind::Bin(k), vec![a, b], Type::Scalar(s))
    }

    /// Integer division with the CPU target's semantics, so every backend can use its plain
    /// division: a zero divisor gives 0, and `MIN / -1` wraps (its remainder is 0). After this,
    /// no `Div`/`Rem` of the SIMT form divides by 0 or (signed) by -1.
    fn int_div(&mut self, k: BinOp, a: Value, b: Value, s: Scalar) -> Value {
        let (zero, one) = (self.elemc(0.0, s), self.elemc(1.0, s));
        let is_zero = self.cmp(CmpOp::Eq, b, zero);
        let safe = self.select(is_zero, one, b, s);
        let r = if s == Scalar::U32 {
            self.emit1(OpKind::Bin(k), vec![a, safe], Type::Scalar(s))
        } else {
            let m1 = self.elemc(-1.0, s);
            let is_m1 = self.cmp(CmpOp::Eq, safe, m1);
            let safe2 = self.select(is_m1, one, safe, s);
            let q = self.emit1(OpKind::Bin(k), vec![a, safe2], Type::Scalar(s));
            let other =
                if k == BinOp::Div { self.emit1(OpKind::Un(UnOp::Neg), vec![a], Type::Scalar(s)) } else { zero };
            self.select(is_m1, other, q, s)
        };
        self.select(is_zero, zero, r, s)
    }

    /// An `i32` value converted to `s`.
    pub(super) fn cast_i32(&mut self, x: Value, s: Scalar) -> Value {
        if s == Scalar::I32 {
            return x;
        }
        self.emit1(OpKind::Cast(s), vec![x], Type::Scalar(s))
    }

    pub(super) fn cmp(&mut self, k: CmpOp, a: Value, b: Value) -> Value {
        self.emit1(OpKind::Cmp(k), vec![a, b], Type::Scalar(Scalar::Bool))
    }

    pub(super) fn select(&mut self, c: Value, a: Value, b: Value, s: Scalar) -> Value {
        self.emit1(OpKind::Select, vec![c, a, b], Type::Scalar(s))
    }

    pub(super) fn fma(&mut self, a: Value, b: Value, c: Value, s: Scalar) -> Value {
        if s.is_float() {
            self.emit1(OpKind::Fma, vec![a, b, c], Type::Scalar(s))
        } else {
            let p = self.bin(BinOp::Mul, a, b, s);
            self.bin(BinOp::Add, p, c, s)
        }
    }

    pub(super) fn shuffle(&mut self, x: Value, src: u32, s: Scalar) -> Value {
        let l = self.i32c(src as i64);
        self.shuffle_from(x, l, s)
    }

    /// `Shuffle(x, src)` with a per-lane (or run-time) source lane.
    pub(super) fn shuffle_from(&mut self, x: Value, src: Value, s: Scalar) -> Value {
        self.emit1(OpKind::Shuffle, vec![x, src], Type::Scalar(s))
    }

    /// `rows[s] < bound` (the row slot holds a real row).
    pub(super) fn row_lt(&mut self, s: u32, bound: i64) -> Value {
        let b = self.i32c(bound);
        self.cmp(CmpOp::Lt, self.rows[s as usize], b)
    }

    pub(super) fn slots(&self, rows: u32) -> u32 {
        rows.div_ceil(self.lanes)
    }

    pub(super) fn get(&self, v: Value) -> Result<Lv, SimtError> {
        self.map.get(&v).cloned().ok_or_else(|| err(format!("%{} used before its definition", v.0)))
    }

    pub(super) fn scalar(&self, v: Value) -> Result<Value, SimtError> {
        match self.get(v)? {
            Lv::Scalar(x) | Lv::Array(x) => Ok(x),
            _ => Err(err(format!("%{} is a tile where a scalar is expected", v.0))),
        }
    }

    /// The row-distributed form of a vector: `dist[s]` = element `lane + s * lanes`.
    pub(super) fn dist(&mut self, v: &Lv) -> Result<Vec<Value>, SimtError> {
        match v {
            Lv::Dist { regs, .. } | Lv::Vec { dist: Some(regs), .. } => Ok(regs.clone()),
            Lv::Vec { n, elem, rep, dist: None } => Ok(self.dist_from_rep(*n, *elem, rep)),
            _ => Err(err("expected a vector tile")),
        }
    }

    /// A vector from its row-distributed form (broadcasting each element from its lane).
    pub(super) fn vec_from_dist(&mut self, n: u32, elem: Scalar, dist: Vec<Value>) -> Lv {
        let rep = self.rep_from_dist(n, elem, &dist);
        Lv::Vec { n, elem, rep, dist: Some(dist) }
    }

    /// The `n` elements of a row-distributed vector in every lane (`n` broadcast shuffles).
    pub(super) fn rep_from_dist(&mut self, n: u32, elem: Scalar, dist: &[Value]) -> Vec<Value> {
        (0..n).map(|i| self.shuffle(dist[(i / self.lanes) as usize], i % self.lanes, elem)).collect()
    }

    /// Values carried through structured control flow for a lowered value.
    fn flatten(lv: &Lv) -> Vec<Value> {
        match lv {
            Lv::Scalar(v) | Lv::Array(v) => vec![*v],
            Lv::Mat { regs, .. } | Lv::Dist { regs, .. } => regs.clone(),
            Lv::Vec { rep, .. } => rep.clone(),
        }
    }

    /// New values of the lowered types of `v` (for region parameters and results), and the
    /// lowered value they form.
    fn fresh_like(&mut self, v: Value) -> (Vec<Value>, Lv) {
        match self.src.ty(v).clone() {
            Type::Tile { elem, shape } => {
                if shape.len() == 2 {
                    let regs: Vec<Value> =
                        (0..self.slots(shape[0]) * shape[1]).map(|_| self.out.new_value(Type::Scalar(elem))).collect();
                    (regs.clone(), Lv::Mat { rows: shape[0], cols: shape[1], elem, regs })
                } else if self.is_dist(shape[0]) {
                    let regs: Vec<Value> =
                        (0..self.slots(shape[0])).map(|_| self.out.new_value(Type::Scalar(elem))).collect();
                    (regs.clone(), Lv::Dist { n: shape[0], elem, regs })
                } else {
                    let rep: Vec<Value> = (0..shape[0]).map(|_| self.out.new_value(Type::Scalar(elem))).collect();
                    (rep.clone(), Lv::Vec { n: shape[0], elem, rep, dist: None })
                }
            }
            t => {
                let x = self.out.new_value(t.clone());
                let lv = if matches!(t, Type::Array { .. }) { Lv::Array(x) } else { Lv::Scalar(x) };
                (vec![x], lv)
            }
        }
    }

    pub(super) fn region_ops(&mut self, r: &Region, shared: &mut u32) -> Result<Option<Vec<Value>>, SimtError> {
        for op in &r.ops {
            if op.kind == OpKind::Yield {
                let mut ys = Vec::new();
                for a in &op.args {
                    ys.extend(Self::flatten(&self.get(*a)?));
                }
                return Ok(Some(ys));
            }
            self.op(op, shared)?;
        }
        Ok(None)
    }

    /// Lowers a structured region whose params are `params` (already fresh), ending in a yield.
    pub(super) fn sub_region(&mut self, r: &Region, params: Vec<Value>, shared: &mut u32) -> Result<Region, SimtError> {
        self.stack.push(Vec::new());
        let ys = self.region_ops(r, shared)?;
        if let Some(ys) = ys {
            self.emit(OpKind::Yield, ys, vec![]);
        }
        let ops = self.stack.pop().expect("region");
        Ok(Region { params, ops })
    }

    fn op(&mut self, op: &Op, shared: &mut u32) -> Result<(), SimtError> {
        self.loc = op.loc;
        let res_ty = op.results.first().map(|r| self.src.ty(*r).clone());
        match &op.kind {
            OpKind::For | OpKind::While | OpKind::If => return self.structured(op, shared),
            OpKind::Return => {
                self.emit(OpKind::Return, vec![], vec![]);
                return Ok(());
            }
            OpKind::Call(_) => return Err(err("calls must be inlined before SIMT lowering")),
            OpKind::AllocShared(shape) => {
                let elem = res_ty.as_ref().expect("result").elem();
                *shared += shape.iter().product::<u32>() * elem.bytes();
                let v = self.emit1(op.kind.clone(), vec![], res_ty.expect("result"));
                self.map.insert(op.results[0], Lv::Array(v));
                return Ok(());
            }
            OpKind::Barrier => {
                self.emit(OpKind::Barrier, vec![], vec![]);
                return Ok(());
            }
            OpKind::Reshape => {
                let lv = self.reshape(op)?;
                self.map.insert(op.results[0], lv);
                return Ok(());
            }
            OpKind::AtomicRmw(k) => {
                let lv = self.rmw(*k, op)?;
                self.map.insert(op.results[0], lv);
                return Ok(());
            }
            _ => {}
        }
        let tile_args = op.args.iter().any(|a| self.src.ty(*a).is_tile());
        let tile_res = res_ty.as_ref().is_some_and(|t| t.is_tile());
        if !tile_args
            && !tile_res
            && !matches!(op.kind, OpKind::Load(_) | OpKind::Store(_) | OpKind::AtomicAdd(_) | OpKind::LoadInto(_))
        {
            // A scalar operation: copied with its operands renamed.
            let args = op.args.iter().map(|a| self.scalar(*a)).collect::<Result<Vec<_>, _>>()?;
            if let (OpKind::Bin(k), Some(Type::Scalar(s))) = (&op.kind, &res_ty) {
                let v = self.bin(*k, args[0], args[1], *s);
                self.map.insert(op.results[0], Lv::Scalar(v));
                return Ok(());
            }
            if let OpKind::Cast(to) = op.kind {
                let from = self.src.ty(op.args[0]).elem();
                let v = self.cast(args[0], from, to);
                self.map.insert(op.results[0], Lv::Scalar(v));
                return Ok(());
            }
            if let (OpKind::Un(k), Some(Type::Scalar(s))) = (&op.kind, &res_ty) {
                let v = self.un(*k, args[0], *s);
                self.map.insert(op.results[0], Lv::Scalar(v));
                return Ok(());
            }
            let tys = op.results.iter().map(|r| self.src.ty(*r).clone()).collect();
            let rs = self.emit(op.kind.clone(), args, tys);
            for (r, n) in op.results.iter().zip(rs) {
                self.map.insert(*r, Lv::Scalar(n));
            }
            return Ok(());
        }
        let lv = self.tile_op(op, res_ty)?;
        if let Some(lv) = lv {
            self.map.insert(op.results[0], lv);
        }
        Ok(())
    }

    fn structured(&mut self, op: &Op, shared: &mut u32) -> Result<(), SimtError> {
        match op.kind {
            OpKind::For => {
                let (lo, hi, st) = (self.scalar(op.args[0])?, self.scalar(op.args[1])?, self.scalar(op.args[2])?);
                let mut inits = vec![lo, hi, st];
                for a in &op.args[3..] {
                    inits.extend(Self::flatten(&self.get(*a)?));
                }
                let r = &op.regions[0];
                let iv = self.out.new_value(self.src.ty(r.params[0]).clone());
                self.map.insert(r.params[0], Lv::Scalar(iv));
                let mut params = vec![iv];
                for p in &r.params[1..] {
                    let (vals, lv) = self.fresh_like(*p);
                    params.extend(vals);
                    self.map.insert(*p, lv);
                }
                let region = self.sub_region(r, params, shared)?;
                self.finish_structured(op, inits, vec![region])
            }
            OpKind::While => {
                let mut inits = Vec::new();
                for a in &op.args {
                    inits.extend(Self::flatten(&self.get(*a)?));
                }
                let mut regions = Vec::new();
                for r in &op.regions {
                    let mut params = Vec::new();
                    for p in &r.params {
                        let (vals, lv) = self.fresh_like(*p);
                        params.extend(vals);
                        self.map.insert(*p, lv);
                    }
                    regions.push(self.sub_region(r, params, shared)?);
                }
                self.finish_structured(op, inits, regions)
            }
            _ => {
                let c = self.scalar(op.args[0])?;
                let mut regions = Vec::new();
                for r in &op.regions {
                    regions.push(self.sub_region(r, vec![], shared)?);
                }
                self.finish_structured(op, vec![c], regions)
            }
        }
    }

    fn finish_structured(&mut self, op: &Op, args: Vec<Value>, regions: Vec<Region>) -> Result<(), SimtError> {
        let mut tys = Vec::new();
        let mut shapes = Vec::new();
        for r in &op.results {
            let (vals, lv) = self.fresh_like(*r);
            tys.extend(vals.iter().map(|v| self.out.ty(*v).clone()));
            shapes.push((vals.len(), lv));
        }
        let results = self.emit_regions(op.kind.clone(), args, tys, regions);
        let mut it = results.into_iter();
        for (r, (n, template)) in op.results.iter().zip(shapes) {
            let vals: Vec<Value> = it.by_ref().take(n).collect();
            let lv = match template {
                Lv::Scalar(_) => Lv::Scalar(vals[0]),
                Lv::Array(_) => Lv::Array(vals[0]),
                Lv::Mat { rows, cols, elem, .. } => Lv::Mat { rows, cols, elem, regs: vals },
                Lv::Vec { n, elem, .. } => Lv::Vec { n, elem, rep: vals, dist: None },
                Lv::Dist { n, elem, .. } => Lv::Dist { n, elem, regs: vals },
            };
            self.map.insert(*r, lv);
        }
        Ok(())
    }
}
