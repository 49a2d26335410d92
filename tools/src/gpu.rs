//! GPU targets of the driver: `build --target spirv` (SPIR-V modules, their disassembly, or
//! the SIMT form) and `run --target vulkan`.

use crate::cli::{instance_path, usage, write_out, Emit, Fail};
use crate::SourceSet;
use rspirv::binary::Disassemble;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;
use tilec_midend::simt::{lower_kernel, SimtKernel};
use tilec_midend::{Kernel, Module};

/// Lowers a kernel instance to SIMT form and compiles it to SPIR-V, as diagnostics on failure.
pub(crate) fn spirv_kernel(
    m: &Module,
    k: &Kernel,
    lanes: u32,
    opts: &tilec_codegen_spirv::SpirvOptions,
) -> Result<(SimtKernel, tilec_codegen_spirv::SpirvKernel), Fail> {
    let simt = lower_kernel(m, k, lanes).map_err(|e| usage("E0504", format!("kernel `{}`: {e}", k.symbol)))?;
    let spv = tilec_codegen_spirv::compile_with(&simt, opts)
        .map_err(|e| crate::cli::codegen_fail("E0504", m, k, e.to_string(), e.loc))?;
    Ok((simt, spv))
}

/// `tilec build --target spirv --report`: for every kernel instance, the time of the SIMT
/// lowering plus SPIR-V generation (ms), and the module's size in 32-bit words and in lines of
/// disassembly (one instruction a line), so that code-size regressions are visible.
pub(crate) fn spirv_report(
    src: &SourceSet,
    fixed: &HashMap<String, GenericArg>,
    lanes: u32,
    out: &mut dyn Write,
    lints: &mut crate::cli::Lints,
) -> Result<(), Fail> {
    let m = lints.gpu_module(src, fixed, tilec_frontend::TargetLimits::VULKAN)?;
    for k in &m.kernels {
        let t = std::time::Instant::now();
        let (_, spv) = spirv_kernel(&m, k, lanes, &tilec_codegen_spirv::SpirvOptions::default())?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let lines = disassemble(&spv.words).lines().count();
        let _ = writeln!(out, "{}: {ms:.1} ms, {} words, {lines} lines ({lanes} lanes)", k.symbol, spv.words.len());
    }
    Ok(())
}

/// Runs a kernel instance of `module` on a Vulkan device: SIMT lowering for the device's
/// subgroup size, SPIR-V with arrays larger than a storage buffer split into chunks, then
/// `repeat + 1` launches from the same inputs of which the first (where drivers compile the
/// shader) is not timed. `bound` holds the results. Errors are diagnostics (E04xx, E0504).
pub fn vulkan_launch(
    dev: &tilec_runtime::VulkanDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Vec<tilec_grammar::diag::Diagnostic>> {
    vulkan_launch_cached(dev, module, kernel, bound, repeat, &ShaderCache::default())
}

/// Shaders of one kernel instance by the chunking of their arrays (`VulkanDevice::chunking`),
/// so that repeated launches do not lower and generate SPIR-V again.
pub(crate) type ShaderCache = std::sync::Mutex<
    HashMap<Vec<Option<tilec_codegen_spirv::Chunks>>, std::sync::Arc<tilec_codegen_spirv::SpirvKernel>>,
>;

/// [`vulkan_launch`] with the shader taken from (or added to) `cache`.
pub(crate) fn vulkan_launch_cached(
    dev: &tilec_runtime::VulkanDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
    cache: &ShaderCache,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Vec<tilec_grammar::diag::Diagnostic>> {
    let rerr = |e| crate::cli::run_error(e).diags;
    let opts = tilec_codegen_spirv::SpirvOptions { chunks: dev.chunking(kernel, bound) };
    let known = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&opts.chunks).cloned();
    let spv = match known {
        Some(spv) => spv,
        None => {
            let (_, spv) = spirv_kernel(module, kernel, dev.subgroup_size(), &opts).map_err(|f| f.diags)?;
            let spv = std::sync::Arc::new(spv);
            cache.lock().unwrap_or_else(|p| p.into_inner()).insert(opts.chunks.clone(), spv.clone());
            spv
        }
    };
    let launch = tilec_runtime::launch_values(module, kernel, bound).map_err(rerr)?;
    let mut times = dev.launch(&spv, kernel, bound, launch.grid, repeat.max(1) + 1).map_err(rerr)?;
    if times.len() > 1 {
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

/// `tilec build --target spirv`: one `.spv` per kernel instance (`FILE.SYMBOL.spv`, or `-o`
/// when there is exactly one), or the SIMT form / disassembly of all of them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_spirv(
    src: &SourceSet,
    file: &Path,
    emit: Emit,
    o: Option<PathBuf>,
    fixed: &HashMap<String, GenericArg>,
    lanes: u32,
    out: &mut dyn Write,
    lints: &mut crate::cli::Lints,
) -> Result<(), Fail> {
    let m = lints.gpu_module(src, fixed, tilec_frontend::TargetLimits::VULKAN)?;
    let mut text = String::new();
    let several = m.kernels.len() > 1;
    for k in &m.kernels {
        let (simt, spv) = spirv_kernel(&m, k, lanes, &tilec_codegen_spirv::SpirvOptions::default())?;
        match emit {
            Emit::Simt => text.push_str(&tilec_midend::print::print_function(&simt.func)),
            Emit::SpirvAsm => {
                text.push_str(&format!("; kernel {} ({} lanes)\n", k.symbol, lanes));
                text.push_str(&disassemble(&spv.words));
                text.push('\n');
            }
            Emit::Obj => {
                let bytes: Vec<u8> = spv.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                let path = instance_path(&o, several, file, &k.symbol, "spv")?;
                write_out(&Some(path), None, &bytes, out)?;
            }
            _ => return Err(usage("E0503", "`--target spirv` emits obj (SPIR-V), spirv-asm or simt")),
        }
    }
    if !text.is_empty() {
        write_out(&o, None, text.as_bytes(), out)?;
    }
    Ok(())
}
