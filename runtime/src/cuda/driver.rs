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

fn load_driver() -> Result<libloading::Library, RunError> {
    // SAFETY: loading the NVIDIA driver runs its initialisers, trusted like any system
    // library's.
    let lib = unsafe { libloading::Library::new(DRIVER_LIBRARY) }
        .map_err(|_| RunError::CudaDriverMissing { library: DRIVER_LIBRARY })?;
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
