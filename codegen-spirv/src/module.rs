//! Module structure: capabilities, types and constants (cached), the interface variables
//! (storage buffers, the params buffer, built-ins, shared arrays) and the entry point.

use crate::{err, Chunks, ParamsLayout, SpirvError, SpirvKernel, SpirvOptions};
use rspirv::binary::Assemble;
use rspirv::dr::{Builder, Operand};
use rspirv::spirv::{self, BuiltIn, Capability, Decoration, StorageClass, Word};
use std::collections::HashMap;
use tilec_midend::simt::SimtKernel;
use tilec_midend::{ParamKind, Scalar, Type, Value};

/// How an IR value is held in the shader.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Held {
    /// An SSA id.
    Id(Word),
    /// An array parameter: its storage-buffer variable (a descriptor array when chunked,
    /// with `2^chunk` elements a buffer) and the params word of its extents.
    Buffer { var: Word, dims_word: u32, chunk: Option<u8> },
    /// A shared array: its workgroup variable and static extents index into `shared_dims`.
    Shared { var: Word, dims: usize },
}

/// The generator state.
pub(crate) struct Gen<'k> {
    pub(crate) b: Builder,
    pub(crate) k: &'k SimtKernel,
    pub(crate) held: HashMap<Value, Held>,
    consts: HashMap<(u32, u64), Word>,
    types: HashMap<Scalar, Word>,
    pub(crate) t_bool: Word,
    pub(crate) t_u32: Word,
    pub(crate) t_i32: Word,
    pub(crate) glsl: Word,
    pub(crate) params: Word,
    pub(crate) layout: ParamsLayout,
    pub(crate) wg_id: Word,
    pub(crate) lane_var: Word,
    pub(crate) shared_dims: Vec<Vec<u32>>,
    /// Label of the block being emitted.
    pub(crate) cur: Word,
    interface: Vec<Word>,
    buffer_structs: HashMap<Scalar, Word>,
    /// Descriptor counts of chunked arrays, by variable.
    pub(crate) chunk_counts: HashMap<Word, u32>,
}

/// Compiles a kernel in SIMT form to a SPIR-V compute shader, every array in one buffer.
pub fn compile(k: &SimtKernel) -> Result<SpirvKernel, SpirvError> {
    compile_with(k, &SpirvOptions::default())
}

/// Compiles a kernel in SIMT form to a SPIR-V compute shader with the given bindings.
pub fn compile_with(k: &SimtKernel, opts: &SpirvOptions) -> Result<SpirvKernel, SpirvError> {
    if let Err(es) = tilec_midend::verify::verify_simt(k) {
        return Err(SpirvError { message: es[0].to_string(), loc: es[0].loc });
    }
    let mut b = Builder::new();
    b.set_version(1, 3);
    b.capability(Capability::Shader);
    b.capability(Capability::GroupNonUniform);
    b.capability(Capability::GroupNonUniformShuffle);
    let uses = |s: Scalar| k.func.values.iter().any(|v| v.ty.elem() == s);
    if uses(Scalar::F64) {
        b.capability(Capability::Float64);
    }
    if uses(Scalar::I64) {
        b.capability(Capability::Int64);
    }
    b.memory_model(spirv::AddressingModel::Logical, spirv::MemoryModel::GLSL450);
    let glsl = b.ext_inst_import("GLSL.std.450");
    let t_bool = b.type_bool();
    let t_u32 = b.type_int(32, 0);
    let t_i32 = b.type_int(32, 1);
    let mut g = Gen {
        b,
        k,
        held: HashMap::new(),
        consts: HashMap::new(),
        types: HashMap::new(),
        t_bool,
        t_u32,
        t_i32,
        glsl,
        params: 0,
        layout: ParamsLayout::of(&k.kernel),
        wg_id: 0,
        lane_var: 0,
        shared_dims: Vec::new(),
        cur: 0,
        interface: Vec::new(),
        buffer_structs: HashMap::new(),
        chunk_counts: HashMap::new(),
    };
    g.interface_vars(&opts.chunks)?;
    let void = g.b.type_void();
    let fn_ty = g.b.type_function(void, vec![]);
    let main = g.b.begin_function(void, None, spirv::FunctionControl::NONE, fn_ty).map_err(|e| err(e.to_string()))?;
    g.cur = g.b.begin_block(None).map_err(|e| err(e.to_string()))?;
    g.load_scalar_params()?;
    let body = k.func.body.clone();
    let ended = g.region(&body)?;
    if !ended {
        g.b.ret().map_err(|e| err(e.to_string()))?;
    }
    g.b.end_function().map_err(|e| err(e.to_string()))?;
    let interface = g.interface.clone();
    g.b.entry_point(spirv::ExecutionModel::GLCompute, main, "main", interface);
    g.b.execution_mode(main, spirv::ExecutionMode::LocalSize, [k.lanes, 1, 1]);
    let arrays = k.kernel.params.iter().filter(|p| matches!(p.kind, ParamKind::Array { .. })).count() as u32;
    let words = g.b.module().assemble();
    Ok(SpirvKernel {
        words,
        lanes: k.lanes,
        arrays,
        params: g.layout,
        shared_bytes: k.shared_bytes,
        chunks: opts.chunks.clone(),
    })
}

