//! The Tile IR: functions of SSA values with structured control flow (`for`, `if`, `while`
//! regions with block parameters and `yield`), whose values are scalars, register tiles or
//! global arrays. Values live in a per-function arena and are named by typed indices.
//! See `docs/ir.md` for the semantics of every operation.

use crate::types::{Scalar, Type};

/// An SSA value: an index into [`Function::values`]. Prints as `%N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Value(pub u32);

/// A source location, kept for diagnostics: a byte span in source `file`, an index into
/// `Module::sources` (0, the default, is the main file). An op inlined from a `fn` of another
/// source keeps that source's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Loc {
    pub start: u32,
    pub end: u32,
    pub file: u32,
}

/// A function of a module: its index in `Module::funcs` (`module.funcs[id]`). Printed `@N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FuncId(pub u32);

impl FuncId {
    /// The index in `Module::funcs`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl std::fmt::Display for FuncId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::ops::Index<FuncId> for Vec<Function> {
    type Output = Function;
    fn index(&self, id: FuncId) -> &Function {
        &self[id.index()]
    }
}

impl std::ops::Index<FuncId> for [Function] {
    type Output = Function;
    fn index(&self, id: FuncId) -> &Function {
        &self[id.index()]
    }
}

/// A compile-time scalar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Const {
    Bool(bool),
    Int(i64, Scalar),
    Float(f64, Scalar),
}

impl Const {
    /// The scalar type of the constant.
    pub fn ty(self) -> Scalar {
        match self {
            Const::Bool(_) => Scalar::Bool,
            Const::Int(_, s) | Const::Float(_, s) => s,
        }
    }

    /// As an `f64` (booleans are 0 or 1).
    pub fn as_f64(self) -> f64 {
        match self {
            Const::Bool(b) => b as i64 as f64,
            Const::Int(v, _) => v as f64,
            Const::Float(v, _) => v,
        }
    }

    /// As an `i64` (floats truncate toward zero).
    pub fn as_i64(self) -> i64 {
        match self {
            Const::Bool(b) => b as i64,
            Const::Int(v, _) => v,
            Const::Float(v, _) => v as i64,
        }
    }
}

/// Element-wise binary arithmetic, on scalars or tiles (a scalar operand broadcasts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Min,
    Max,
    And,
    Or,
}

/// Comparisons of two scalars, giving `bool`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Element-wise unary operations, on scalars or tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Not,
    Abs,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tanh,
    /// `2^x` (`exp2`).
    Exp2,
    /// `log2(x)` (`log2`).
    Log2,
    /// Rounds a float toward zero (`trunc`); the identity on integers. Not in the source
    /// language: the SIMT lowering of float `%` uses it (`simt/numerics.rs`).
    Trunc,
    /// Rounds an `f32` to the nearest `f16` value, ties to even (overflow to infinity, NaN
    /// stays NaN), as an `f32`. Not in the source language: `halfarith::lower` computes `f16`
    /// arithmetic in `f32` with it after each operation.
    RoundF16,
    /// Rounds an `f32` to the nearest `bf16` value like [`UnOp::RoundF16`].
    RoundBf16,
}

impl UnOp {
    /// The half type that [`UnOp::RoundF16`] and [`UnOp::RoundBf16`] round to (`None` for the
    /// other operations).
    pub fn rounds_to(self) -> Option<crate::Scalar> {
        match self {
            UnOp::RoundF16 => Some(crate::Scalar::F16),
            UnOp::RoundBf16 => Some(crate::Scalar::BF16),
            _ => None,
        }
    }
}

/// How a tile is filled by [`OpKind::Fill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fill {
    /// All zeros.
    Zeros,
    /// Ones on the diagonal, zeros elsewhere.
    Eye,
    /// Every element set to the scalar argument.
    Full,
    /// Every element set to its index along this axis (0: the row, 1: the column), converted
    /// to the element type.
    Iota(u8),
}

/// One dimension of a global-array access: a single position or a slice of static extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Index {
    /// The index argument is the position in this dimension; the dimension is dropped.
    At,
    /// The index argument is the slice start; the slice covers `start..start+extent` and
    /// becomes a tile dimension.
    Slice(u32),
}

/// Reductions over all elements or along one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reduce {
    Sum,
    Max,
    Min,
    /// The product (`prod`, `cumprod`).
    Prod,
}

