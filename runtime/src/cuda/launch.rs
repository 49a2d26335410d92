//! [`CudaDevice::launch`]: the checks, the PTX module (JIT-compiled by the driver), device
//! buffers for the arguments and the params buffer (one region per launch of a split grid),
//! and the timed launches.

use std::ffi::{c_void, CStr, CString};
use std::time::{Duration, Instant};

use cudarc::driver::result;
use cudarc::driver::sys;
use tilec_codegen_ptx::PtxKernel;
use tilec_midend::{Kernel, ParamKind};

use super::device::CudaDevice;
use super::driver::{drv, error_name, guard};
use crate::bind::{ArgValue, Bound};
use crate::error::RunError;
use crate::params::{check_bound, pack_params, params_words, plan_grid, Chunk, GridPlan};

/// Threads per block: one warp, one program.
const LANES: u32 = 32;

/// Device buffers are at least this large.
const MIN_BUFFER_BYTES: usize = 16;

/// Regions of the params buffer start at multiples of this (bytes).
pub(super) const PARAMS_ALIGN: usize = 16;

/// Bytes of the driver's JIT error log.
const LOG_BYTES: usize = 64 * 1024;

fn mismatch(detail: String) -> RunError {
    RunError::Mismatch { detail }
}

/// Device memory, freed when dropped.
struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
}

impl DeviceBuffer {
    /// `bytes` bytes (at least [`MIN_BUFFER_BYTES`]).
    fn alloc(bytes: usize) -> Result<DeviceBuffer, RunError> {
        // SAFETY: a plain allocation in the current context.
        let ptr = unsafe { result::malloc_sync(bytes.max(MIN_BUFFER_BYTES)) }.map_err(drv("cuMemAlloc"))?;
        Ok(DeviceBuffer { ptr })
    }

