//! Launchers: what runs a compiled kernel instance on its target. The CPU JIT-compiles it
//! once and runs its programs on rayon's threads; Vulkan and CUDA open their device (once per
//! process) and generate SPIR-V or PTX on the instance's first launch.

use super::{CodeGenerator, CpuRunner, Error, Launch, Target};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tilec_codegen_cpu::CpuBackend;
use tilec_frontend::TargetLimits;
use tilec_midend::{Kernel, Module};
use tilec_runtime::{Bound, RunError};

/// The launcher of one kernel instance.
pub(crate) enum Launcher {
    Cpu(Box<CpuRunner>),
    /// Cranelift's code until LLVM's is compiled in the background (`driver/tiered.rs`).
    Tiered(Box<super::tiered::Tiered>),
    /// The device and the instance's shaders, generated on first use (or read from the
    /// compile cache folder, the last field).
    Vulkan(Arc<tilec_runtime::VulkanDevice>, super::vulkan::ShaderCache, Option<PathBuf>),
    /// The device and the instance's PTX, generated on first use (or read from the compile
    /// cache folder, the last field).
    Cuda(Arc<tilec_runtime::CudaDevice>, super::cuda::PtxCache, Option<PathBuf>),
}

impl Target {
    /// The launcher of the first kernel instance of `module` on this target: on the CPU its
    /// code, compiled now (LLVM's from the persistent compile cache in `cache` where it is
    /// there; with `tiered`, LLVM's code that is not there is compiled in the background and
    /// Cranelift's runs meanwhile); on a GPU the device, opened now (its SPIR-V or PTX comes
    /// from `cache` where it is there, `driver/gpucode.rs`). Errors: E0901 (CPU code
    /// generation), no device (E0420/E0422 Vulkan, E0430/E0432 CUDA).
    pub(crate) fn launcher(
        self,
        module: &Module,
        cache: Option<&std::path::Path>,
        tiered: bool,
    ) -> Result<Launcher, Error> {
        Ok(match self {
            Target::Cpu(CpuBackend::Llvm) if tiered && CpuBackend::Llvm.available() => {
                let kernel = module.kernels.first();
                let hit = cache.zip(kernel).and_then(|(dir, k)| super::objects::llvm_cached(dir, module, k));
                match hit.and_then(|jit| CpuRunner::from_llvm_jit(module.clone(), jit)) {
                    Some(runner) => Launcher::Cpu(Box::new(runner)),
                    None => Launcher::Tiered(Box::new(super::tiered::Tiered::start(module, cache)?)),
                }
            }
            Target::Cpu(backend) => Launcher::Cpu(Box::new(
                CpuRunner::from_module_cached(module.clone(), backend, cache).map_err(Error::compile)?,
            )),
            Target::Vulkan { device } => Launcher::Vulkan(
                open_cached(&VULKAN_DEVICES, device, tilec_runtime::VulkanDevice::open)?,
                Default::default(),
                cache.map(PathBuf::from),
            ),
            Target::Cuda { device } => Launcher::Cuda(
                open_cached(&CUDA_DEVICES, device, tilec_runtime::CudaDevice::open)?,
                Default::default(),
                cache.map(PathBuf::from),
            ),
        })
    }
}

impl Target {
    /// The name of the machine this target runs on: `cpu (Cranelift)` for the CPU, the device's
    /// name for Vulkan and CUDA (opening it: E0420/E0422, E0430/E0432).
    pub fn device_name(self) -> Result<String, Error> {
        Ok(match self {
            Target::Cpu(backend) => format!("cpu ({backend})"),
            Target::Vulkan { device } => {
                open_cached(&VULKAN_DEVICES, device, tilec_runtime::VulkanDevice::open)?.name().to_string()
            }
            Target::Cuda { device } => open_cached(&CUDA_DEVICES, device, tilec_runtime::CudaDevice::open)?.name(),
        })
    }

    /// The resource limits of a launch on this target's device: [`Target::limits`] with a
    /// Vulkan device's subgroup size as its lanes (opening the device; when it does not
    /// open, the target's own limits, and the launch reports why).
    pub(crate) fn device_limits(self) -> TargetLimits {
        match self {
            Target::Vulkan { device } => {
                match open_cached(&VULKAN_DEVICES, device, tilec_runtime::VulkanDevice::open) {
                    Ok(dev) => self.limits().with_lanes(dev.subgroup_size()),
                    Err(_) => self.limits(),
                }
            }
            _ => self.limits(),
        }
    }
}