/// The operations of the Tile IR. Argument and result conventions are given per variant; the
/// verifier (`verify.rs`) checks them.
#[derive(Debug, Clone, PartialEq)]
pub enum OpKind {
    /// `() -> scalar`
    Const(Const),
    /// `(a, b) -> c`: scalars, or tiles of one shape, or a tile and a scalar that broadcasts.
    Bin(BinOp),
    /// `(a, b) -> bool` on scalars.
    Cmp(CmpOp),
    /// `(a) -> b`, scalar or tile.
    Un(UnOp),
    /// `(a) -> b`: scalar conversion to the given type.
    Cast(Scalar),
    /// `(a) -> b`: the bits of a scalar reinterpreted as the given type of the same width
    /// (`i64` and `f64`, `i32`/`u32` and `f32`). Made only by the SIMT lowering (its `f64`
    /// math functions); the language has no bit casts.
    Bitcast(Scalar),
    /// `(cond, a, b) -> a or b`, scalars.
    Select,
    /// `(a, b, c) -> a*b + c`, scalars.
    Fma,
    /// `() -> i32`: this program's index along an axis of the grid.
    ProgramId(u8),
    /// `() -> i32`: the grid's extent along an axis.
    NumPrograms(u8),
    /// `(array) -> i32`: the array's extent along an axis.
    Dim(u8),
    /// `([x]) -> tile`: a new tile (`Full` takes the scalar `x`).
    Fill(Fill),
    /// `(array, i0, .., i{rank-1}) -> tile | scalar`: value load; elements outside the array
    /// read as zero.
    Load(Vec<Index>),
    /// `(tile, array, i0, ..) -> tile`: masked load; elements outside the array keep the tile's
    /// values.
    LoadInto(Vec<Index>),
    /// `(array, i0, .., value)`: store of a tile or scalar; only in-bounds elements are written.
    Store(Vec<Index>),
    /// `(u: tile<R>, v: tile<C>) -> tile<R, C>`: `u v^T`.
    Outer,
    /// `(t, u, v) -> t + alpha * u v^T`: a fused rank-1 update (made by `simplify`).
    Rank1(f64),
    /// `(a: tile<M, K>, b: tile<K, N>) -> tile<M, N>`.
    Matmul,
    /// `(t: tile<R, C>) -> tile<C, R>`.
    Transpose,
    /// `(t) -> scalar` over all elements, or `tile<R>`/`tile<C>` along axis 1/0.
    Reduce(Reduce, Option<u8>),
    /// `(t, i[, j]) -> scalar`: one element (indices must be in range: checked, else zero).
    Extract,
    /// `(t, i[, j], x) -> tile`: the tile with one element replaced.
    Insert,
    /// `(t: tile<R, C>, k: i32) -> tile<C>` (`d` = 0: row `k`, `t[k, :]`) or `tile<R>` (`d` = 1:
    /// column `k`, `t[:, k]`): one line of a matrix tile at a run-time index, its elements
    /// exactly; zeros when `k` is out of range.
    ExtractLine(u8),
    /// `(t: tile<R, C>, k: i32, v) -> tile<R, C>`: `t` with row (`d` = 0) or column (`d` = 1)
    /// `k` replaced by `v` (a tile of the line's type); `t` when `k` is out of range.
    InsertLine(u8),
    /// `(t) -> tile`: `t` repeated to the result's shape by NumPy's rule: `t`'s dimensions,
    /// aligned to the result's last ones, each equal to the result's or 1 (repeated): a
    /// `tile<N>` or `tile<1, N>` becomes every row of a `tile<M, N>`, a `tile<M, 1>` every
    /// column.
    Broadcast,
    /// `(t) -> tile`: the block of `t` that starts at these offsets (one per dimension) and
    /// has the result's shape (of `t`'s rank and element type, inside `t`).
    ExtractBlock(Vec<u32>),
    /// `(t, b) -> tile`: `t` with the block that starts at these offsets (one per dimension)
    /// and has `b`'s shape replaced by `b` (of `t`'s rank and element type, inside `t`).
    InsertBlock(Vec<u32>),
    /// `(t: tile<N, N>, eps) -> tile<N, N>`: lower Cholesky factor L with `A = L L^T`,
    /// pivots clamped below by `eps`, upper triangle zeroed.
    Cholesky,
    /// `(t: tile<N, N>) -> tile<N, N>`: the LU factorization without pivoting, in place (as
    /// LAPACK's getrf without pivoting): for `k = 0 .. N-1`, `t[i, k] /= t[k, k]` for `i > k`,
    /// then `t[i, j] -= t[i, k] * t[k, j]` (the product, then the difference) for `i, j > k`;
    /// the unit-lower `L` is below the diagonal, `U` on and above it.
    Lu,
    /// `(a: tile<N, N>, b) -> x`: triangular solve with `a`'s lower or upper triangle:
    /// `op(a) x = b` (left; `b: tile<N, M>` or `tile<N>`) or `x op(a) = b` (right;
    /// `b: tile<M, N>`), `op(a) = a` or `a^T`, unit diagonal assumed when `unit`.
    Trsm(Trsm),
    /// `(c, a: tile<M, K>, b: tile<K, N>) -> c + a @ b`: a fused matmul-accumulate (made by
    /// `simplify` from `c + a @ b`).
    MatmulAcc,
    /// `(t0, t1, ..) -> tile`: tiles of one shape; applies region 0 (params `(x0, x1, ..)`, one
    /// scalar per tile, ends with `Yield(y)`) to the elements at every position.
    Map,
    /// `(array, i0, .., value)`: atomically adds a tile or scalar to the in-bounds elements
    /// (on `f16`/`bf16` arrays as [`Rmw::Add`] does).
    AtomicAdd(Vec<Index>),
    /// `(array, i0, .., i{rank-1}, [cmp,] v) -> old`: one element (an `i32` index per
    /// dimension; `cmp` only for `Cas`) updated atomically from its old value and `v` (see
    /// [`Rmw`]), the old value as the result. Out of bounds: nothing is written and the result
    /// is 0. Relaxed: atomic with respect to every other atomic op of the launch on that
    /// element, and ordered with nothing else. On `f16`/`bf16` arrays the operands and result
    /// are `f32` values and the update is rounded as [`Rmw`] says.
    AtomicRmw(Rmw),
    /// `(t) -> t`: the inclusive scan of the tile `t` along `axis` (0: down each column, 1:
    /// along each row; 0 for a 1-D tile): element `i` is `t[0] op t[1] op .. op t[i]`,
    /// combined in index order with the `Reduce` kind's operation.
    Scan(Reduce, u8),
    /// `(t) -> t`: the tile `t` reversed along `axis` (0: the order of the rows, 1: of the
    /// columns; 0 for a 1-D tile): element `i` along it is `t`'s element `n - 1 - i`.
    Flip(u8),
    /// `(t) -> tile`: the elements of `t` in row-major order in a tile of the result's shape
    /// (the same element type and count).
    Reshape,
    /// `(array, i0, .., value, mask)`: stores the elements of the tile `value` where the
    /// `bool` tile `mask` (of `value`'s shape) is true and the position is in bounds; the
    /// other elements of the array are not touched.
    StoreMasked(Vec<Index>),
    /// `() -> array`: a zero-filled shared array of this static shape, private to the program
    /// (shared by its lanes on GPUs); accessed with `Load`, `LoadInto` and `Store`.
    AllocShared(Vec<u32>),
    /// Orders the program's shared-array accesses (`sync()`).
    Barrier,
    /// SIMT form only: `() -> i32`, this lane's index in the subgroup (`0..lanes`).
    LaneId,
    /// SIMT form only: `(x, src: i32) -> x`, the value of `x` on lane `src` of the subgroup
    /// (every lane takes part; `src` may differ between lanes).
    Shuffle,
    /// `(lo, hi, step, inits..) -> carried..`; region 0 has params `(iv, carried..)` and
    /// ends with `Yield(carried..)`.
    For,
    /// `(cond) -> results..`; regions 0 (then) and 1 (else) end with `Yield(results..)`.
    If,
    /// `(inits..) -> carried..`; region 0 (before) has params `(carried..)` and ends with
    /// `Yield(cond)`; region 1 (body) has params `(carried..)` and ends with `Yield(carried..)`.
    While,
    /// `(values..)`: terminator of a region.
    Yield,
    /// Ends the program (kernels) or returns the arguments (functions).
    Return,
    /// `(args..) -> results..`: a call of `Module::funcs[f]`, removed by `inline`.
    Call(FuncId),
    /// `(parts..) -> mat`: a small matrix or vector ([`Type::Mat`]) from its entries in
    /// row-major order (scalars, or tiles of its shape). Frontend only: [`crate::mats::lower`]
    /// removes it.
    MatBuild,
    /// `(mat) -> part`: entry `i` (row-major) of a small matrix or vector. Frontend only, as
    /// [`OpKind::MatBuild`].
    MatPart(u32),
    /// `(values..)`: `print(..)` of site `Module::debug[i]`: scalars and tiles (not arrays),
    /// in the types the site records. Made by the frontend; replaced by the pass `lower-debug`
    /// with stores into the kernel's debug buffer (`debug.rs`), so no backend sees it.
    Print(u32),
    /// `(cond: bool)`: `assert(cond, ..)` of site `Module::debug[i]`; replaced like
    /// [`OpKind::Print`].
    Assert(u32),
}

