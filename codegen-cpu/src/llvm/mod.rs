//! The second CPU code generator (`--backend llvm`, cargo feature `llvm`): LLVM IR from the
//! same Tile IR as the Cranelift backend, optimised by LLVM 16 (`default<O3>`) for the host
//! CPU's own features (AVX2, AVX-512, FMA: `target-cpu`/`target-features` of the host), then
//! JIT-compiled (MCJIT) or written as an object file, with the crate's C ABI.
//!
//! Tiles live in stack allocations (`alloca`) that every operation reads and writes with
//! whole-row vector loads and stores at constant offsets where the shape allows; LLVM's scalar
//! replacement of aggregates then keeps small tiles (a 16 x 16 f32 tile is 16 `<16 x float>`
//! values) in vector registers across operations and loops, and larger tiles stay in memory.
//! The semantics are those of the Cranelift backend, operation by operation, with the same
//! arithmetic in the same order for element-wise ops, reductions and products (gemm gives the
//! same bits); Cholesky and the triangular solves follow the SIMT lowering (a multiply then a
//! subtraction, as Cranelift's do), so the two give the same bits there too
//! (`tile_ops::cpu_solves_and_cholesky_round_in_the_documented_order`, and the differential
//! fuzzer compares their bits). Both backends pass the same run tests.
//!
//! Two rewrites of its own, both keeping the bits: the module first goes through
//! `tilec_midend::passes::cpu_passes(true)` (with `block-rank1`: loops of rank-1 updates read
//! from arrays become tile products), and a `transpose` or `neg` used once as (part of) a
//! product's left operand is not formed: the product reads its elements in place, negated
//! where needed (`tilec_midend::fusion::left_operands`; transposes: potrs 4096 x 92 f32
//! 120-126 -> 111-113 ms on a 2-core Zen 2; negations: potrf 512 x 92 f32 8.4-8.6 -> 8.0-8.4
//! ms on one Zen 3 thread). A 16 x 16 tile loaded only for a product, with no store in
//! between, is read by the product straight from its array where it lies inside it
//! (`tilec_midend::fusion::direct_loads`; potrs 512 x 92 f32 on one Zen 3 thread, with the
//! prefetch change below: 24.4 -> 23.7 ms), and so is one loaded only for a `transpose`
//! (transposed by blocks, `tile.rs`, `transpose_blocks`). A tile loaded only for an
//! element-wise op (a `map`, a binary or unary op) is read by it in place too
//! (`tilec_midend::fusion::map_loads`; a row streamed into an accumulator,
//! `acc += A[i, j0:j0+1024] * y` over 4096 x 4096 f32 on one AMD EPYC thread: 9.4 -> 5.7 ms), and a
//! `map` whose result is a loop's carried tile computes it in that tile's storage, and a `map`
//! over a tile of at most four 64-byte vectors is straight-line vector code (`vmap.rs`: the
//! `where`s of a 16-lane compact kernel had been 8-wide loops through the stack; same bits).
//! In a kernel
//! with one grid axis, the other tile
//! loads indexed by `program_id(0)` also prefetch the next program's tile (`memory.rs`,
//! `prefetch_next`).

mod atomics;
mod blocks;
mod control;
mod factor;
mod half;
mod matmul;
mod memory;
pub(crate) mod orc;
mod reduce;
mod scalar;
mod strided;
mod tile;
mod views;
mod vmap;

use crate::{CodegenError, KernelFn};
use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, RelocMode, TargetMachine};
use inkwell::types::{BasicType, BasicTypeEnum, VectorType};
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, OptimizationLevel};
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use tilec_codegen_llvm::Ir;
use tilec_midend::fusion::LeftOperand;
use tilec_midend::{FuncKind, Function, Kernel, Scalar, Type, Value};

pub(crate) type V<'ctx> = BasicValueEnum<'ctx>;

pub(crate) fn err(m: impl std::fmt::Display) -> CodegenError {
    CodegenError { message: m.to_string(), loc: None }
}

/// Maps inkwell's builder errors.
pub(crate) fn be(e: impl std::fmt::Display) -> CodegenError {
    err(format!("LLVM builder: {e}"))
}

impl From<tilec_codegen_llvm::LlvmError> for CodegenError {
    fn from(e: tilec_codegen_llvm::LlvmError) -> CodegenError {
        err(e)
    }
}

