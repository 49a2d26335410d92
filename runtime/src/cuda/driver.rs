//! Guarding the CUDA driver: the check that its library loads and has every function the
//! launcher calls (cudarc, with `dynamic-loading`, panics when either is missing), the
//! `catch_unwind` wrapper around driver calls, and [`RunError`]s from driver errors.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use cudarc::driver::result::DriverError;

use crate::error::RunError;

/// The driver library, as the NVIDIA driver installs it.
#[cfg(windows)]
pub(super) const DRIVER_LIBRARY: &str = "nvcuda.dll";
/// The driver library, as the NVIDIA driver installs it.
#[cfg(not(windows))]
pub(super) const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// Every driver function the launcher calls, directly or through cudarc's wrappers.
pub(super) const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuCtxSynchronize",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2",
    "cuMemcpyDtoD_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuStreamSynchronize",
    "cuPointerGetAttribute",
    "cuModuleLoadDataEx",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
    "cuGetErrorString",
];

/// The driver library, loaded once and kept loaded (cudarc loads its own handle to it).
static DRIVER: OnceLock<Result<libloading::Library, RunError>> = OnceLock::new();

/// Checks that the driver library loads and has every function in [`SYMBOLS`]. Errors: no
/// library (E0430), a function is missing (E0431, the driver is too old).
pub(super) fn check_driver() -> Result<(), RunError> {
    match DRIVER.get_or_init(load_driver) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.clone()),
    }
}

/// Where the NVIDIA driver usually lies when the loader's search path does not reach it: the
/// folder that container runtimes mount (`/usr/local/nvidia/lib64`, reached through an
/// `LD_LIBRARY_PATH` that a wrapper or a `sudo` may have dropped), the GPU operator's driver
/// root, the distributions' library folders and WSL's. Only folders of installed drivers: never
/// the CUDA toolkit's stub (`lib64/stubs`) or its forward-compatibility folder.
#[cfg(not(windows))]
const DRIVER_FOLDERS: &[&str] = &[
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/run/nvidia/driver/usr/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/wsl/lib",
];
#[cfg(windows)]
const DRIVER_FOLDERS: &[&str] = &[];

/// The driver's JIT compiler, which `libcuda.so.1` loads by name when it first compiles PTX.
#[cfg(not(windows))]
const PTX_JIT_LIBRARY: &str = "libnvidia-ptxjitcompiler.so.1";

/// Loads the driver library: by name on the loader's search path, then from each of
/// [`DRIVER_FOLDERS`]. A driver found in a folder is loaded by its path, with its JIT compiler
/// from the same folder, so that later loads by name (cudarc's, the driver's own) find them
/// already loaded. Error E0430 lists every place tried with the loader's answer.
fn open_driver_library() -> Result<libloading::Library, RunError> {
    // SAFETY (every load here): loading the NVIDIA driver runs its initialisers, trusted like
    // any system library's.
    let first = match unsafe { libloading::Library::new(DRIVER_LIBRARY) } {
        Ok(lib) => return Ok(lib),
        Err(e) => e,
    };
    let search = match std::env::var("LD_LIBRARY_PATH") {
        Ok(p) if !p.is_empty() => format!("LD_LIBRARY_PATH={p}, then"),
        _ => "LD_LIBRARY_PATH unset, so".to_string(),
    };
    let first = loader_text(&first);
    let mut tried =
        vec![format!("{DRIVER_LIBRARY} by name ({search} the loader's cache and default folders): {first}")];
    let mut absent = Vec::new();
    for folder in DRIVER_FOLDERS {
        let path = std::path::Path::new(folder).join(DRIVER_LIBRARY);
        if !path.exists() {
            absent.push(*folder);
            continue;
        }
        match unsafe { libloading::Library::new(&path) } {
            Ok(lib) => {
                preload_jit_compiler(folder);
                return Ok(lib);
            }
            Err(e) => tried.push(format!("{}: {}", path.display(), loader_text(&e))),
        }
    }
    if !absent.is_empty() {
        tried.push(format!("not in {}", absent.join(", ")));
    }
    Err(RunError::CudaDriverMissing { library: DRIVER_LIBRARY, tried })
}

