//! The Vulkan target of the driver: kernel instances lowered to SIMT form and compiled to
//! SPIR-V for the device's subgroup size, and launched.

use crate::Error;
use rspirv::binary::Disassemble;
use std::collections::HashMap;
use tilec_midend::simt::SimtKernel;
use tilec_midend::{Kernel, Module};

/// Lowers a kernel instance to SIMT form and compiles it to SPIR-V, as diagnostics on failure.
pub(crate) fn spirv_kernel(
    m: &Module,
    k: &Kernel,
    lanes: u32,
    opts: &tilec_codegen_spirv::SpirvOptions,
) -> Result<(SimtKernel, tilec_codegen_spirv::SpirvKernel), Error> {
    let simt = super::Target::Vulkan { device: None }.simt(m, k, lanes)?;
    let spv = tilec_codegen_spirv::compile_with(&simt, opts)
        .map_err(|e| crate::Error::codegen("E0504", m, k, e.to_string(), e.loc))?;
    Ok((simt, spv))
}

/// Runs a kernel instance of `module` on a Vulkan device: SIMT lowering for the device's
/// subgroup size, SPIR-V with arrays larger than a storage buffer split into chunks, then
/// `repeat + 1` launches from the same inputs of which the first (where drivers compile the
/// shader) is not timed (one launch for `repeat` 0). `bound` holds the results. Errors are diagnostics (E04xx, E0504).
pub fn vulkan_launch(
    dev: &tilec_runtime::VulkanDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Error> {
    vulkan_launch_cached(dev, module, kernel, bound, repeat, &ShaderCache::default(), None)
}

/// Shaders of one kernel instance by the chunking of their arrays (`VulkanDevice::chunking`),
/// so that repeated launches do not lower and generate SPIR-V again.
pub(crate) type ShaderCache = std::sync::Mutex<
    HashMap<Vec<Option<tilec_codegen_spirv::Chunks>>, std::sync::Arc<tilec_codegen_spirv::SpirvKernel>>,
>;

/// [`vulkan_launch`] with the shader taken from (or added to) `cache`, and on its first use
/// from (or put into) the compile cache folder `dir` (`driver/gpucode.rs`).
pub(crate) fn vulkan_launch_cached(
    dev: &tilec_runtime::VulkanDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
    cache: &ShaderCache,
    dir: Option<&std::path::Path>,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Error> {
    let rerr = Error::run;
    let opts = tilec_codegen_spirv::SpirvOptions { chunks: dev.chunking(kernel, bound) };
    let known = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&opts.chunks).cloned();
    let spv = match known {
        Some(spv) => spv,
        None => {
            let spv = std::sync::Arc::new(super::gpucode::spirv(dir, module, kernel, dev.subgroup_size(), &opts)?);
            cache.lock().unwrap_or_else(|p| p.into_inner()).insert(opts.chunks.clone(), spv.clone());
            spv
        }
    };
    let launch = tilec_runtime::launch_values(module, kernel, bound).map_err(rerr)?;
    let mut times = dev.launch(&spv, kernel, bound, launch.grid, super::launcher::runs(repeat)).map_err(rerr)?;
    if repeat > 0 && times.len() > 1 {
        times.remove(0);
    }
    Ok((launch, times))
}

/// The SPIR-V disassembly of a module.
pub(crate) fn disassemble(words: &[u32]) -> String {
    match rspirv::dr::load_words(words) {
        Ok(m) => m.disassemble(),
        Err(e) => format!("; cannot disassemble: {e}\n"),
    }
}