/// The update of an [`OpKind::AtomicRmw`]: the element's new value from its old one and the
/// operand `v` (and, for `Cas`, the comparand `cmp`).
///
/// On an `f16` or `bf16` array (whose elements the op reads and returns as exact `f32`
/// values) `v` and `cmp` are first rounded to the array's type as a store rounds them; the
/// update is then that of the half type: `Add` the correctly rounded half sum (the `f32` sum
/// of the two half values, rounded), `Min`/`Max` in `totalOrder` of the half values, `Cas`
/// comparing the 16-bit patterns. Targets make it a compare-and-swap loop on the 16 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rmw {
    /// `old + v` (integers wrap).
    Add,
    /// `v`.
    Xchg,
    /// `min(old, v)`; floats ordered by IEEE 754 `totalOrder` (`-NaN < -inf < .. < -0.0 <
    /// 0.0 < .. < inf < NaN`, the order of integer atomics on the bits: a signed minimum for
    /// a `v` with the sign bit clear, an unsigned maximum for one with it set).
    Min,
    /// `max(old, v)`, likewise (a signed maximum of the bits, or an unsigned minimum).
    Max,
    /// `v` if `old` has the same bits as `cmp`, else `old`.
    Cas,
}

impl Rmw {
    /// The name in the IR text and in `atomic_<name>` of the language.
    pub fn name(self) -> &'static str {
        match self {
            Rmw::Add => "add",
            Rmw::Xchg => "xchg",
            Rmw::Min => "min",
            Rmw::Max => "max",
            Rmw::Cas => "cas",
        }
    }
}

