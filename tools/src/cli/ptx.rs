//! `tilec build --target ptx`: PTX for NVIDIA GPUs (one `.ptx` per kernel instance), the SIMT
//! form, and `--report`: registers per lane, spill bytes and shared memory of each kernel from
//! `ptxas -v`, pointing at the kernel in the source.

use super::{instance_path, write_out, Emit};
use crate::driver::cuda::{find_ptxas, ptx_kernel, ptx_simt, ptxas};
use crate::Error;
use crate::SourceSet;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use tilec_frontend::GenericArg;
use tilec_midend::{Kernel, Module};

/// The file name and line (1-based) of kernel `k`'s name in the source that defines it.
fn kernel_line(src: &SourceSet, m: &Module, k: &Kernel) -> (String, usize) {
    let (file, text) = src.text_of(m.source_of(k.loc).as_deref());
    let at = (k.loc.start as usize).min(text.len());
    (file, text.as_bytes()[..at].iter().filter(|&&c| c == b'\n').count() + 1)
}

/// `tilec build --target ptx`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_ptx(
    src: &SourceSet,
    file: &Path,
    emit: Emit,
    o: Option<PathBuf>,
    fixed: &HashMap<String, GenericArg>,
    arch: &str,
    report: bool,
    out: &mut dyn Write,
    lints: &mut super::Lints,
) -> Result<(), Error> {
    let m = lints.gpu_module(src, fixed, crate::Target::Cuda { device: None })?;
    let tool = if report {
        Some(find_ptxas().ok_or_else(|| {
            Error::usage(
                "E0506",
                "`--report` needs ptxas: set TILEC_PTXAS, put it on the PATH, or `pip install nvidia-cuda-nvcc-cu12`",
            )
        })?)
    } else {
        None
    };
    let several = m.kernels.len() > 1;
    let mut text = String::new();
    for k in &m.kernels {
        // The SIMT form needs no code generator: it works in a build without LLVM.
        if emit == Emit::Simt && tool.is_none() {
            let simt = ptx_simt(&m, k)?;
            text.push_str(&tilec_midend::print::print_function(&simt.func));
            continue;
        }
        let p = ptx_kernel(&m, k, arch)?;
        if let Some(t) = &tool {
            let r = ptxas(t, &p.text, arch)
                .map_err(|e| Error::usage("E0506", format!("ptxas rejected `{}`:\n{e}", k.symbol)))?;
            let (f, line) = kernel_line(src, &m, k);
            let _ = writeln!(
                out,
                "{f}:{line}: kernel {} ({arch}): {} registers per lane, {} bytes spill stores, {} bytes spill loads, {} bytes shared",
                k.symbol, r.registers, r.spill_stores, r.spill_loads, r.shared_bytes
            );
            continue;
        }
        match emit {
            Emit::Obj => {
                let path = instance_path(&o, several, file, &k.symbol, "ptx")?;
                write_out(&Some(path), None, p.text.as_bytes(), out)?;
            }
            _ => return Err(Error::usage("E0503", "`--target ptx` emits obj (PTX) or simt")),
        }
    }
    if !text.is_empty() {
        write_out(&o, None, text.as_bytes(), out)?;
    }
    Ok(())
}