/// How an IR value is held.
#[derive(Clone)]
pub(crate) enum Held<'ctx> {
    Val(V<'ctx>),
    /// A tile: its storage (row-major elements).
    Tile(PointerValue<'ctx>),
    /// A global or shared array: its data pointer and extents (`i64`).
    Array {
        ptr: PointerValue<'ctx>,
        dims: Vec<IntValue<'ctx>>,
    },
}

/// The generator state of one function.
pub(crate) struct Gen<'ctx, 'f> {
    pub(crate) cx: &'ctx Context,
    pub(crate) m: &'f Module<'ctx>,
    pub(crate) b: Builder<'ctx>,
    /// Positioned at the end of the entry block, where every `alloca` goes.
    allocas: Builder<'ctx>,
    pub(crate) func: FunctionValue<'ctx>,
    pub(crate) f: &'f Function,
    pub(crate) held: HashMap<Value, Held<'ctx>>,
    /// Integer constants of the function, for indices known at compile time.
    pub(crate) consts: HashMap<Value, i64>,
    ids: PointerValue<'ctx>,
    exit: BasicBlock<'ctx>,
    /// For a launch function: where `Return` writes the grid (`int64_t[3]`) and the flops.
    results: Option<(PointerValue<'ctx>, PointerValue<'ctx>)>,
    pub(crate) fma: bool,
    /// Bytes of `alloca`s so far (tiles, scratch copies, shared arrays).
    frame: u64,
    /// How many operands (in all regions) refer to each value.
    pub(crate) uses: HashMap<Value, usize>,
    /// Left operands of products read in place (`tilec_midend::fusion::left_operands`):
    /// operand -> how to read it.
    pub(crate) left_views: HashMap<Value, LeftOperand>,
    /// The `transpose` and `neg` results those reads leave unformed.
    pub(crate) unformed: std::collections::HashSet<Value>,
    /// The `program_id(0)` values of a kernel that uses no other grid axis: loads indexed by
    /// one prefetch the next program's tile (`memory.rs`, `prefetch_next`).
    pub(crate) batch_ids: std::collections::HashSet<Value>,
    /// Results to compute in a loop's carried storage (`control.rs`, `in_place_results`).
    pub(crate) in_place: HashMap<Value, PointerValue<'ctx>>,
    /// For the `if` or loop being lowered: the values of its region that nothing after it
    /// reads (`control.rs`, `carried_if`, `carried_from`).
    pub(crate) lendable: std::collections::HashSet<Value>,
    /// Tile loads that their product or triangular solve reads from the array
    /// (`tilec_midend::fusion::direct_loads`).
    pub(crate) direct: std::collections::HashSet<Value>,
    /// Those loads reached so far, not yet read: their ops, emitted at the product.
    pub(crate) pending: HashMap<Value, tilec_midend::Op>,
    /// The array indices proven in bounds, whose checks are left out.
    pub(crate) bounds: tilec_midend::bounds::Bounds,
}

/// The host's target machine (its CPU name and features), for JIT code (`pic`: false) or
/// object files.
fn host_machine(pic: bool) -> Result<TargetMachine, CodegenError> {
    machine(pic, None)
}

/// The target machine of the host's architecture for CPU `cpu` (an LLVM CPU name, with the
/// features it implies), or for the host's own CPU and features.
fn machine(pic: bool, cpu: Option<&str>) -> Result<TargetMachine, CodegenError> {
    use tilec_codegen_llvm::{target_machine, Arch};
    tilec_codegen_llvm::initialize(Arch::Host)?;
    let triple = TargetMachine::get_default_triple();
    let (cpu, features) = match cpu {
        Some(c) => (c.to_string(), String::new()),
        None => (TargetMachine::get_host_cpu_name().to_string(), TargetMachine::get_host_cpu_features().to_string()),
    };
    let (reloc, model) =
        if pic { (RelocMode::PIC, CodeModel::Default) } else { (RelocMode::Default, CodeModel::JITDefault) };
    Ok(target_machine(Arch::Host, &triple, &cpu, &features, reloc, model)?)
}

/// Builds the module of `kernels` (each kernel body, and with `launch` its `__grid` function)
/// and optimises it for `tm`.
fn build<'ctx>(
    cx: &'ctx Context,
    module: &tilec_midend::Module,
    kernels: &[&Kernel],
    launch: bool,
    tm: &TargetMachine,
) -> Result<Module<'ctx>, CodegenError> {
    let module = &crate::cpu_module(module, true)?;
    let m = cx.create_module("tilec");
    m.set_triple(&tm.get_triple());
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    let ptr = cx.ptr_type(AddressSpace::default());
    let cpu = tm.get_cpu().to_string();
    let features = tm.get_feature_string().to_string_lossy().into_owned();
    for k in kernels {
        let mut fns = vec![(k.symbol.clone(), &module.funcs[k.body], 2)];
        if launch {
            fns.push((format!("{}__grid", k.symbol), &module.funcs[k.launch], 3));
        }
        for (name, f, n) in fns {
            let fty = cx.void_type().fn_type(&vec![ptr.into(); n], false);
            let func = m.add_function(&name, fty, None);
            for (key, val) in [("target-cpu", cpu.as_str()), ("target-features", features.as_str())] {
                func.add_attribute(AttributeLoc::Function, cx.create_string_attribute(key, val));
            }
            // Tiles make large frames: probe them page by page.
            func.add_attribute(AttributeLoc::Function, cx.create_string_attribute("probe-stack", "inline-asm"));
            lower_function(cx, &m, func, f, k, &module.funcs[k.launch])?;
        }
    }
    m.verify().map_err(|e| {
        let e = e.to_string();
        err(format!("LLVM rejected the generated module: {}", e.lines().take(4).collect::<Vec<_>>().join("; ")))
    })?;
    // No loop unrolling by LLVM: the lowering unrolls what it wants (small tiles, short `k`
    // loops) and keeps its other loops, such as the matmul's row blocks, whose accumulators
    // then stay in registers.
    tilec_codegen_llvm::optimize(&m, tm, false)?;
    Ok(m)
}