/// The variant of a triangular solve: which side the triangular tile is on, which triangle
/// is used, whether it is transposed, and whether its diagonal is taken as ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Trsm {
    pub left: bool,
    pub lower: bool,
    pub trans: bool,
    pub unit: bool,
}

impl Trsm {
    /// Quadrants' `L.solve_triangular_(B)`: `X L^T = B` with `L` lower.
    pub const RIGHT_LOWER_T: Trsm = Trsm { left: false, lower: true, trans: true, unit: false };

    /// The method-name form: `solve_right_lower_t_`, `solve_left_upper_unit_`, ...
    pub fn name(self) -> String {
        format!(
            "solve_{}_{}{}{}_",
            if self.left { "left" } else { "right" },
            if self.lower { "lower" } else { "upper" },
            if self.trans { "_t" } else { "" },
            if self.unit { "_unit" } else { "" }
        )
    }

    /// All sixteen variants, in a fixed order.
    pub fn all() -> Vec<Trsm> {
        (0..16u8).map(|i| Trsm { left: i & 8 != 0, lower: i & 4 != 0, trans: i & 2 != 0, unit: i & 1 != 0 }).collect()
    }

    /// The method names of all sixteen variants.
    pub fn all_names() -> Vec<String> {
        Trsm::all().into_iter().map(Trsm::name).collect()
    }

    /// Parses the method-name form.
    pub fn from_name(s: &str) -> Option<Trsm> {
        let rest = s.strip_prefix("solve_")?.strip_suffix('_')?;
        let (left, rest) =
            if let Some(r) = rest.strip_prefix("left_") { (true, r) } else { (false, rest.strip_prefix("right_")?) };
        let (lower, rest) =
            if let Some(r) = rest.strip_prefix("lower") { (true, r) } else { (false, rest.strip_prefix("upper")?) };
        let (trans, rest) = match rest.strip_prefix("_t") {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let unit = match rest {
            "" => false,
            "_unit" => true,
            _ => return None,
        };
        Some(Trsm { left, lower, trans, unit })
    }
}

/// One operation: its kind, operands, results, nested regions and source location.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub args: Vec<Value>,
    pub results: Vec<Value>,
    pub regions: Vec<Region>,
    pub loc: Loc,
}

