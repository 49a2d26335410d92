//! The CUDA target of the driver: kernel instances lowered to SIMT form for a 32-lane warp,
//! compiled to PTX and launched; and `ptxas`, found and run to check PTX.

use super::Target;
use crate::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use tilec_midend::{Kernel, Module};

/// The SIMT form `run --target cuda` and `build --target ptx` compile ([`Target::simt`] for a
/// warp).
pub(crate) fn ptx_simt(m: &Module, k: &Kernel) -> Result<tilec_midend::simt::SimtKernel, Error> {
    CUDA.simt(m, k, super::target::WARP)
}

const CUDA: Target = Target::Cuda { device: None };

/// Lowers a kernel to SIMT form ([`ptx_simt`]) and compiles it to PTX for `arch`. Errors:
/// E0504, E0505 in a build without LLVM.
pub(crate) fn ptx_kernel(m: &Module, k: &Kernel, arch: &str) -> Result<tilec_codegen_ptx::PtxKernel, Error> {
    let simt = ptx_simt(m, k)?;
    tilec_codegen_ptx::compile(&simt, arch)
        .map_err(|e| Error::codegen(CUDA.code_generator().error_code(), m, k, e.to_string(), e.loc))
}

/// Runs a kernel instance of `module` on a CUDA device: SIMT lowering ([`ptx_simt`]), PTX for
/// the device's architecture, then `repeat + 1` launches from the same inputs of which the
/// first (where the driver loads the module) is not timed (one launch for `repeat` 0). `bound` holds the results. Errors
/// are diagnostics (E04xx from the runtime, E0504/E0505 from code generation).
pub fn cuda_launch(
    dev: &tilec_runtime::CudaDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Error> {
    cuda_launch_cached(dev, module, kernel, bound, repeat, &PtxCache::default(), None)
}

/// The PTX of one kernel instance for its device, generated on its first launch, so that
/// later launches of the instance (each call from Python) do not lower and compile it again.
pub(crate) type PtxCache = std::sync::Mutex<Option<std::sync::Arc<tilec_codegen_ptx::PtxKernel>>>;

/// [`cuda_launch`] with the PTX taken from (or put into) `cache`, and on its first use from
/// (or put into) the compile cache folder `dir` (`driver/gpucode.rs`).
pub(crate) fn cuda_launch_cached(
    dev: &tilec_runtime::CudaDevice,
    module: &Module,
    kernel: &Kernel,
    bound: &mut tilec_runtime::Bound,
    repeat: u32,
    cache: &PtxCache,
    dir: Option<&Path>,
) -> Result<(tilec_runtime::LaunchValues, Vec<std::time::Duration>), Error> {
    let rerr = Error::run;
    let known = cache.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let p = match known {
        Some(p) => p,
        None => {
            let p = std::sync::Arc::new(super::gpucode::ptx(dir, module, kernel, &dev.arch())?);
            *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.clone());
            p
        }
    };
    let launch = tilec_runtime::launch_values(module, kernel, bound).map_err(rerr)?;
    let mut times = dev.launch(&p, kernel, bound, launch.grid, super::launcher::runs(repeat)).map_err(rerr)?;
    if repeat > 0 && times.len() > 1 {
        times.remove(0);
    }
    Ok((launch, times))
}

/// `ptxas`: `$TILEC_PTXAS`, on the `PATH`, or in the Python package `nvidia-cuda-nvcc-cu12`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TILEC_PTXAS") {
        return Some(PathBuf::from(p));
    }
    if Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Some(PathBuf::from("ptxas"));
    }
    let out = Command::new("python3")
        .args(["-c", "import nvidia.cuda_nvcc, os; print(os.path.join(nvidia.cuda_nvcc.__path__[0], 'bin', 'ptxas'))"])
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.is_file().then_some(p)
}

/// ptxas from CUDA 13.0, the release of the NVIDIA driver (580) on the GPU machines that run
/// tilec's PTX and so of the JIT that compiles it there: `$TILEC_PTXAS_13`, or where
/// `tools/install-deps.sh` installs the PyPI package `nvidia-cuda-nvcc` 13.0.x (`pip --target`,
/// beside the 12.x of [`find_ptxas`]): `$HOME/.cache/tilec/cuda-13.0/nvidia/cu13/bin/ptxas`.
pub fn find_ptxas_13() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEC_PTXAS_13") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(std::env::var_os("HOME")?).join(".cache/tilec/cuda-13.0/nvidia/cu13/bin/ptxas");
    p.is_file().then_some(p)
}

/// What `ptxas -v` reports for one kernel.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PtxasReport {
    pub registers: u32,
    pub spill_stores: u32,
    pub spill_loads: u32,
    pub shared_bytes: u32,
}

/// Assembles PTX for `arch` with ptxas and returns its resource report (or ptxas's errors).
pub fn ptxas(ptxas: &Path, text: &str, arch: &str) -> Result<PtxasReport, String> {
    // One folder per call: threads (parallel tests) may assemble the same text at once.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("tilec-ptxas-{}-{call}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (src, obj) = (dir.join("k.ptx"), dir.join("k.cubin"));
    std::fs::write(&src, text).map_err(|e| e.to_string())?;
    let out = Command::new(ptxas)
        .args(["-v", "--gpu-name", arch, "-o"])
        .arg(&obj)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", ptxas.display()))?;
    let _ = std::fs::remove_dir_all(&dir);
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(log);
    }
    let num_before = |s: &str, word: &str| -> u32 {
        s.find(word).and_then(|i| s[..i].split_whitespace().last()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let mut r = PtxasReport::default();
    for line in log.lines() {
        if line.contains("Used") && line.contains("registers") {
            r.registers = num_before(line, "registers");
            r.shared_bytes = num_before(line, "bytes smem");
        }
        if line.contains("spill stores") {
            r.spill_stores = num_before(line, "bytes spill stores");
            r.spill_loads = num_before(line, "bytes spill loads");
        }
    }
    Ok(r)
}
