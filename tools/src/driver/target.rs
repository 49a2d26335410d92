//! The one type naming where a kernel instance runs, and what follows from it: the resource
//! limits it is checked against, the lanes of its SIMT form, its code generator and its
//! launcher, and how it is named in messages.

use super::Error;
use tilec_codegen_cpu::CpuBackend;
use tilec_frontend::TargetLimits;
use tilec_midend::simt::SimtKernel;
use tilec_midend::{Kernel, Module};

/// Where a kernel instance runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The host CPU, with the chosen code generator (Cranelift unless the `llvm` feature's
    /// LLVM backend is asked for); one program per rayon task.
    Cpu(CpuBackend),
    /// A Vulkan device (`None`: the first one), through SPIR-V.
    Vulkan { device: Option<usize> },
    /// A CUDA device (`None`: the device of the launch's device arrays,
    /// [`crate::Args::device`], else device 0), through PTX (needs the `llvm` feature and a
    /// driver).
    Cuda { device: Option<usize> },
}

/// How the programs of a target map onto the machine's lanes: what the SIMT lowering
/// ([`Target::simt`]) is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lanes {
    /// One CPU thread per program; tiles live in vector registers (no SIMT form).
    Thread,
    /// One program per subgroup of the device: its subgroup size when launched, the size
    /// asked for (`tilec build --lanes`, 32 by default) when built without a device.
    Subgroup,
    /// A 32-lane NVIDIA warp: one program per warp, or several programs of fewer lanes when
    /// their tiles are small (`lower_for_warp`).
    Warp,
}

/// The lanes of an NVIDIA warp.
pub(crate) const WARP: u32 = 32;

/// The code generator of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeGenerator {
    /// Cranelift: host code in milliseconds, 128-bit vectors (always built).
    Cranelift,
    /// LLVM 16 for the host: its full vector width and FMA (the `llvm` feature).
    LlvmCpu,
    /// rspirv: SPIR-V compute shaders for Vulkan (always built).
    Spirv,
    /// LLVM 16's NVPTX backend: PTX for NVIDIA GPUs (the `llvm` feature).
    LlvmPtx,
}

impl CodeGenerator {
    /// Whether this build of tilec has the code generator.
    pub fn available(self) -> bool {
        match self {
            CodeGenerator::Cranelift | CodeGenerator::Spirv => true,
            CodeGenerator::LlvmCpu => CpuBackend::Llvm.available(),
            CodeGenerator::LlvmPtx => tilec_codegen_ptx::AVAILABLE,
        }
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            CodeGenerator::Cranelift => "Cranelift",
            CodeGenerator::LlvmCpu => "LLVM (CPU)",
            CodeGenerator::Spirv => "SPIR-V",
            CodeGenerator::LlvmPtx => "LLVM (PTX)",
        }
    }

    /// The code of a failure to generate code: E0901 on the CPU, E0504 on a GPU, E0505 when
    /// the generator is not built.
    pub fn error_code(self) -> &'static str {
        match self {
            _ if !self.available() => "E0505",
            CodeGenerator::Cranelift | CodeGenerator::LlvmCpu => "E0901",
            CodeGenerator::Spirv | CodeGenerator::LlvmPtx => "E0504",
        }
    }
}

impl Target {
    /// The CPU with the default code generator: LLVM where this build has it (the `llvm`
    /// feature), else Cranelift.
    pub const CPU: Target = Target::Cpu(CpuBackend::BEST);