impl Op {
    /// Whether the op does more than compute its results: writes memory (stores, atomic adds),
    /// orders it (barriers), transfers control (terminators, calls), or holds regions that may
    /// do any of these (`for`, `if`, `while`). Dead-code elimination keeps such ops; an op
    /// without effect may be moved past another without effect.
    pub fn has_effect(&self) -> bool {
        if self.kind == OpKind::Map {
            // A gather's map only loads; a scatter's stores or adds (frontend `gathers.rs`).
            return self.regions.iter().any(|r| r.ops.iter().any(|o| o.kind != OpKind::Yield && o.has_effect()));
        }
        matches!(
            self.kind,
            OpKind::Store(_)
                | OpKind::StoreMasked(_)
                | OpKind::AtomicAdd(_)
                | OpKind::AtomicRmw(_)
                | OpKind::Barrier
                | OpKind::Return
                | OpKind::Yield
                | OpKind::Call(_)
                | OpKind::Print(_)
                | OpKind::Assert(_)
                | OpKind::For
                | OpKind::If
                | OpKind::While
        )
    }
}

/// A list of operations with block parameters, ending in a terminator where required.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Region {
    pub params: Vec<Value>,
    pub ops: Vec<Op>,
}

impl Region {
    /// The integer constant that defines `v`, if a `Const` op of the region (or of a nested
    /// one) does.
    pub fn int_const(&self, v: Value) -> Option<i64> {
        self.ops.iter().find_map(|op| {
            if op.results.first() == Some(&v) {
                return match op.kind {
                    OpKind::Const(Const::Int(c, _)) => Some(c),
                    _ => None,
                };
            }
            op.regions.iter().find_map(|r| r.int_const(v))
        })
    }

    /// Whether an op of the region (or of a nested one) reads or writes an array: a `map`
    /// that gathers or scatters, which passes must not move past other memory operations.
    pub fn accesses_memory(&self) -> bool {
        self.ops.iter().any(|o| {
            matches!(
                o.kind,
                OpKind::Load(_)
                    | OpKind::LoadInto(_)
                    | OpKind::Store(_)
                    | OpKind::StoreMasked(_)
                    | OpKind::AtomicAdd(_)
                    | OpKind::AtomicRmw(_)
            ) || o.regions.iter().any(Region::accesses_memory)
        })
    }

    /// Takes op `i` out of the region, leaving an empty `barrier` in its place until
    /// [`Region::remove_ops`] drops it, so that the indices of the other ops stay valid.
    pub fn take_op(&mut self, i: usize) -> Op {
        let hole = Op { kind: OpKind::Barrier, args: vec![], results: vec![], regions: vec![], loc: self.ops[i].loc };
        std::mem::replace(&mut self.ops[i], hole)
    }

    /// Removes the ops whose flag in `removed` (one per op, in order) is set.
    pub fn remove_ops(&mut self, removed: &[bool]) {
        let mut flags = removed.iter();
        self.ops.retain(|_| !flags.next().copied().unwrap_or(false));
    }

    /// Adds to `uses`, for every value, how many operands of this region's ops and of their
    /// nested regions refer to it.
    pub fn count_uses(&self, uses: &mut std::collections::HashMap<Value, usize>) {
        for op in &self.ops {
            for a in &op.args {
                *uses.entry(*a).or_default() += 1;
            }
            for reg in &op.regions {
                reg.count_uses(uses);
            }
        }
    }
}

/// Per-value data: the type.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueData {
    pub ty: Type,
}

/// What a function is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FuncKind {
    /// A kernel body: one program of the grid.
    Kernel,
    /// A `fn` item instance, inlined into its callers.
    Fn,
    /// The launch function of a kernel: computes `[grid0, grid1, grid2, flops]` (i64 x3, f64)
    /// from the kernel's parameters, with scalar operations only.
    Launch,
}

/// A function: parameters are the body region's params.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    pub name: String,
    pub kind: FuncKind,
    pub body: Region,
    pub ret: Vec<Type>,
    pub values: Vec<ValueData>,
}

impl Function {
    /// A function with no body yet.
    pub fn new(name: impl Into<String>, kind: FuncKind) -> Function {
        Function { name: name.into(), kind, body: Region::default(), ret: Vec::new(), values: Vec::new() }
    }