static VULKAN_DEVICES: Devices<tilec_runtime::VulkanDevice> = OnceLock::new();
static CUDA_DEVICES: Devices<tilec_runtime::CudaDevice> = OnceLock::new();

impl Launcher {
    /// Launches `kernel` of `module` on the arguments in `bound` `repeat` times (at least
    /// once), each run from the same inputs, and leaves the last run's results in `bound`. A
    /// GPU launches once more first, untimed, unless `repeat` is 0 ([`runs`]).
    pub(crate) fn launch(
        &self,
        module: &Module,
        kernel: &Kernel,
        bound: &mut Bound,
        repeat: u32,
    ) -> Result<Launch, Error> {
        match self {
            Launcher::Cpu(runner) => cpu_launch(runner, bound, repeat, None),
            Launcher::Tiered(tiered) => {
                // Timed runs need LLVM's code; a single launch takes what is ready, and the
                // second starts LLVM's compile in the background.
                tiered.count_launch();
                let runner = tiered.runner(repeat > 1)?;
                cpu_launch(runner, bound, repeat, None)
            }
            Launcher::Vulkan(dev, shaders, dir) => {
                let (values, mut times) =
                    super::vulkan::vulkan_launch_cached(dev, module, kernel, bound, repeat, shaders, dir.as_deref())?;
                if times.is_empty() {
                    times.push(Duration::ZERO);
                }
                let device = Some(format!("{} (subgroup {})", dev.name(), dev.subgroup_size()));
                Ok(Launch { values, times, device, code: CodeGenerator::Spirv, prints: Default::default() })
            }
            Launcher::Cuda(dev, ptx, dir) => {
                let (values, mut times) =
                    super::cuda::cuda_launch_cached(dev, module, kernel, bound, repeat, ptx, dir.as_deref())?;
                if times.is_empty() {
                    times.push(Duration::ZERO);
                }
                Ok(Launch {
                    values,
                    times,
                    device: Some(dev.name()),
                    code: CodeGenerator::LlvmPtx,
                    prints: Default::default(),
                })
            }
        }
    }
}

impl Launcher {
    /// Waits for the instance's final code: LLVM's, for tiered CPU code (what tuning times).
    /// Errors: LLVM's code generation (E0901).
    pub(crate) fn settle(&self) -> Result<(), Error> {
        match self {
            Launcher::Tiered(tiered) => tiered.runner(true).map(drop),
            _ => Ok(()),
        }
    }
}

/// Runs `runner` `repeat` times (at least once) on `bound`, its `mut` arrays restored before
/// every run after the first (in-place kernels would otherwise see their own output), in place
/// and outside the timing: read-only arrays are neither copied nor moved between runs.
fn cpu_launch(runner: &CpuRunner, bound: &mut Bound, repeat: u32, device: Option<String>) -> Result<Launch, Error> {
    let runs = repeat.max(1);
    let mut times = Vec::with_capacity(runs as usize);
    let original = (runs > 1).then(|| bound.clone());
    for _ in 1..runs {
        let t0 = Instant::now();
        runner.run_bound(bound).map_err(Error::run)?;
        times.push(t0.elapsed());
        if let Some(o) = &original {
            bound.restore_mut_arrays(o, &runner.kernel);
        }
    }
    let t0 = Instant::now();
    let values = runner.run_bound(bound).map_err(Error::run)?;
    times.push(t0.elapsed());
    Ok(Launch {
        values,
        times,
        device,
        code: Target::Cpu(runner.backend()).code_generator(),
        prints: Default::default(),
    })
}

/// The launches a GPU makes for `repeat` timed runs: a first, untimed one (where the driver
/// compiles the shader or loads the module) and `repeat`; for `repeat` 0 a single launch
/// whose time includes that (what an API call that needs no timing asks for).
pub(crate) fn runs(repeat: u32) -> u32 {
    if repeat == 0 {
        1
    } else {
        repeat + 1
    }
}

/// Devices opened by this process, by index: each is opened once and shared by all sessions.
type Devices<D> = OnceLock<Mutex<HashMap<Option<usize>, Arc<D>>>>;

/// The device `index` from `devices`, opened with `open` on first use.
fn open_cached<D>(
    devices: &Devices<D>,
    index: Option<usize>,
    open: fn(Option<usize>) -> Result<D, RunError>,
) -> Result<Arc<D>, Error> {
    let mut map = devices.get_or_init(Default::default).lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(d) = map.get(&index) {
        return Ok(d.clone());
    }
    let d = Arc::new(open(index)?);
    map.insert(index, d.clone());
    Ok(d)
}
