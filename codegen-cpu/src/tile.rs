//! Register-tile operations on the CPU. A tile is row-major in its stack slot; element-wise
//! operations, fills, rank-1 updates and row copies use 128-bit vectors (`f32x4`, `f64x2`),
//! as do matmul (`linalg.rs`) and the factorizations (`factor.rs`).

use crate::lower::{cl_type, Lower};
use crate::memory::flags;
use crate::{err, CodegenError};
use cranelift_codegen::ir::{self, condcodes::IntCC, types, InstBuilder};
use cranelift_module::Module as ClModule;
use tilec_midend::{BinOp, Const, Fill, Op, OpKind, Reduce, Scalar, Type, UnOp, Value};

/// An element-wise operand: a tile (its address) or a scalar broadcast to every element.
#[derive(Clone, Copy)]
pub(crate) enum Operand {
    Tile(ir::Value),
    Scalar(ir::Value),
    /// A matrix tile whose rows are `stride` bytes apart (an i64 value), the first at `base`:
    /// a tile read in place from its array, or one row broadcast to every row (`stride` 0).
    Rows {
        base: ir::Value,
        stride: ir::Value,
    },
}

/// The computation of an element-wise op and of the unformed ops of its chain (`chains.rs`)
/// on the vectors (or elements) of its leaf operands.
enum Node {
    Leaf(usize),
    Bin(BinOp, Box<Node>, Box<Node>),
    Un(UnOp, Box<Node>),
}

/// The 128-bit vector type of an element type.
pub(crate) fn vec_ty(s: Scalar) -> Option<ir::Type> {
    match s {
        Scalar::F32 => Some(types::F32X4),
        Scalar::F64 => Some(types::F64X2),
        Scalar::I32 | Scalar::U32 => Some(types::I32X4),
        Scalar::I64 => Some(types::I64X2),
        Scalar::Bool | Scalar::F16 | Scalar::BF16 => None,
    }
}

/// The per-element (or per-vector) body of an element-wise loop.
type ElemFn<'a, L> = dyn FnMut(&mut L, &[ir::Value]) -> Result<ir::Value, CodegenError> + 'a;

/// Most vectors per row that `outer` and rank-1 updates keep in registers.
const OUTER_VECTORS: u32 = 8;

/// Chunks of one element-wise loop that are unrolled (above this, a loop is emitted).
const UNROLL: u32 = 64;

/// Most instructions of the unrolled chunks of one element-wise loop: a longer body (`tanh`,
/// `exp`) runs its first chunk, then a loop. The walker's `tanh` of 256 f32 had been 64
/// unrolled chunks of about 120 instructions, 49 KB of code per program, more than the
/// instruction cache; at 1024 the top-k and cumsum ports lost 20-25% (bench/README.md).
const UNROLL_INSTS: u32 = 4096;

impl<M: ClModule> Lower<'_, '_, M> {
    pub(crate) fn zero(&mut self, s: Scalar) -> ir::Value {
        self.const_val(Const::Int(0, s), s)
    }

    pub(crate) fn one(&mut self, s: Scalar) -> ir::Value {
        self.const_val(Const::Int(1, s), s)
    }

    /// Address of element `i` (an i64 value) of the tile at `base`.
    pub(crate) fn at(&mut self, base: ir::Value, i: ir::Value, s: Scalar) -> ir::Value {
        let b = self.b.ins().imul_imm_s(i, s.bytes() as i64);
        self.b.ins().iadd(base, b)
    }

    pub(crate) fn ld(&mut self, s: Scalar, addr: ir::Value, off: i32) -> ir::Value {
        self.b.ins().load(cl_type(s), flags(), addr, off)
    }

    pub(crate) fn st(&mut self, v: ir::Value, addr: ir::Value, off: i32) {
        self.b.ins().store(flags(), v, addr, off);
    }

