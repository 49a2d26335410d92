//! The one type naming where a kernel instance runs, and what follows from it: the resource
//! limits it is checked against and how it is named in messages.

use super::Error;
use tilec_codegen_cpu::CpuBackend;
use tilec_frontend::TargetLimits;

/// Where a kernel instance runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The host CPU, with the chosen code generator (Cranelift unless the `ptx` feature's
    /// LLVM backend is asked for); one program per rayon task.
    Cpu(CpuBackend),
    /// A Vulkan device (`None`: the first one), through SPIR-V.
    Vulkan { device: Option<usize> },
    /// A CUDA device (`None`: the device of the launch's device arrays,
    /// [`crate::Args::device`], else device 0), through PTX (needs the `ptx` feature and a
    /// driver).
    Cuda { device: Option<usize> },
}

impl Target {
    /// The CPU with the default code generator (Cranelift).
    pub const CPU: Target = Target::Cpu(CpuBackend::Cranelift);

    /// The target named `name` (`"cpu"`, `"vulkan"` or `"cuda"`, as the command line's
    /// `--target` of `run` and Python's `target=` spell it), on device `device`, with CPU code
    /// generator `backend` (`"cranelift"` or `"llvm"`). Errors: E0501 for another name, E0505
    /// for the LLVM backend in a build without it.
    pub fn from_names(name: &str, device: Option<usize>, backend: &str) -> Result<Target, Error> {
        Ok(match name {
            "cpu" => {
                let b = match backend {
                    "cranelift" => CpuBackend::Cranelift,
                    "llvm" => CpuBackend::Llvm,
                    _ => {
                        return Err(Error::usage(
                            "E0501",
                            format!("unknown CPU backend \"{backend}\" (expected \"cranelift\" or \"llvm\")"),
                        ))
                    }
                };
                if !b.available() {
                    return Err(Error::coded("E0505", tilec_codegen_cpu::LLVM_NOT_BUILT));
                }
                Target::Cpu(b)
            }
            "vulkan" => Target::Vulkan { device },
            "cuda" => Target::Cuda { device },
            _ => {
                return Err(Error::usage(
                    "E0501",
                    format!("unknown target \"{name}\" (expected \"cpu\", \"vulkan\" or \"cuda\")"),
                ))
            }
        })
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
}