impl Gen<'_> {
    /// The SPIR-V type of a scalar.
    pub(crate) fn ty(&mut self, s: Scalar) -> Word {
        if let Some(t) = self.types.get(&s) {
            return *t;
        }
        let t = match s {
            Scalar::Bool => self.t_bool,
            Scalar::I32 => self.t_i32,
            Scalar::U32 => self.t_u32,
            Scalar::I64 => self.b.type_int(64, 1),
            Scalar::F32 => self.b.type_float(32, None),
            Scalar::F64 => self.b.type_float(64, None),
            Scalar::F16 | Scalar::BF16 => self.half_ty(s),
        };
        self.types.insert(s, t);
        t
    }

    /// A constant of type `s` with the given bits (cached).
    pub(crate) fn constant_bits(&mut self, s: Scalar, bits: u64) -> Word {
        let key = (s as u32, bits);
        if let Some(c) = self.consts.get(&key) {
            return *c;
        }
        let t = self.ty(s);
        let c = match s {
            Scalar::Bool => {
                if bits != 0 {
                    self.b.constant_true(t)
                } else {
                    self.b.constant_false(t)
                }
            }
            _ if s.bytes() == 8 => self.b.constant_bit64(t, bits),
            _ => self.b.constant_bit32(t, bits as u32),
        };
        self.consts.insert(key, c);
        c
    }

    /// A constant of type `s` with value `v`.
    pub(crate) fn constant(&mut self, s: Scalar, v: f64) -> Word {
        // Values of storage types are computed (and held) in f32.
        let s = s.compute();
        let bits = match s {
            Scalar::F32 => (v as f32).to_bits() as u64,
            Scalar::F64 => v.to_bits(),
            Scalar::Bool => (v != 0.0) as u64,
            Scalar::U32 => v as u32 as u64,
            Scalar::I32 => v as i32 as u32 as u64,
            Scalar::I64 => v as i64 as u64,
            Scalar::F16 | Scalar::BF16 => unreachable!("compute types are not storage types"),
        };
        self.constant_bits(s, bits)
    }

    pub(crate) fn u32c(&mut self, v: u32) -> Word {
        self.constant_bits(Scalar::U32, v as u64)
    }

    pub(crate) fn i32c(&mut self, v: i32) -> Word {
        self.constant_bits(Scalar::I32, v as u32 as u64)
    }

    /// The storage-buffer block type `struct { T data[]; }` for element type `s`.
    fn buffer_struct(&mut self, s: Scalar) -> Word {
        if let Some(t) = self.buffer_structs.get(&s) {
            return *t;
        }
        let elem = self.ty(s);
        let arr = self.b.type_runtime_array(elem);
        self.b.decorate(arr, Decoration::ArrayStride, [Operand::LiteralBit32(s.bytes())]);
        let st = self.b.type_struct([arr]);
        self.b.decorate(st, Decoration::Block, []);
        self.b.member_decorate(st, 0, Decoration::Offset, [Operand::LiteralBit32(0)]);
        self.buffer_structs.insert(s, st);
        st
    }

    fn builtin(&mut self, bi: BuiltIn, ty: Word) -> Word {
        let p = self.b.type_pointer(None, StorageClass::Input, ty);
        let v = self.b.variable(p, None, StorageClass::Input, None);
        self.b.decorate(v, Decoration::BuiltIn, [Operand::BuiltIn(bi)]);
        self.interface.push(v);
        v
    }

    /// Storage buffers for the array parameters, the params buffer and the built-ins.
    fn interface_vars(&mut self, chunks: &[Option<Chunks>]) -> Result<(), SpirvError> {
        let params: Vec<(Value, Type)> =
            self.k.func.body.params.iter().map(|p| (*p, self.k.func.ty(*p).clone())).collect();
        let mut binding = 0u32;
        for (i, (v, t)) in params.iter().enumerate() {
            let off = self.layout.offsets[i];
            match t {
                Type::Array { elem, .. } => {
                    if *elem == Scalar::Bool {
                        return Err(err("bool arrays are not supported on Vulkan"));
                    }
                    let st = self.buffer_struct(*elem);
                    let ch = chunks.get(binding as usize).copied().flatten();
                    let ty = match ch {
                        Some(c) => {
                            let n = self.u32c(c.count);
                            self.b.type_array(st, n)
                        }
                        None => st,
                    };
                    let p = self.b.type_pointer(None, StorageClass::StorageBuffer, ty);
                    let var = self.b.variable(p, None, StorageClass::StorageBuffer, None);
                    if let Some(c) = ch {
                        self.chunk_counts.insert(var, c.count);
                    }
                    self.b.decorate(var, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
                    self.b.decorate(var, Decoration::Binding, [Operand::LiteralBit32(binding)]);
                    binding += 1;
                    self.held.insert(*v, Held::Buffer { var, dims_word: off, chunk: ch.map(|c| c.log2) });
                }
                Type::Scalar(_) => {}
                Type::Tile { .. } | Type::Mat { .. } => return Err(err("a tile parameter in SIMT form")),
            }
        }
        let st = self.buffer_struct(Scalar::U32);
        let p = self.b.type_pointer(None, StorageClass::StorageBuffer, st);
        self.params = self.b.variable(p, None, StorageClass::StorageBuffer, None);
        self.b.decorate(self.params, Decoration::DescriptorSet, [Operand::LiteralBit32(0)]);
        self.b.decorate(self.params, Decoration::Binding, [Operand::LiteralBit32(binding)]);
        self.b.decorate(self.params, Decoration::NonWritable, []);
        let uvec3 = self.b.type_vector(self.t_u32, 3);
        self.wg_id = self.builtin(BuiltIn::WorkgroupId, uvec3);
        let t_u32 = self.t_u32;
        self.lane_var = self.builtin(BuiltIn::SubgroupLocalInvocationId, t_u32);
        Ok(())
    }
}