/// Translates `f` (a kernel body with parameters `args`, `ids`; or a launch function with
/// `args`, `grid`, `flops`) into `func`.
fn lower_function<'ctx>(
    cx: &'ctx Context,
    m: &Module<'ctx>,
    func: FunctionValue<'ctx>,
    f: &Function,
    k: &Kernel,
    launch: &Function,
) -> Result<(), CodegenError> {
    if f.body.params.len() != k.params.len() {
        return Err(err("kernel parameters do not match its body function"));
    }
    let entry = cx.append_basic_block(func, "entry");
    let start = cx.append_basic_block(func, "start");
    let exit = cx.append_basic_block(func, "exit");
    let allocas = cx.create_builder();
    allocas.position_at_end(entry);
    let b = cx.create_builder();
    b.position_at_end(start);
    let param = |i: u32| func.get_nth_param(i).expect("param").into_pointer_value();
    let results = (f.kind == FuncKind::Launch).then(|| (param(1), param(2)));
    let mut g = Gen {
        cx,
        m,
        b,
        allocas,
        func,
        f,
        held: HashMap::new(),
        consts: HashMap::new(),
        ids: param(1),
        exit,
        results,
        fma: crate::isa::host_has_fma(),
        uses: HashMap::new(),
        left_views: HashMap::new(),
        unformed: Default::default(),
        batch_ids: Default::default(),
        in_place: HashMap::new(),
        lendable: Default::default(),
        direct: Default::default(),
        pending: HashMap::new(),
        frame: 0,
        bounds: tilec_midend::bounds::Bounds::of(k, f, launch),
    };
    f.body.count_uses(&mut g.uses);
    (g.left_views, g.unformed) = tilec_midend::fusion::left_operands(f, &g.uses);
    g.direct = tilec_midend::fusion::direct_loads(f, &g.uses, &g.left_views, &g.unformed, matmul::DIRECT_MAX_ELEMS);
    g.direct.extend(tilec_midend::fusion::map_loads(f, &g.uses));
    g.direct.extend(tilec_midend::fusion::packed_left_operands(f, &g.uses, &g.left_views, &g.unformed));
    g.batch_ids = batch_ids(f);
    g.params(param(0))?;
    g.region(&f.body)?;
    crate::lower::check_frame(k, g.frame)?;
    g.b.build_unconditional_branch(exit).map_err(be)?;
    g.b.position_at_end(exit);
    g.b.build_return(None).map_err(be)?;
    g.allocas.build_unconditional_branch(start).map_err(be)?;
    Ok(())
}

/// The results of `program_id(0)` in `f`, if it reads no other grid axis: then the CPU
/// launcher runs program `b + 1` after `b` on the same thread (but at the ends of its parts).
fn batch_ids(f: &Function) -> std::collections::HashSet<Value> {
    fn walk(r: &tilec_midend::Region, ids: &mut Vec<(u8, Value)>) {
        for op in &r.ops {
            if let tilec_midend::OpKind::ProgramId(ax) = op.kind {
                ids.push((ax, op.results[0]));
            }
            for reg in &op.regions {
                walk(reg, ids);
            }
        }
    }
    let mut ids = Vec::new();
    walk(&f.body, &mut ids);
    if ids.iter().any(|(ax, _)| *ax != 0) {
        return Default::default();
    }
    ids.into_iter().map(|(_, v)| v).collect()
}