    /// Whether `o` is a plain scalar operation: no nested regions, at most one result, every
    /// operand and result a scalar (no tile, no array). The CPU backends compute a `map` whose
    /// body holds only such ops a vector of lanes at a time.
    pub fn is_scalar_op(&self, o: &Op) -> bool {
        o.regions.is_empty()
            && o.results.len() <= 1
            && o.args.iter().chain(&o.results).all(|v| matches!(self.ty(*v), Type::Scalar(_)))
    }

    /// Allocates a new value of type `ty`.
    pub fn new_value(&mut self, ty: Type) -> Value {
        self.values.push(ValueData { ty });
        Value(self.values.len() as u32 - 1)
    }

    /// The type of `v`.
    pub fn ty(&self, v: Value) -> &Type {
        &self.values[v.0 as usize].ty
    }

    /// The parameters of the function.
    pub fn params(&self) -> &[Value] {
        &self.body.params
    }
}

/// One dimension of an array parameter's declared shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dim {
    /// A literal extent that the argument must have.
    Fixed(u64),
    /// A constant extent written as a name, a const parameter or a `const` item (`K`): checked
    /// as [`Dim::Fixed`], shown by its name (`expected shape [K, K] = [3, 3]`).
    Named(String, u64),
    /// A shape variable, bound by its first occurrence and checked against the others.
    Var(String),
    /// An extent computed from shape variables, integer scalar parameters and constants
    /// (`Z * H`, `cdiv(N, 16)`, `n`): checked against the argument, never bound.
    Expr(crate::dims::DimExpr),
}

impl std::fmt::Display for Dim {
    /// As declared: `92`, `N`, `Z * H`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Fixed(n) => write!(f, "{n}"),
            Dim::Var(v) | Dim::Named(v, _) => f.write_str(v),
            Dim::Expr(e) => write!(f, "{e}"),
        }
    }
}

/// The declared kind of a kernel parameter, for binding launch arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// An array: its element type, declared extents, whether it may be written, and whether a
    /// launch may omit it (`A: f32[N]?`; omitted, it is bound as an array with every extent 0).
    Array {
        elem: Scalar,
        dims: Vec<Dim>,
        mutable: bool,
        optional: bool,
    },
    Scalar(Scalar),
}

impl ParamKind {
    /// The type of a scalar parameter (`None` for arrays).
    pub fn scalar_type(&self) -> Option<Scalar> {
        match self {
            ParamKind::Scalar(s) => Some(*s),
            ParamKind::Array { .. } => None,
        }
    }
}

/// A kernel parameter as declared.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelParam {
    pub name: String,
    pub kind: ParamKind,
}

/// A kernel instance: its signature, its body function and its launch function.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Source name (`potrf_batched`).
    pub name: String,
    /// Mangled instance name (`potrf_batched__f32`), a valid C identifier.
    pub symbol: String,
    pub params: Vec<KernelParam>,
    /// The body (kind `Kernel`) in `Module::funcs`.
    pub body: FuncId,
    /// The launch function (kind `Launch`) in `Module::funcs`.
    pub launch: FuncId,
    /// Rank of the grid clause (1 to 3).
    pub grid_rank: u8,
    /// The `block(n)` hint (lanes per program), if given.
    pub block: Option<u32>,
    /// Whether `flops(..)` was given (else the launch function returns NaN for it).
    pub has_flops: bool,
    pub doc: Option<String>,
    /// The span of the kernel's name, in the source `Module::source_of(loc)`.
    pub loc: Loc,
}

/// A compiled module: every function instance and every kernel instance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Module {
    pub funcs: Vec<Function>,
    pub kernels: Vec<Kernel>,
    /// The sources that `Loc::file` indexes: `None` the main file, `Some(name)` a
    /// standard-library module. Empty, or with `None` first: file 0 is the main file.
    pub sources: Vec<Option<String>>,
    /// The `print` and `assert` sites that [`OpKind::Print`] and [`OpKind::Assert`] index.
    pub debug: Vec<crate::debug::DebugSite>,
}

impl Module {
    /// The source of `loc` (`None`: the main file), as `Diagnostic::source` names it.
    pub fn source_of(&self, loc: Loc) -> Option<String> {
        self.sources.get(loc.file as usize).cloned().flatten()
    }
}

impl Module {
    /// The kernel instance with this source name, if exactly one exists; else by symbol.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        let mut by_name = self.kernels.iter().filter(|k| k.name == name);
        match (by_name.next(), by_name.next()) {
            (Some(k), None) => Some(k),
            _ => self.kernels.iter().find(|k| k.symbol == name),
        }
    }
}
