//! LLVM IR for the NVPTX target from the SIMT form, and PTX from it (LLVM 16 through inkwell):
//! the kernel function and its parameters, types, intrinsics (special registers, warp
//! shuffles, barriers, fast math), and the target machine.

mod atomics;
mod body;
mod control;
mod half;
mod memory;
mod segment;

use crate::{PtxError, PtxKernel};
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, RelocMode, TargetTriple};
use inkwell::types::BasicTypeEnum;
use inkwell::values::{AnyValue, BasicValueEnum, FunctionValue, PointerValue};
use inkwell::AddressSpace;
use std::collections::HashMap;
use tilec_codegen_llvm::Ir;
use tilec_midend::simt::{ParamsLayout, SimtKernel};
use tilec_midend::{Scalar, Type, Value};

/// Address spaces of NVPTX.
pub(crate) const GLOBAL: u16 = 1;
pub(crate) const SHARED: u16 = 3;

/// The PTX calling convention of kernels (`ptx_kernel`).
const PTX_KERNEL: u32 = 71;

pub(crate) fn err(m: impl Into<String>) -> PtxError {
    PtxError { message: m.into(), loc: None }
}

pub(crate) fn be(e: impl std::fmt::Display) -> PtxError {
    err(e.to_string())
}

impl From<tilec_codegen_llvm::LlvmError> for PtxError {
    fn from(e: tilec_codegen_llvm::LlvmError) -> PtxError {
        err(e.0)
    }
}

/// How an IR value is held.
#[derive(Clone, Copy)]
pub(crate) enum Held<'ctx> {
    Val(BasicValueEnum<'ctx>),
    /// An array parameter: its global pointer and the params word of its extents.
    Global {
        ptr: PointerValue<'ctx>,
        dims_word: u32,
    },
    /// A shared array: its pointer and the index of its static extents.
    Shared {
        ptr: PointerValue<'ctx>,
        dims: usize,
    },
}

/// The generator state for one kernel.
pub(crate) struct Gen<'ctx, 'k> {
    pub(crate) cx: &'ctx Context,
    pub(crate) m: Module<'ctx>,
    pub(crate) b: Builder<'ctx>,
    pub(crate) f: FunctionValue<'ctx>,
    pub(crate) k: &'k SimtKernel,
    pub(crate) held: HashMap<Value, Held<'ctx>>,
    pub(crate) params: PointerValue<'ctx>,
    pub(crate) layout: ParamsLayout,
    pub(crate) shared_dims: Vec<Vec<u32>>,
    /// Bytes of static shared memory per block, every program's copies together.
    pub(crate) shared_bytes: u32,
    /// The program's segment of the warp, where several programs share one (`segment.rs`).
    pub(crate) segment: Option<segment::Segment<'ctx>>,
}

/// Compiles a SIMT kernel to PTX for `arch`.
pub(crate) fn compile(k: &SimtKernel, arch: &str) -> Result<PtxKernel, PtxError> {
    set_llvm_options();
    let cx = Context::create();
    let m = cx.create_module("tilec");
    let triple = TargetTriple::create("nvptx64-nvidia-cuda");
    let nvptx = tilec_codegen_llvm::Arch::Nvptx;
    let tm =
        tilec_codegen_llvm::target_machine(nvptx, &triple, arch, "+ptx78", RelocMode::Default, CodeModel::Default)?;
    m.set_triple(&triple);
    m.set_data_layout(&tm.get_target_data().get_data_layout());
    let gptr = cx.ptr_type(AddressSpace::from(GLOBAL));
    let arrays: Vec<Value> =
        k.func.body.params.iter().copied().filter(|p| matches!(k.func.ty(*p), Type::Array { .. })).collect();
    let mut args: Vec<inkwell::types::BasicMetadataTypeEnum> = vec![gptr.into()];
    args.extend(arrays.iter().map(|_| inkwell::types::BasicMetadataTypeEnum::from(gptr)));
    let fty = cx.void_type().fn_type(&args, false);
    let f = m.add_function("tilec_main", fty, None);
    f.set_call_conventions(PTX_KERNEL);
    // The params buffer is the launch's own, read-only allocation: no store reaches it, so
    // extents loaded from it stay valid across the kernel's stores.
    let attr = |name: &str| {
        let kind = inkwell::attributes::Attribute::get_named_enum_kind_id(name);
        cx.create_enum_attribute(kind, 0)
    };
    for name in ["noalias", "readonly", "nocapture"] {
        f.add_attribute(inkwell::attributes::AttributeLoc::Param(0), attr(name));
    }
    // Every array is its own allocation (the CUDA launcher allocates one buffer per array
    // argument), so array pointers do not alias; read-only arrays are never written during the
    // launch, so their loads may take the non-coherent path (ld.global.nc).
    for (i, a) in arrays.iter().enumerate() {
        let loc = inkwell::attributes::AttributeLoc::Param(i as u32 + 1);
        f.add_attribute(loc, attr("noalias"));
        f.add_attribute(loc, attr("nocapture"));
        if matches!(k.func.ty(*a), Type::Array { mutable: false, .. }) {
            f.add_attribute(loc, attr("readonly"));
        }
    }
    // No `.reqntid 32` (a block is one warp, of one program or several: `segment.rs`): with it, ptxas 12 gives
    // trsm_right_lower/upper_batched f32 and trsm_left_lower_t f64 fewer registers and they
    // spill (36, 40 and 4 bytes at sm_80), where without it no stdlib kernel spills.
    let b = cx.create_builder();
    let entry = cx.append_basic_block(f, "entry");
    b.position_at_end(entry);
    let params = f.get_nth_param(0).expect("params").into_pointer_value();
    let mut g = Gen {
        cx: &cx,
        m,
        b,
        f,
        k,
        held: HashMap::new(),
        params,
        layout: ParamsLayout::of(&k.kernel),
        shared_dims: Vec::new(),
        shared_bytes: 0,
        segment: None,
    };
    g.segment = g.segment()?;
    for (i, a) in arrays.iter().enumerate() {
        let ptr = f.get_nth_param(i as u32 + 1).expect("array").into_pointer_value();
        let pi = k.func.body.params.iter().position(|p| p == a).expect("param");
        g.held.insert(*a, Held::Global { ptr, dims_word: g.layout.offsets[pi] });
    }
    g.load_scalar_params()?;
    let body = k.func.body.clone();
    if !g.region(&body)? {
        g.b.build_return(None).map_err(be)?;
    }
    if !g.f.verify(false) {
        return Err(err(format!("LLVM rejected the generated function:\n{}", g.f.print_to_string())));
    }
    tilec_codegen_llvm::optimize(&g.m, &tm, true)?;
    let buf = tm.write_to_memory_buffer(&g.m, FileType::Assembly).map_err(be)?;
    let text = String::from_utf8_lossy(buf.as_slice()).trim_end_matches('\0').to_string();
    Ok(PtxKernel {
        text,
        entry: "tilec_main".into(),
        lanes: k.lanes,
        programs_per_block: segment::WARP / k.lanes,
        params: g.layout,
        shared_bytes: g.shared_bytes,
        arch: arch.to_string(),
    })
}