/// A JIT-compiled kernel: the LLVM context and execution engine that own its code.
pub(crate) struct LlvmJit {
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    /// From `Box::into_raw`; freed in `drop`, after the engine.
    cx: *mut Context,
}

impl Drop for LlvmJit {
    fn drop(&mut self) {
        // SAFETY: the engine (and the module it owns) refers to the context: drop it first;
        // `cx` came from `Box::into_raw` and nothing uses it afterwards.
        unsafe {
            ManuallyDrop::drop(&mut self.engine);
            drop(Box::from_raw(self.cx));
        }
    }
}

/// JIT-compiles one kernel instance; returns the engine that owns the code and its entry.
pub(crate) fn compile_jit(module: &tilec_midend::Module, kernel: &Kernel) -> Result<(LlvmJit, KernelFn), CodegenError> {
    let tm = host_machine(false)?;
    let cx = Box::into_raw(Box::new(Context::create()));
    // SAFETY: `cx` stays allocated until `LlvmJit` (or the error path below) frees it, after the
    // engine and module that borrow it are gone.
    let cxr: &'static Context = unsafe { &*cx };
    let built = build(cxr, module, &[kernel], false, &tm).and_then(|m| {
        let engine = m.create_jit_execution_engine(OptimizationLevel::Aggressive).map_err(err)?;
        let addr = engine.get_function_address(&kernel.symbol).map_err(err)?;
        Ok((engine, addr))
    });
    match built {
        Ok((engine, addr)) => {
            // SAFETY: the function was generated with the signature of `KernelFn`.
            let entry = unsafe { std::mem::transmute::<usize, KernelFn>(addr) };
            Ok((LlvmJit { engine: ManuallyDrop::new(engine), cx }, entry))
        }
        Err(e) => {
            // SAFETY: everything that borrowed the context has been dropped with `built`.
            drop(unsafe { Box::from_raw(cx) });
            Err(e)
        }
    }
}

/// The object code of one kernel instance (no launch function), position-independent, for the
/// host: what [`orc::load`] links back.
pub(crate) fn compile_jit_object(module: &tilec_midend::Module, kernel: &Kernel) -> Result<Vec<u8>, CodegenError> {
    let tm = host_machine(true)?;
    let cx = Context::create();
    let m = build(&cx, module, &[kernel], false, &tm)?;
    let buf = tm.write_to_memory_buffer(&m, FileType::Object).map_err(err)?;
    Ok(buf.as_slice().to_vec())
}

/// The optimised LLVM IR of one kernel instance.
pub(crate) fn emit_llvm(module: &tilec_midend::Module, kernel: &Kernel) -> Result<String, CodegenError> {
    let tm = host_machine(false)?;
    let cx = Context::create();
    let m = build(&cx, module, &[kernel], false, &tm)?;
    Ok(m.print_to_string().to_string())
}

/// An object file of every kernel instance and its launch function (see the crate docs), for
/// CPU `cpu` (`None`: the host's).
pub(crate) fn compile_object(module: &tilec_midend::Module, cpu: Option<&str>) -> Result<Vec<u8>, CodegenError> {
    let tm = machine(true, cpu)?;
    let cx = Context::create();
    let kernels: Vec<&Kernel> = module.kernels.iter().collect();
    let m = build(&cx, module, &kernels, true, &tm)?;
    let buf = tm.write_to_memory_buffer(&m, FileType::Object).map_err(err)?;
    Ok(buf.as_slice().to_vec())
}