    /// Copies `data` to the start of the buffer (which holds at least as many bytes).
    fn write(&self, data: &[u8]) -> Result<(), RunError> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds at least `data.len()` bytes (allocated for them); the
        // copy is synchronous.
        unsafe { result::memcpy_htod_sync(self.ptr, data) }.map_err(drv("cuMemcpyHtoD"))
    }

    /// Copies the first `bytes` bytes of `src` to the start of the buffer (device to device;
    /// both hold at least that many bytes).
    fn copy_from(&self, src: &DeviceBuffer, bytes: usize) -> Result<(), RunError> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both buffers hold at least `bytes` bytes (allocated for the same array); the
        // copy is synchronous.
        unsafe { result::memcpy_dtod_sync(self.ptr, src.ptr, bytes) }.map_err(drv("cuMemcpyDtoD"))
    }

    /// Copies the start of the buffer to `out`.
    fn read(&self, out: &mut [u8]) -> Result<(), RunError> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `write`.
        unsafe { result::memcpy_dtoh_sync(out, self.ptr) }.map_err(drv("cuMemcpyDtoH"))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc`, freed once; no launch using it is pending (launches
        // synchronise before returning; after a failed one the context is unusable anyway).
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// A loaded module, unloaded when dropped.
struct Module(sys::CUmodule);

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by `load_module`, unloaded once.
        let _ = unsafe { result::module::unload(self.0) };
    }
}

/// JIT-compiles and loads PTX `source` into the current context. Error E0435 with the
/// driver's error log.
fn load_module(source: &CStr, device: &str) -> Result<Module, RunError> {
    let mut log = vec![0u8; LOG_BYTES];
    let mut options =
        [sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER, sys::CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
    let mut values: [*mut c_void; 2] = [log.as_mut_ptr().cast(), std::ptr::without_provenance_mut(log.len())];
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: `source` is NUL-terminated PTX text; the options point to a log buffer of the
    // size given, alive during the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut module,
            source.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    match r.result() {
        Ok(()) => Ok(Module(module)),
        Err(e) => {
            // The driver writes the log's length back into the size option.
            let n = values[1].addr().min(log.len());
            let text = &log[..n];
            let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
            Err(RunError::PtxJit {
                device: device.to_string(),
                error: error_name(&e),
                log: String::from_utf8_lossy(&text[..end]).into_owned(),
            })
        }
    }
}

/// Whether parameter `param` of `kernel` is a `mut` array.
fn is_mut(kernel: &Kernel, param: usize) -> bool {
    matches!(kernel.params.get(param).map(|p| &p.kind), Some(ParamKind::Array { mutable: true, .. }))
}

/// The `sm_XY` number of an architecture name.
fn arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")?.parse().ok()
}

impl CudaDevice {
    /// Runs every program of `grid` with the compiled PTX `k` of `kernel` on the bound
    /// arguments, `repeat` times (0 counts as 1), and returns the wall time of each run
    /// (the launches and the wait for them: the GPU work, without the JIT, buffer setup or
    /// copies). Every run starts from the arguments as bound (an in-place kernel does not see
    /// its own output): the arrays are uploaded before the first run and the `mut` ones
    /// restored from a device-side copy before each later one (uploaded again where the device
    /// has no room for the copy), outside the timing; after the last run the `mut` arrays in
    /// `bound` hold the results. A grid with an
    /// extent of zero or below runs nothing (the times are then zero).
    ///
    /// One program runs per block of 32 threads. Grids larger than the device's grid limits
    /// (`2^31 - 1` blocks along x, 65535 along y and z) are split into several launches, each
    /// with its program-id offsets in the params buffer.
    ///
    /// Errors: `k`, `kernel` and `bound` do not belong together, or `k` was compiled for other
    /// than 32 lanes (E0417); `k` was compiled for a newer architecture than the device's
    /// (E0434); it needs more shared memory than a block may have (E0436); an extent of the
    /// grid is above `i32::MAX`, or the grid needs too many launches (E0416); the driver cannot
    /// compile the PTX (E0435, with its log); a driver call fails, also a kernel that faults
    /// (E0431). These checks come before the grid's: a launch over an empty grid runs nothing
    /// but fails like any other. Device memory and the module are freed before it returns,
    /// also on errors.
    pub fn launch(
        &self,
        k: &PtxKernel,
        kernel: &Kernel,
        bound: &mut Bound,
        grid: [i64; 3],
        repeat: u32,
    ) -> Result<Vec<Duration>, RunError> {
        self.launch_split(k, kernel, bound, grid, repeat, self.limits.max_grid)
    }

    /// [`CudaDevice::launch`] with launches of at most `max_grid` blocks per axis (the
    /// device's limits, or smaller ones to test the split).
    pub(super) fn launch_split(
        &self,
        k: &PtxKernel,
        kernel: &Kernel,
        bound: &mut Bound,
        grid: [i64; 3],
        repeat: u32,
        max_grid: [u32; 3],
    ) -> Result<Vec<Duration>, RunError> {
        self.check(k, kernel, bound)?;
        let runs = repeat.max(1) as usize;
        let Some(GridPlan { grid: grid32, chunks }) = plan_grid(grid, max_grid)? else {
            return Ok(vec![Duration::ZERO; runs]);
        };
        let words = params_words(&k.params, bound, grid32);
        let (params, stride) = pack_params(&words, &chunks, PARAMS_ALIGN);
        let source = CString::new(k.text.as_str()).map_err(|_| mismatch("the PTX text contains a NUL byte".into()))?;
        let entry = CString::new(k.entry.as_str())
            .map_err(|_| mismatch(format!("the PTX entry point `{}` contains a NUL byte", k.entry)))?;

        let _launch = self.launch_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let plan = Plan { source: &source, entry: &entry, chunks: &chunks, params: &params, stride, runs };
        guard("a CUDA launch", || self.run(kernel, bound, &plan))
    }

    /// The checks of a launch that do not depend on the grid.
    fn check(&self, k: &PtxKernel, kernel: &Kernel, bound: &Bound) -> Result<(), RunError> {
        check_bound(kernel, &k.params, bound)?;
        if k.lanes != LANES {
            return Err(mismatch(format!(
                "the PTX was compiled for {} lanes; CUDA runs one program per warp of {LANES}",
                k.lanes
            )));
        }
        let Some(arch) = arch_number(&k.arch) else {
            return Err(mismatch(format!("the PTX names no architecture sm_XY (`{}`)", k.arch)));
        };
        let (major, minor) = self.compute_capability();
        if arch > major * 10 + minor {
            return Err(RunError::CudaCapability {
                device: self.device_name.clone(),
                major: major as i32,
                minor: minor as i32,
                arch: Some(k.arch.clone()),
            });
        }
        if k.shared_bytes > self.limits.max_shared_bytes {
            return Err(RunError::CudaSharedMemory {
                device: self.device_name.clone(),
                needed: k.shared_bytes,
                available: self.limits.max_shared_bytes,
            });
        }
        Ok(())
    }

    /// The driver work of a launch (under `guard` and the launch lock).
    fn run(&self, kernel: &Kernel, bound: &mut Bound, plan: &Plan<'_>) -> Result<Vec<Duration>, RunError> {
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let module = load_module(plan.source, &self.device_name)?;
        // SAFETY: a loaded module and a NUL-terminated name.
        let func = unsafe { result::module::get_function(module.0, plan.entry.to_owned()) }
            .map_err(drv("cuModuleGetFunction"))?;

        // One buffer per array parameter, in parameter order.
        let mut arrays: Vec<(usize, DeviceBuffer)> = Vec::new();
        for (i, (_, arg)) in bound.args().iter().enumerate() {
            if let ArgValue::Array(a) = arg {
                arrays.push((i, DeviceBuffer::alloc(a.byte_len())?));
            }
        }
        let params = DeviceBuffer::alloc(plan.params.len())?;
        params.write(plan.params)?;

        // Kernel arguments: the params region of the launch, then the arrays.
        let mut values: Vec<sys::CUdeviceptr> =
            std::iter::once(params.ptr).chain(arrays.iter().map(|(_, b)| b.ptr)).collect();
        // Every run starts from the bound arguments. The first uploads them; later runs restore
        // the `mut` arrays from a copy kept on the device (so that `--repeat` times the kernel,
        // not uploads from pageable host memory), or upload them again where the device has no
        // room for the copy.
        let mut pristine: Vec<Option<DeviceBuffer>> = Vec::new();
        for (i, _) in &arrays {
            let keep = plan.runs > 1 && is_mut(kernel, *i);
            pristine.push(match (keep, &bound.args()[*i].1) {
                (true, ArgValue::Array(a)) => DeviceBuffer::alloc(a.byte_len()).ok(),
                _ => None,
            });
        }
        let mut times = Vec::with_capacity(plan.runs);
        for run in 0..plan.runs {
            for ((i, buffer), copy) in arrays.iter().zip(&pristine) {
                let ArgValue::Array(a) = &bound.args()[*i].1 else { continue };
                match (run, copy) {
                    (0, Some(copy)) => {
                        buffer.write(a.bytes())?;
                        copy.copy_from(buffer, a.byte_len())?;
                    }
                    (0, None) => buffer.write(a.bytes())?,
                    (_, Some(copy)) => buffer.copy_from(copy, a.byte_len())?,
                    (_, None) if is_mut(kernel, *i) => buffer.write(a.bytes())?,
                    _ => {}
                }
            }
            result::ctx::synchronize().map_err(drv("cuCtxSynchronize"))?;
            let t0 = Instant::now();
            for (c, chunk) in plan.chunks.iter().enumerate() {
                values[0] = params.ptr + (c * plan.stride) as u64;
                let mut args: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
                let [x, y, z] = chunk.count;
                // SAFETY: `func` comes from the loaded module; its parameters are the params
                // pointer and one pointer per array (the launch ABI), and `args` points to
                // that many live device pointers (copied by the driver at launch); the buffers
                // hold what the kernel indexes (the extents in the params buffer are theirs).
                unsafe { result::launch_kernel(func, (x, y, z), (LANES, 1, 1), 0, std::ptr::null_mut(), &mut args) }
                    .map_err(drv("cuLaunchKernel"))?;
            }
            result::ctx::synchronize().map_err(drv("cuCtxSynchronize"))?;
            times.push(t0.elapsed());
        }

        let args = bound.args_mut();
        for (i, buffer) in &arrays {
            if let (true, ArgValue::Array(a)) = (is_mut(kernel, *i), &mut args[*i].1) {
                buffer.read(a.bytes_mut())?;
            }
        }
        Ok(times)
    }
}

/// The host-side parts of a launch, prepared before the driver is called.
struct Plan<'a> {
    source: &'a CStr,
    entry: &'a CStr,
    chunks: &'a [Chunk],
    params: &'a [u8],
    stride: usize,
    runs: usize,
}