/// Sets LLVM's process-wide code generation options, once.
///
/// `-disable-machine-sink`: masked stores are branches around a `st.global`, and machine
/// sinking moves the arithmetic whose only use is such a store into its branch, past the
/// warp shuffles (convergent, never moved) that feed it. All shuffle results of a triangular
/// solve then stay live at once: the f64 `potrf_batched` went from 167 registers to 255 and
/// 440 spill bytes with sinking on (ptxas 12, sm_80).
fn set_llvm_options() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let args: Vec<std::ffi::CString> =
            ["tilec", "-disable-machine-sink"].iter().map(|a| std::ffi::CString::new(*a).expect("no NUL")).collect();
        let ptrs: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        let overview = c"tilec";
        // SAFETY: `ptrs` holds `ptrs.len()` valid NUL-terminated strings that outlive the call;
        // `Once` keeps LLVM's option parser from running twice or concurrently.
        unsafe { llvm_sys::support::LLVMParseCommandLineOptions(ptrs.len() as i32, ptrs.as_ptr(), overview.as_ptr()) };
    });
}

impl<'ctx> Gen<'ctx, '_> {
    /// The shared LLVM layer on this kernel's builder (`tilec-codegen-llvm`).
    pub(crate) fn ir(&self) -> Ir<'_, 'ctx> {
        Ir { cx: self.cx, m: &self.m, b: &self.b }
    }

    /// The LLVM type of a scalar (`bool` is `i1`).
    pub(crate) fn ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        self.ir().ty(s)
    }

    /// The value of a scalar.
    pub(crate) fn val(&self, v: Value) -> Result<BasicValueEnum<'ctx>, PtxError> {
        match self.held.get(&v) {
            Some(Held::Val(x)) => Ok(*x),
            _ => Err(err(format!("%{} has no scalar value", v.0))),
        }
    }

    pub(crate) fn elem(&self, v: Value) -> Scalar {
        self.k.func.ty(v).elem()
    }

    /// A call of an intrinsic returning a value.
    pub(crate) fn call(
        &self,
        name: &str,
        ret: BasicTypeEnum<'ctx>,
        args: &[BasicValueEnum<'ctx>],
    ) -> Result<BasicValueEnum<'ctx>, PtxError> {
        Ok(self.ir().call(name, ret, args)?)
    }

    /// A call of an intrinsic without result.
    pub(crate) fn call_void(&self, name: &str, args: &[BasicValueEnum<'ctx>]) -> Result<(), PtxError> {
        Ok(self.ir().call_void(name, args)?)
    }

    pub(crate) fn i32c(&self, v: i64) -> BasicValueEnum<'ctx> {
        self.cx.i32_type().const_int(v as u64, true).into()
    }

    /// A constant of type `s` (floats from `v`, integers truncating and wrapping it).
    pub(crate) fn constant(&self, s: Scalar, v: f64) -> BasicValueEnum<'ctx> {
        self.ir().constant(s, v)
    }
}