impl<'ctx> Gen<'ctx, '_> {
    /// Binds the parameters from the argument block (see the crate docs for its layout).
    fn params(&mut self, args: PointerValue<'ctx>) -> Result<(), CodegenError> {
        let mut slot = 0u64;
        let i64t = self.cx.i64_type();
        for p in self.f.body.params.clone() {
            match self.f.ty(p).clone() {
                Type::Array { rank, .. } => {
                    let ptr_ty = self.cx.ptr_type(AddressSpace::default());
                    let ptr = self.load_slot(args, slot, ptr_ty.into())?.into_pointer_value();
                    let dims = (0..rank as u64)
                        .map(|d| self.load_slot(args, slot + 1 + d, i64t.into()).map(|v| v.into_int_value()))
                        .collect::<Result<_, _>>()?;
                    slot += 1 + rank as u64;
                    self.held.insert(p, Held::Array { ptr, dims });
                }
                Type::Scalar(s) => {
                    let v = if s == Scalar::Bool {
                        let x = self.load_slot(args, slot, self.cx.i8_type().into())?.into_int_value();
                        let z = self.cx.i8_type().const_zero();
                        self.b.build_int_compare(inkwell::IntPredicate::NE, x, z, "").map_err(be)?.into()
                    } else {
                        self.load_slot(args, slot, self.ty(s))?
                    };
                    slot += 1;
                    self.held.insert(p, Held::Val(v));
                }
                Type::Tile { .. } | Type::Mat { .. } => return Err(err("a kernel parameter cannot be a tile")),
            }
        }
        Ok(())
    }

    fn load_slot(&self, base: PointerValue<'ctx>, slot: u64, ty: BasicTypeEnum<'ctx>) -> Result<V<'ctx>, CodegenError> {
        let i64t = self.cx.i64_type();
        // SAFETY (LLVM semantics): the argument block has a slot for every parameter.
        let p = unsafe { self.b.build_in_bounds_gep(i64t, base, &[i64t.const_int(slot, false)], "") }.map_err(be)?;
        self.b.build_load(ty, p, "").map_err(be)
    }

    /// Program id (`off` 0) or grid extent (`off` 3) along `axis`, as an `i32`.
    pub(crate) fn id(&self, off: u64, axis: u8) -> Result<V<'ctx>, CodegenError> {
        let v = self.load_slot(self.ids, off + axis as u64, self.cx.i64_type().into())?.into_int_value();
        Ok(self.b.build_int_truncate(v, self.cx.i32_type(), "").map_err(be)?.into())
    }

    /// The shared LLVM layer on this function's builder (`tilec-codegen-llvm`).
    pub(crate) fn ir(&self) -> Ir<'_, 'ctx> {
        Ir { cx: self.cx, m: self.m, b: &self.b }
    }

    /// The LLVM type of a scalar (`bool` is `i1`).
    pub(crate) fn ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        self.ir().ty(s)
    }

    /// The type of a scalar in memory: `bool` is a byte (0 or 1), as in the Cranelift backend;
    /// `f16` is `half` and `bf16` its 16 bits.
    pub(crate) fn mem_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        self.ir().mem_ty(s, self.cx.i8_type().into())
    }

    /// `<n x s>`.
    pub(crate) fn vty(&self, s: Scalar, n: u32) -> VectorType<'ctx> {
        self.ir().vty(s, n)
    }

    /// The scalar value of `v`.
    pub(crate) fn val(&self, v: Value) -> Result<V<'ctx>, CodegenError> {
        match self.held.get(&v) {
            Some(Held::Val(x)) => Ok(*x),
            _ => Err(err(format!("%{} has no scalar value", v.0))),
        }
    }

    /// The element type of `v`.
    pub(crate) fn elem(&self, v: Value) -> Scalar {
        self.f.ty(v).elem()
    }

    /// An `alloca` of `n` elements of `s` in the entry block, 64-byte aligned.
    pub(crate) fn alloca(&mut self, s: Scalar, n: u32) -> Result<PointerValue<'ctx>, CodegenError> {
        self.frame += n.max(1) as u64 * s.bytes() as u64;
        let p = self.allocas.build_alloca(self.mem_ty(s).array_type(n.max(1)), "").map_err(be)?;
        p.as_instruction().expect("alloca").set_alignment(64).map_err(be)?;
        Ok(p)
    }

    pub(crate) fn i64c(&self, v: i64) -> IntValue<'ctx> {
        self.cx.i64_type().const_int(v as u64, true)
    }

    pub(crate) fn i32c(&self, v: i64) -> IntValue<'ctx> {
        self.cx.i32_type().const_int(v as u64, true)
    }

    /// A constant of type `s` (floats from `v`, integers truncating and wrapping it).
    pub(crate) fn constant(&self, s: Scalar, v: f64) -> V<'ctx> {
        self.ir().constant(s, v)
    }

    /// A call of `name` returning a value of type `ret`.
    pub(crate) fn call(&self, name: &str, ret: BasicTypeEnum<'ctx>, args: &[V<'ctx>]) -> Result<V<'ctx>, CodegenError> {
        Ok(self.ir().call(name, ret, args)?)
    }

    /// A call of `name` without result.
    pub(crate) fn call_void(&self, name: &str, args: &[V<'ctx>]) -> Result<(), CodegenError> {
        Ok(self.ir().call_void(name, args)?)
    }
}