    /// The target named `name` (`"cpu"`, `"vulkan"` or `"cuda"`, as the command line's
    /// `--target` of `run` and Python's `target=` spell it), on device `device`, with CPU code
    /// generator `backend` (`"cranelift"` or `"llvm"`; `None`: [`Target::CPU`]'s). Errors:
    /// E0501 for another name, E0505 for the LLVM backend in a build without it.
    pub fn from_names(name: &str, device: Option<usize>, backend: Option<&str>) -> Result<Target, Error> {
        let target = match name {
            "cpu" => match backend {
                None => Target::CPU,
                Some("cranelift") => Target::Cpu(CpuBackend::Cranelift),
                Some("llvm") => Target::Cpu(CpuBackend::Llvm),
                Some(backend) => {
                    return Err(Error::usage(
                        "E0501",
                        format!("unknown CPU backend \"{backend}\" (expected \"cranelift\" or \"llvm\")"),
                    ))
                }
            },
            "vulkan" => Target::Vulkan { device },
            "cuda" => Target::Cuda { device },
            _ => {
                return Err(Error::usage(
                    "E0501",
                    format!("unknown target \"{name}\" (expected \"cpu\", \"vulkan\" or \"cuda\")"),
                ))
            }
        };
        if let Target::Cpu(_) = target {
            target.require_code_generator()?;
        }
        Ok(target)
    }

    /// The resource limits programs are checked against for this target (shared memory per
    /// program: E0227), the same from every entry point.
    pub fn limits(self) -> TargetLimits {
        match self {
            Target::Cpu(_) => TargetLimits::CPU,
            Target::Vulkan { .. } => TargetLimits::VULKAN,
            Target::Cuda { .. } => TargetLimits::CUDA,
        }
    }

    /// How its programs map onto lanes.
    pub fn lanes(self) -> Lanes {
        match self {
            Target::Cpu(_) => Lanes::Thread,
            Target::Vulkan { .. } => Lanes::Subgroup,
            Target::Cuda { .. } => Lanes::Warp,
        }
    }

    /// Its code generator.
    pub fn code_generator(self) -> CodeGenerator {
        match self {
            Target::Cpu(CpuBackend::Cranelift) => CodeGenerator::Cranelift,
            Target::Cpu(CpuBackend::Llvm) => CodeGenerator::LlvmCpu,
            Target::Vulkan { .. } => CodeGenerator::Spirv,
            Target::Cuda { .. } => CodeGenerator::LlvmPtx,
        }
    }

    /// E0505 when this build lacks the target's code generator (the LLVM ones need the
    /// `llvm` feature).
    pub fn require_code_generator(self) -> Result<(), Error> {
        match self.code_generator() {
            g if g.available() => Ok(()),
            CodeGenerator::LlvmCpu => Err(Error::coded("E0505", tilec_codegen_cpu::LLVM_NOT_BUILT)),
            g => Err(Error::coded(
                "E0505",
                format!("this tilec was built without {}: rebuild with `--features llvm`", g.name()),
            )),
        }
    }

    /// The SIMT form of kernel instance `k` of `m` for this target's lanes ([`Target::lanes`]);
    /// `subgroup` is the device's subgroup size for [`Lanes::Subgroup`]. On CUDA,
    /// `TILEC_PTX_LANES=32` in the environment forces one program per warp whatever the tiles
    /// (to compare timings). Errors: E0504 when the kernel has no SIMT form for these lanes,
    /// E0503 on the CPU, which runs tiles without one.
    pub fn simt(self, m: &Module, k: &Kernel, subgroup: u32) -> Result<SimtKernel, Error> {
        use tilec_midend::simt::{lower_for_warp, lower_kernel, lower_kernel_with};
        let simt = match self.lanes() {
            Lanes::Thread => return Err(no_simt_form()),
            Lanes::Subgroup => lower_kernel(m, k, subgroup),
            Lanes::Warp => match std::env::var("TILEC_PTX_LANES").as_deref() {
                Ok("32") => lower_kernel_with(m, k, WARP, true),
                _ => lower_for_warp(m, k, WARP),
            },
        };
        simt.map_err(|e| Error::coded("E0504", format!("kernel `{}`: {e}", k.symbol)))
    }
}

/// E0503: the CPU target has no SIMT form.
pub(crate) fn no_simt_form() -> Error {
    Error::usage("E0503", "the CPU target runs tiles directly: it has no SIMT form")
}
