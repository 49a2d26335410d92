//! `tilec build --target spirv`: SPIR-V modules (one per kernel instance), their disassembly,
//! or the SIMT form; and `--report`, the time and size of each.

use super::{instance_path, write_out, Emit};
use crate::driver::vulkan::{disassemble, spirv_kernel};
use crate::Error;
use crate::SourceSet;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;

/// `tilec build --target spirv --report`: for every kernel instance, the time of the SIMT
/// lowering plus SPIR-V generation (ms), and the module's size in 32-bit words and in lines of
/// disassembly (one instruction a line), so that code-size regressions are visible.
pub(crate) fn spirv_report(
    src: &SourceSet,
    fixed: &HashMap<String, GenericArg>,
    lanes: u32,
    out: &mut dyn Write,
    lints: &mut super::Lints,
) -> Result<(), Error> {
    let m = lints.gpu_module(src, fixed, crate::Target::Vulkan { device: None })?;
    for k in &m.kernels {
        let t = std::time::Instant::now();
        let (_, spv) = spirv_kernel(&m, k, lanes, &tilec_codegen_spirv::SpirvOptions::default())?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let lines = disassemble(&spv.words).lines().count();
        let _ = writeln!(out, "{}: {ms:.1} ms, {} words, {lines} lines ({lanes} lanes)", k.symbol, spv.words.len());
    }
    Ok(())
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
    lints: &mut super::Lints,
) -> Result<(), Error> {
    let m = lints.gpu_module(src, fixed, crate::Target::Vulkan { device: None })?;
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
            _ => return Err(Error::usage("E0503", "`--target spirv` emits obj (SPIR-V), spirv-asm or simt")),
        }
    }
    if !text.is_empty() {
        write_out(&o, None, text.as_bytes(), out)?;
    }
    Ok(())
}