    /// The vector of type `vt` whose lanes are the scalars `xs` (as many as it has lanes).
    pub(crate) fn vector_of(&mut self, vt: ir::Type, xs: &[ir::Value]) -> ir::Value {
        let mut v = self.b.ins().scalar_to_vector(vt, xs[0]);
        for (k, x) in xs.iter().enumerate().skip(1) {
            v = self.b.ins().insertlane(v, *x, k as u8);
        }
        v
    }

    /// One vector of `s` elements at `addr + off + r * step` bytes, `r` over its lanes: a
    /// vector load where they are adjacent (`step` is the element size), else a load per lane.
    pub(crate) fn strided_vector(&mut self, s: Scalar, addr: ir::Value, off: u32, step: u32) -> ir::Value {
        let vt = vec_ty(s).expect("a vector type");
        if step == s.bytes() {
            return self.b.ins().load(vt, flags(), addr, off as i32);
        }
        let xs: Vec<ir::Value> = (0..16 / s.bytes()).map(|r| self.ld(s, addr, (off + r * step) as i32)).collect();
        self.vector_of(vt, &xs)
    }

    /// `dst[k] = f(operands[k])` for `n` elements of type `s`; `vector` says whether `f` may
    /// be applied to whole vectors. No operand is [`Operand::Rows`] (`elementwise_rows`).
    pub(crate) fn elementwise(
        &mut self,
        n: u32,
        s: Scalar,
        ops: &[Operand],
        dst: ir::Value,
        vector: bool,
        f: &mut ElemFn<'_, Self>,
    ) -> Result<(), CodegenError> {
        let esz = s.bytes();
        let mut start = 0u32;
        if let (true, Some(vt)) = (vector, vec_ty(s)) {
            let lanes = 16 / esz;
            let chunks = n / lanes;
            let splats: Vec<Option<ir::Value>> = ops
                .iter()
                .map(|o| match o {
                    Operand::Scalar(x) => Some(self.b.ins().splat(vt, *x)),
                    Operand::Tile(_) | Operand::Rows { .. } => None,
                })
                .collect();
            let mut chunk = |l: &mut Self, off: Option<ir::Value>, coff: i32| -> Result<(), CodegenError> {
                let mut args = Vec::new();
                for (o, sp) in ops.iter().zip(&splats) {
                    args.push(match (o, sp) {
                        (_, Some(x)) => *x,
                        (Operand::Rows { .. }, None) => unreachable!("rows are split by elementwise_rows"),
                        (Operand::Tile(a), None) => {
                            let a = match off {
                                Some(o) => l.b.ins().iadd(*a, o),
                                None => *a,
                            };
                            l.b.ins().load(vt, flags(), a, coff)
                        }
                        (Operand::Scalar(x), None) => *x,
                    });
                }
                let r = f(l, &args)?;
                let d = match off {
                    Some(o) => l.b.ins().iadd(dst, o),
                    None => dst,
                };
                l.b.ins().store(flags(), r, d, coff);
                Ok(())
            };
            // Unrolled, unless the body is long (a transcendental function): then the first
            // chunk, whose instructions are counted, and a loop over the rest.
            let mut first = 0;
            if (1..=UNROLL).contains(&chunks) {
                let before = self.b.func.dfg.num_insts();
                chunk(self, None, 0)?;
                first = 1;
                let body = (self.b.func.dfg.num_insts() - before) as u32;
                if body * chunks <= UNROLL_INSTS {
                    for c in 1..chunks {
                        chunk(self, None, (c * 16) as i32)?;
                    }
                    first = chunks;
                }
            }
            if first < chunks {
                let lo = self.b.ins().iconst(types::I64, first as i64);
                let hi = self.b.ins().iconst(types::I64, chunks as i64);
                let mut res = Ok(());
                self.dyn_loop(lo, hi, |l, c| {
                    let off = l.b.ins().imul_imm_s(c, 16);
                    if let Err(e) = chunk(l, Some(off), 0) {
                        res = Err(e);
                    }
                });
                res?;
            }
            start = chunks * lanes;
        }
        for k in start..n {
            let off = (k * esz) as i32;
            let mut args = Vec::new();
            for o in ops {
                args.push(match o {
                    Operand::Tile(a) => self.ld(s, *a, off),
                    Operand::Rows { .. } => unreachable!("rows are split by elementwise_rows"),
                    Operand::Scalar(x) => *x,
                });
            }
            let r = f(self, &args)?;
            self.st(r, dst, off);
        }
        Ok(())
    }