/// The loader's answer (`dlerror`): libloading keeps it as the error's source.
fn loader_text(e: &libloading::Error) -> String {
    match std::error::Error::source(e) {
        Some(why) => why.to_string(),
        None => e.to_string(),
    }
}

/// Loads the driver's JIT compiler from `folder` where it is there, and keeps it loaded.
#[cfg(not(windows))]
fn preload_jit_compiler(folder: &str) {
    let path = std::path::Path::new(folder).join(PTX_JIT_LIBRARY);
    if path.exists() {
        // SAFETY: as for the driver. Without it, the driver's own load by name may miss it,
        // and the first PTX compile then fails with a CUDA error that names the JIT.
        if let Ok(lib) = unsafe { libloading::Library::new(&path) } {
            std::mem::forget(lib);
        }
    }
}
#[cfg(windows)]
fn preload_jit_compiler(_folder: &str) {}

fn load_driver() -> Result<libloading::Library, RunError> {
    let lib = open_driver_library()?;
    for &name in SYMBOLS {
        // SAFETY: only the address is looked up; nothing is called through it.
        let found = unsafe { lib.get::<*const std::ffi::c_void>(name) }.is_ok();
        if !found {
            return Err(RunError::CudaCall {
                call: name.to_string(),
                detail: format!(
                    "the NVIDIA driver ({DRIVER_LIBRARY}) lacks this function: it is too old for \
                     tilec; update the NVIDIA driver"
                ),
            });
        }
    }
    same_library_as_cudarc(&lib)?;
    Ok(lib)
}

/// Checks that the library cudarc calls through is the driver checked above. cudarc loads the
/// first of its candidate names that opens (`libcuda.so` before `libcuda.so.1`), and where
/// `libcuda.so` is the CUDA toolkit's stub (its `lib64/stubs` on `LD_LIBRARY_PATH`), every call
/// would fail with CUDA_ERROR_STUB_LIBRARY. The two are the same library exactly when they
/// resolve `cuInit` to the same address. Error: E0431 naming the library cudarc would load.
fn same_library_as_cudarc(driver: &libloading::Library) -> Result<(), RunError> {
    // SAFETY: only addresses are looked up; nothing is called through them.
    let ours = unsafe { driver.get::<*const std::ffi::c_void>(b"cuInit") }.map(|s| *s).ok();
    for name in cudarc::get_lib_name_candidates("cuda") {
        // SAFETY: as for the driver itself; a library that does not load is skipped, as
        // cudarc skips it.
        let Ok(lib) = (unsafe { libloading::Library::new(&name) }) else { continue };
        let theirs = unsafe { lib.get::<*const std::ffi::c_void>(b"cuInit") }.map(|s| *s).ok();
        if theirs != ours {
            return Err(RunError::CudaCall {
                call: "cuInit".to_string(),
                detail: format!(
                    "the CUDA bindings would load `{name}`, which is not the NVIDIA driver \
                     {DRIVER_LIBRARY} (a CUDA toolkit stub library on LD_LIBRARY_PATH?); remove \
                     the directory holding it from LD_LIBRARY_PATH"
                ),
            });
        }
        return Ok(());
    }
    Ok(())
}

/// Runs `f`, which calls the driver through cudarc, turning a panic (a missing symbol, an
/// unexpected answer of the driver) into E0431 naming `what`.
pub(super) fn guard<T>(what: &str, f: impl FnOnce() -> Result<T, RunError>) -> Result<T, RunError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        Err(RunError::CudaCall {
            call: what.to_string(),
            detail: format!("the CUDA driver bindings panicked: {}", panic_text(payload.as_ref())),
        })
    })
}

/// The message of a panic payload.
fn panic_text(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// The error of a failed driver call: E0431 with the `CUresult` name and its description.
pub(super) fn drv(call: &'static str) -> impl Fn(DriverError) -> RunError {
    move |e| RunError::CudaCall { call: call.to_string(), detail: error_text(&e) }
}

/// `CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
pub(super) fn error_text(e: &DriverError) -> String {
    let name = error_name(e);
    match e.error_string() {
        Ok(s) => format!("{name} ({})", s.to_string_lossy()),
        Err(_) => name,
    }
}

/// `CUDA_ERROR_OUT_OF_MEMORY`.
pub(super) fn error_name(e: &DriverError) -> String {
    format!("{:?}", e.0)
}