    /// `elementwise` of a `rows` x `cols` tile (a 1-D tile: one row) whose operands may be
    /// [`Operand::Rows`]: then one row at a time (each row is contiguous in every operand).
    fn elementwise_rows(
        &mut self,
        (rows, cols): (u32, u32),
        s: Scalar,
        ops: &[Operand],
        dst: ir::Value,
        vector: bool,
        f: &mut ElemFn<'_, Self>,
    ) -> Result<(), CodegenError> {
        if !ops.iter().any(|o| matches!(o, Operand::Rows { .. })) {
            return self.elementwise(rows * cols, s, ops, dst, vector, f);
        }
        let row_bytes = (cols * s.bytes()) as i64;
        let mut row = |l: &mut Self, r: ir::Value| -> Result<(), CodegenError> {
            let at = |l: &mut Self, a: ir::Value, stride: ir::Value| {
                let o = l.b.ins().imul(r, stride);
                l.b.ins().iadd(a, o)
            };
            let pitch = l.b.ins().iconst(types::I64, row_bytes);
            let row_ops: Vec<Operand> = ops
                .iter()
                .map(|o| match *o {
                    Operand::Tile(a) => Operand::Tile(at(l, a, pitch)),
                    Operand::Rows { base, stride } => Operand::Tile(at(l, base, stride)),
                    Operand::Scalar(x) => Operand::Scalar(x),
                })
                .collect();
            let d = at(l, dst, pitch);
            l.elementwise(cols, s, &row_ops, d, vector, f)
        };
        let lanes = 16 / s.bytes();
        if rows * cols.div_ceil(lanes) <= UNROLL {
            for r in 0..rows {
                let r = self.b.ins().iconst(types::I64, r as i64);
                row(self, r)?;
            }
            return Ok(());
        }
        let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, rows as i64));
        let mut res = Ok(());
        self.dyn_loop(lo, hi, |l, r| {
            if let Err(e) = row(l, r) {
                res = Err(e);
            }
        });
        res
    }

    /// An operand of an element-wise op: a scalar, a tile in its slot, a tile load read in
    /// place (`view_operand`), or a value of its chain, whose op becomes part of `node`
    /// (`chains.rs`; a broadcast row is read as every row).
    fn elem_node(&mut self, v: Value, leaves: &mut Vec<Operand>) -> Node {
        let leaf = |leaves: &mut Vec<Operand>, o| {
            leaves.push(o);
            Node::Leaf(leaves.len() - 1)
        };
        let Some(p) = self.chains.ops.get(&v).cloned() else {
            let o = if !self.f.ty(v).is_tile() {
                Operand::Scalar(self.val(v))
            } else if self.pending.contains_key(&v) {
                self.view_operand(v)
            } else {
                Operand::Tile(self.tile_addr(v))
            };
            return leaf(leaves, o);
        };
        match p.kind {
            OpKind::Broadcast => {
                let base = self.tile_addr(p.args[0]);
                let stride = self.b.ins().iconst(types::I64, 0);
                leaf(leaves, Operand::Rows { base, stride })
            }
            OpKind::ExtractLine(_) => {
                let row = self.row_operand(&p);
                leaf(leaves, Operand::Tile(row))
            }
            _ => self.elem_tree(&p, leaves),
        }
    }

    fn elem_tree(&mut self, op: &Op, leaves: &mut Vec<Operand>) -> Node {
        match op.kind {
            OpKind::Bin(k) => {
                let a = self.elem_node(op.args[0], leaves);
                let b = self.elem_node(op.args[1], leaves);
                Node::Bin(k, Box::new(a), Box::new(b))
            }
            OpKind::Un(k) => Node::Un(k, Box::new(self.elem_node(op.args[0], leaves))),
            _ => unreachable!("a chain holds element-wise ops"),
        }
    }

    fn eval(&mut self, n: &Node, s: Scalar, args: &[ir::Value]) -> Result<ir::Value, CodegenError> {
        Ok(match n {
            Node::Leaf(k) => args[*k],
            Node::Bin(k, a, b) => {
                let (a, b) = (self.eval(a, s, args)?, self.eval(b, s, args)?);
                self.bin(*k, s, a, b)
            }
            Node::Un(k, a) => {
                let a = self.eval(a, s, args)?;
                self.unary(*k, s, a)?
            }
        })
    }

    /// A `Bin` or `Un` on tiles, with the unformed ops of its chain: one pass over the tile,
    /// a vector at a time where every op of the chain has a vector form.
    fn elementwise_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let t = self.f.ty(op.results[0]).clone();
        let s = t.elem();
        let mut leaves = Vec::new();
        let node = self.elem_tree(op, &mut leaves);
        let vector = crate::chains::vector_elementwise(self.f, op);
        let shape = match &t {
            Type::Tile { shape, .. } if shape.len() == 2 => (shape[0], shape[1]),
            _ => (1, t.tile_len()),
        };
        let dst = self.tile_addr(op.results[0]);
        self.elementwise_rows(shape, s, &leaves, dst, vector, &mut |l, a| l.eval(&node, s, a))
    }

    /// Lowers an operation with a tile result, or a store.
    /// `Fill::Iota(axis)`: element `i` of the tile at `dst` is its row (`axis` 0) or column
    /// (`axis` 1) index, converted to the element type; a loop over the elements.
    fn iota(&mut self, dst: ir::Value, t: &tilec_midend::Type, axis: u8) {
        let s = t.elem();
        let (_, cols) = t.rows_cols();
        let one_d = matches!(t, tilec_midend::Type::Tile { shape, .. } if shape.len() == 1);
        let lo = self.b.ins().iconst(types::I64, 0);
        let hi = self.b.ins().iconst(types::I64, t.tile_len() as i64);
        self.dyn_loop(lo, hi, |l, i| {
            let idx = match (one_d, axis) {
                (true, _) => i,
                (false, 0) => l.b.ins().udiv_imm_s(i, cols as i64),
                _ => l.b.ins().urem_imm_s(i, cols as i64),
            };
            let x = l.cast(Scalar::I64, s, idx);
            let a = l.b.ins().imul_imm_s(i, s.bytes() as i64);
            let a = l.b.ins().iadd(dst, a);
            l.b.ins().store(crate::memory::flags(), x, a, 0);
        });
    }

    pub(crate) fn tile_op(&mut self, op: &Op) -> Result<(), CodegenError> {
        let rt = op.results.first().map(|r| self.f.ty(*r).clone());
        let (s, n) = match &rt {
            Some(t) => (t.elem(), t.tile_len()),
            None => (Scalar::F32, 0),
        };
        match &op.kind {
            OpKind::Load(_) | OpKind::LoadInto(_) | OpKind::Store(_) => return self.memory_op(op),
            OpKind::Fill(fill) => {
                let dst = self.tile_addr(op.results[0]);
                let x = match fill {
                    Fill::Full => self.val(op.args[0]),
                    _ => self.zero(s),
                };
                if let Fill::Iota(axis) = *fill {
                    self.iota(dst, rt.as_ref().expect("tile"), axis);
                    return Ok(());
                }
                self.elementwise(n, s, &[Operand::Scalar(x)], dst, true, &mut |_, a| Ok(a[0]))?;
                if *fill == Fill::Eye {
                    let (r, c) = rt.as_ref().expect("tile").rows_cols();
                    let one = self.one(s);
                    for i in 0..r.min(c) {
                        self.st(one, dst, ((i * c + i) * s.bytes()) as i32);
                    }
                }
            }
            OpKind::Bin(_) | OpKind::Un(_) => self.elementwise_op(op)?,
            OpKind::Outer => self.outer(op, s, None)?,
            OpKind::Rank1(alpha) => {
                self.copy_tile_to_result(op.args[0], op.results[0]);
                self.outer(op, s, Some(*alpha))?;
            }
            OpKind::Matmul => self.matmul(op, s, false)?,
            OpKind::Transpose => {
                let shape = self.f.ty(op.args[0]).rows_cols();
                let (src, dst) = (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]));
                self.transpose_tile(src, dst, shape, s);
            }
            OpKind::Reduce(k, Some(axis)) => {
                let (r, c) = self.f.ty(op.args[0]).rows_cols();
                let (src, dst) = (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]));
                // Axis 0: down each column (stride c), whole vectors of columns first; axis 1:
                // along each row (stride 1).
                let (outer, inner, step, stride) = if *axis == 0 { (c, r, 1, c) } else { (r, c, c, 1) };
                let done = if *axis == 0 { self.reduce_columns(*k, s, src, dst, (r, c)) } else { 0 };
                let (lo, hi) =
                    (self.b.ins().iconst(types::I64, done as i64), self.b.ins().iconst(types::I64, outer as i64));
                let k = *k;
                self.dyn_loop(lo, hi, |l, o| {
                    let first = l.b.ins().imul_imm_s(o, step as i64);
                    let acc = l.fold(k, s, src, first, inner, stride);
                    let d = l.at(dst, o, s);
                    l.st(acc, d, 0);
                });
            }
            OpKind::Scan(k, axis) => {
                let (r, c) = self.f.ty(op.args[0]).rows_cols();
                let (src, dst) = (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]));
                // A 1-D tile is one line; axis 0 of a matrix: down each column (stride c);
                // axis 1: along each row (stride 1).
                let one_d = matches!(self.f.ty(op.args[0]), Type::Tile { shape, .. } if shape.len() == 1);
                let (outer, inner, step, stride) = match (one_d, *axis) {
                    (true, _) => (1, r, 0, 1),
                    (false, 0) => (c, r, 1, c),
                    (false, _) => (r, c, c, 1),
                };
                let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, outer as i64));
                let k = *k;
                self.dyn_loop(lo, hi, |l, o| {
                    let first = l.b.ins().imul_imm_s(o, step as i64);
                    l.fold_line(k, s, src, first, inner, stride, Some(dst));
                });
            }
            OpKind::Reshape => {
                let (src, dst) = (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]));
                self.copy_bytes(dst, src, n * s.bytes());
            }
            OpKind::Flip(axis) => {
                let t = self.f.ty(op.args[0]).clone();
                let (src, dst) = (self.tile_addr(op.args[0]), self.tile_addr(op.results[0]));
                self.flip(src, dst, &t, *axis);
            }
            OpKind::Insert => {
                self.copy_tile_to_result(op.args[0], op.results[0]);
                let dst = self.tile_addr(op.results[0]);
                let (idx, ok) = self.element_index(op.args[0], &op.args[1..op.args.len() - 1]);
                let x = self.val(*op.args.last().expect("value"));
                let (yes, done) = (self.b.create_block(), self.b.create_block());
                self.b.ins().brif(ok, yes, &[], done, &[]);
                self.b.switch_to_block(yes);
                let a = self.at(dst, idx, s);
                self.st(x, a, 0);
                self.b.ins().jump(done, &[]);
                self.b.switch_to_block(done);
            }
            OpKind::Cholesky => self.cholesky(op, s)?,
            OpKind::Lu => self.lu(op, s),
            OpKind::Trsm(kind) => self.trsm(op, *kind, s)?,
            OpKind::MatmulAcc => self.matmul(op, s, true)?,
            OpKind::ExtractBlock(_) | OpKind::InsertBlock(_) | OpKind::Broadcast => self.block_op(op)?,
            OpKind::ExtractLine(d) | OpKind::InsertLine(d) => self.line_op(op, *d)?,
            other => return Err(err(format!("unsupported tile op {other:?}"))),
        }
        Ok(())
    }

    /// `Flip(axis)` of the tile `t` at `src` into `dst`: rows copied in reverse order (axis 0
    /// of a matrix, vector moves), or each row's elements reversed (axis 1, a 1-D tile).
    fn flip(&mut self, src: ir::Value, dst: ir::Value, t: &Type, axis: u8) {
        let s = t.elem();
        let (r, c) = t.rows_cols();
        let one_d = matches!(t, Type::Tile { shape, .. } if shape.len() == 1);
        let (rows, cols) = if one_d { (1, r) } else { (r, c) };
        let row_bytes = (cols * s.bytes()) as i64;
        let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, rows as i64));
        self.dyn_loop(lo, hi, |l, i| {
            let from = l.b.ins().imul_imm_s(i, row_bytes);
            let from = l.b.ins().iadd(src, from);
            if axis == 0 && !one_d {
                let last = l.b.ins().iconst(types::I64, rows as i64 - 1);
                let back = l.b.ins().isub(last, i);
                let to = l.b.ins().imul_imm_s(back, row_bytes);
                let to = l.b.ins().iadd(dst, to);
                let (zero, n) = (l.b.ins().iconst(types::I64, 0), l.b.ins().iconst(types::I64, cols as i64));
                l.copy_run(to, from, zero, n, s);
                return;
            }
            let to = l.b.ins().imul_imm_s(i, row_bytes);
            let to = l.b.ins().iadd(dst, to);
            let (zero, n) = (l.b.ins().iconst(types::I64, 0), l.b.ins().iconst(types::I64, cols as i64));
            l.dyn_loop(zero, n, |l, j| {
                let a = l.at(from, j, s);
                let x = l.ld(s, a, 0);
                let last = l.b.ins().iconst(types::I64, cols as i64 - 1);
                let back = l.b.ins().isub(last, j);
                let d = l.at(to, back, s);
                l.st(x, d, 0);
            });
        });
    }

    fn reduce_step(&mut self, k: Reduce, s: Scalar, a: ir::Value, v: ir::Value) -> ir::Value {
        match k {
            Reduce::Sum => self.bin(BinOp::Add, s, a, v),
            Reduce::Max => self.bin(BinOp::Max, s, a, v),
            Reduce::Min => self.bin(BinOp::Min, s, a, v),
            Reduce::Prod => self.bin(BinOp::Mul, s, a, v),
        }
    }

    /// Reduces the columns of the `rows x cols` tile at `src` into `dst`, a vector of
    /// columns at a time, each column down its rows in order (the bits of the scalar loop);
    /// returns how many columns it did (0 where the element type and reduction have no vector
    /// form, else the whole vectors of columns).
    fn reduce_columns(
        &mut self,
        k: Reduce,
        s: Scalar,
        src: ir::Value,
        dst: ir::Value,
        (rows, cols): (u32, u32),
    ) -> u32 {
        let vector = s.is_float() || matches!(k, Reduce::Sum | Reduce::Prod) || s.bytes() == 4;
        let (Some(vt), true) = (vec_ty(s), vector) else { return 0 };
        let lanes = 16 / s.bytes();
        let chunks = cols / lanes;
        if chunks == 0 || rows < 2 {
            return 0;
        }
        let row_bytes = (cols * s.bytes()) as i64;
        let (lo, hi) = (self.b.ins().iconst(types::I64, 0), self.b.ins().iconst(types::I64, chunks as i64));
        self.dyn_loop(lo, hi, |l, ch| {
            let off = l.b.ins().imul_imm_s(ch, 16);
            let first = l.b.ins().iadd(src, off);
            let init = l.b.ins().load(vt, flags(), first, 0);
            let var = l.b.declare_var(vt);
            l.b.def_var(var, init);
            let (lo, hi) = (l.b.ins().iconst(types::I64, 1), l.b.ins().iconst(types::I64, rows as i64));
            l.dyn_loop(lo, hi, |l, i| {
                let ro = l.b.ins().imul_imm_s(i, row_bytes);
                let a = l.b.ins().iadd(first, ro);
                let v = l.b.ins().load(vt, flags(), a, 0);
                let acc = l.b.use_var(var);
                let n = l.reduce_step(k, s, acc, v);
                l.b.def_var(var, n);
            });
            let acc = l.b.use_var(var);
            let d = l.b.ins().iadd(dst, off);
            l.b.ins().store(flags(), acc, d, 0);
        });
        chunks * lanes
    }

    /// A whole-tile reduction to a scalar.
    pub(crate) fn reduce_all(&mut self, op: &Op, k: Reduce) -> Result<ir::Value, CodegenError> {
        let t = self.f.ty(op.args[0]).clone();
        let src = self.tile_addr(op.args[0]);
        let first = self.b.ins().iconst(types::I64, 0);
        Ok(self.fold(k, t.elem(), src, first, t.tile_len(), 1))
    }

    /// Reduces `count` elements of the tile at `base`, from element `first` (i64) with
    /// `stride` elements between them, in a loop.
    fn fold(&mut self, k: Reduce, s: Scalar, base: ir::Value, first: ir::Value, count: u32, stride: u32) -> ir::Value {
        self.fold_line(k, s, base, first, count, stride, None)
    }

    /// [`Self::fold`], and with `scan` the running result written to the same positions of
    /// the tile at `scan` (the inclusive scan).
    #[allow(clippy::too_many_arguments)]
    fn fold_line(
        &mut self,
        k: Reduce,
        s: Scalar,
        base: ir::Value,
        first: ir::Value,
        count: u32,
        stride: u32,
        scan: Option<ir::Value>,
    ) -> ir::Value {
        let a0 = self.at(base, first, s);
        let init = self.ld(s, a0, 0);
        if let Some(dst) = scan {
            let d0 = self.at(dst, first, s);
            self.st(init, d0, 0);
        }
        let var = self.b.declare_var(cl_type(s));
        self.b.def_var(var, init);
        let (lo, hi) = (self.b.ins().iconst(types::I64, 1), self.b.ins().iconst(types::I64, count as i64));
        self.dyn_loop(lo, hi, |l, i| {
            let off = l.b.ins().imul_imm_s(i, stride as i64);
            let idx = l.b.ins().iadd(first, off);
            let a = l.at(base, idx, s);
            let v = l.ld(s, a, 0);
            let acc = l.b.use_var(var);
            let n = l.reduce_step(k, s, acc, v);
            l.b.def_var(var, n);
            if let Some(dst) = scan {
                let d = l.at(dst, idx, s);
                l.st(n, d, 0);
            }
        });
        self.b.use_var(var)
    }

    /// The flat index (i64) of `t[i, j]` and whether it is in range.
    fn element_index(&mut self, t: Value, idx: &[Value]) -> (ir::Value, ir::Value) {
        let shape = match self.f.ty(t) {
            Type::Tile { shape, .. } => shape.clone(),
            _ => vec![1],
        };
        let mut flat = self.b.ins().iconst(types::I64, 0);
        let mut ok = self.b.ins().iconst(types::I8, 1);
        for (d, v) in idx.iter().enumerate() {
            let i = self.val(*v);
            let i = self.b.ins().sextend(types::I64, i);
            let inb = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, i, shape[d] as i64);
            ok = self.b.ins().band(ok, inb);
            flat = self.b.ins().imul_imm_s(flat, shape[d] as i64);
            flat = self.b.ins().iadd(flat, i);
        }
        let zero = self.b.ins().iconst(types::I64, 0);
        let flat = self.b.ins().select(ok, flat, zero);
        (flat, ok)
    }

    /// `t[i, j]`: zero when out of range.
    pub(crate) fn extract(&mut self, op: &Op) -> Result<ir::Value, CodegenError> {
        let s = self.f.ty(op.args[0]).elem();
        let base = self.tile_addr(op.args[0]);
        let (idx, ok) = self.element_index(op.args[0], &op.args[1..]);
        let a = self.at(base, idx, s);
        let v = self.ld(s, a, 0);
        let z = self.zero(s);
        Ok(self.b.ins().select(ok, v, z))
    }

    /// `outer(u, v)` (`alpha: None`), or the rank-1 update `t + alpha * u v^T` (the result
    /// tile already holds `t`), one row at a time: `outer_rows` where it applies, else
    /// `u[r] * v` or `fma(alpha * u[r], v, row)` element-wise per row.
    fn outer(&mut self, op: &Op, s: Scalar, alpha: Option<f64>) -> Result<(), CodegenError> {
        if self.outer_rows(op, s, alpha) {
            return Ok(());
        }
        let (rows, cols) = self.f.ty(op.results[0]).rows_cols();
        let base = usize::from(alpha.is_some());
        let dst = self.tile_addr(op.results[0]);
        let (u, v) = (self.tile_addr(op.args[base]), self.tile_addr(op.args[base + 1]));
        let a = alpha.map(|a| self.const_val(Const::Float(a, s), s));
        for r in 0..rows {
            let ur = self.ld(s, u, (r * s.bytes()) as i32);
            let row = self.b.ins().iadd_imm_s(dst, (r * cols * s.bytes()) as i64);
            match a {
                None => {
                    self.elementwise(cols, s, &[Operand::Scalar(ur), Operand::Tile(v)], row, true, &mut |l, x| {
                        Ok(l.bin(BinOp::Mul, s, x[0], x[1]))
                    })?
                }
                Some(a) => {
                    let sr = self.bin(BinOp::Mul, s, a, ur);
                    self.elementwise(
                        cols,
                        s,
                        &[Operand::Scalar(sr), Operand::Tile(v), Operand::Tile(row)],
                        row,
                        true,
                        &mut |l, x| Ok(l.fma(x[0], x[1], x[2])),
                    )?
                }
            }
        }
        Ok(())
    }

    /// `outer(u, v)` (`alpha: None`) or the rank-1 update `t + alpha * u v^T` (the result tile
    /// already holds `t`) for float rows of at most [`OUTER_VECTORS`] whole vectors: `v` is
    /// loaded into registers once and each row is `u[r] * v` or one multiply-add per vector.
    /// The products are the same as the element-by-element form (`alpha * u[r]` first, exact
    /// for `alpha = -1` and `1`, which become a negated multiply-add and a plain one).
    /// Returns false, emitting nothing, for other shapes and types.
    fn outer_rows(&mut self, op: &Op, s: Scalar, alpha: Option<f64>) -> bool {
        let (rows, cols) = self.f.ty(op.results[0]).rows_cols();
        let lanes = 16 / s.bytes();
        let vt = match vec_ty(s) {
            Some(vt) if s.is_float() && cols % lanes == 0 && cols / lanes <= OUTER_VECTORS => vt,
            _ => return false,
        };
        let base = usize::from(alpha.is_some());
        let dst = self.tile_addr(op.results[0]);
        let (u, v) = (self.tile_addr(op.args[base]), self.tile_addr(op.args[base + 1]));
        let vv: Vec<ir::Value> =
            (0..cols / lanes).map(|c| self.b.ins().load(vt, flags(), v, (c * 16) as i32)).collect();
        let scale = match alpha {
            Some(a) if a != 1.0 && a != -1.0 => {
                let a = self.const_val(Const::Float(a, s), s);
                Some(self.b.ins().splat(vt, a))
            }
            _ => None,
        };
        for r in 0..rows {
            let ur = self.ld(s, u, (r * s.bytes()) as i32);
            let us = self.b.ins().splat(vt, ur);
            let us = match (alpha, scale) {
                (_, Some(a)) => self.b.ins().fmul(a, us),
                (Some(-1.0), None) => self.b.ins().fneg(us),
                _ => us,
            };
            for (c, vc) in vv.iter().enumerate() {
                let off = ((r * cols + c as u32 * lanes) * s.bytes()) as i32;
                let x = match alpha {
                    None => self.b.ins().fmul(us, *vc),
                    Some(_) => {
                        let t = self.b.ins().load(vt, flags(), dst, off);
                        self.fma(us, *vc, t)
                    }
                };
                self.b.ins().store(flags(), x, dst, off);
            }
        }
        true
    }
}
