//! [`CudaDevice::launch`]: the checks, the PTX module (JIT-compiled by the driver), device
//! buffers for the host arguments and the params buffer (one region per launch of a split
//! grid), the caller's device memory for device arrays, and the timed launches, all on one
//! stream.

use std::ffi::{c_void, CStr, CString};
use std::time::{Duration, Instant};

use cudarc::driver::result;
use cudarc::driver::sys;
use tilec_codegen_ptx::PtxKernel;
use tilec_midend::{Kernel, ParamKind};

use super::device::CudaDevice;
use super::driver::{drv, error_name, guard};
use crate::array::DeviceArray;
use crate::bind::{ArgValue, Bound};
use crate::error::RunError;
use crate::params::{check_bound, pack_params, params_words, plan_grid, split_grid, Chunk, GridPlan};

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

    /// Copies `data` to the start of the buffer (which holds at least as many bytes), in
    /// order on `stream`. The bytes are taken before this returns (pageable host memory is
    /// staged by the driver).
    fn write(&self, data: &[u8], stream: sys::CUstream) -> Result<(), RunError> {
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the buffer holds at least `data.len()` bytes (allocated for them); `stream`
        // is a valid stream of the current context (`launch_stream`).
        unsafe { result::memcpy_htod_async(self.ptr, data, stream) }.map_err(drv("cuMemcpyHtoDAsync"))
    }

    /// Copies the first `bytes` bytes of `src` to the start of the buffer (device to device;
    /// both hold at least that many bytes), in order on `stream`.
    fn copy_from(&self, src: &DeviceBuffer, bytes: usize, stream: sys::CUstream) -> Result<(), RunError> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both buffers hold at least `bytes` bytes (allocated for the same array).
        unsafe { result::memcpy_dtod_async(self.ptr, src.ptr, bytes, stream) }.map_err(drv("cuMemcpyDtoDAsync"))
    }

    /// Copies the start of the buffer to `out`, in order on `stream`: `out` holds the bytes
    /// once the stream is synchronized, which the caller does before reading or dropping it.
    fn read(&self, out: &mut [u8], stream: sys::CUstream) -> Result<(), RunError> {
        if out.is_empty() {
            return Ok(());
        }
        // SAFETY: as in `write`; `out` stays borrowed until the stream is synchronized.
        unsafe { result::memcpy_dtoh_async(out, self.ptr, stream) }.map_err(drv("cuMemcpyDtoHAsync"))
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `alloc`, freed once; no work using it is pending: `run` waits
        // for its stream before its buffers are dropped, also on errors (`WaitOnDrop`).
        let _ = unsafe { result::free_sync(self.ptr) };
    }
}

/// Synchronizes a stream when dropped (errors ignored): declared after a launch's buffers, it
/// makes their drop wait for the work that uses them, also when the launch fails half-way.
struct WaitOnDrop(sys::CUstream);

impl Drop for WaitOnDrop {
    fn drop(&mut self) {
        // SAFETY: a valid stream of the current context (`launch_stream`).
        let _ = unsafe { result::stream::synchronize(self.0) };
    }
}

/// The calling thread's current CUDA context, made current again when dropped (errors
/// ignored; a panic of the driver bindings is caught).
struct RestoreContext(Option<sys::CUcontext>);

impl RestoreContext {
    fn save() -> Result<RestoreContext, RunError> {
        Ok(RestoreContext(result::ctx::get_current().map_err(drv("cuCtxGetCurrent"))?))
    }
}

impl Drop for RestoreContext {
    fn drop(&mut self) {
        let previous = self.0.unwrap_or(std::ptr::null_mut());
        // SAFETY: a context that was current on this thread (or none), still retained by its
        // owner, as it was before the launch.
        let _ = std::panic::catch_unwind(|| unsafe { result::ctx::set_current(previous) });
    }
}

/// Where the array of a kernel argument is during a launch.
enum Slot {
    /// A buffer of the launch, for a host array (copied in, and out for `mut` ones).
    Buffer(DeviceBuffer),
    /// The caller's device memory ([`DeviceArray`]), used in place.
    Caller(sys::CUdeviceptr),
}

impl Slot {
    fn ptr(&self) -> sys::CUdeviceptr {
        match self {
            Slot::Buffer(b) => b.ptr,
            Slot::Caller(p) => *p,
        }
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

/// The arguments in the caller's device memory, with their names, in parameter order.
fn device_arrays(bound: &Bound) -> impl Iterator<Item = (&str, &DeviceArray)> {
    bound.args().iter().filter_map(|(n, v)| match v {
        ArgValue::Device(d) => Some((n.as_str(), d)),
        _ => None,
    })
}

/// The `CUstream` of a handle value (0: NULL, 1: `CU_STREAM_LEGACY`, 2: `CU_STREAM_PER_THREAD`,
/// else a stream's address; only the driver dereferences it).
fn stream_handle(value: u64) -> sys::CUstream {
    std::ptr::without_provenance_mut(value as usize)
}

/// The value of pointer attribute `attr` of device address `ptr`, of type `T`.
///
/// # Safety
///
/// `T` must be the attribute's type (`int` for the device ordinal, `CUdeviceptr` for the
/// range start, `size_t` for the range size); a context must be current.
unsafe fn pointer_attribute<T: Default>(attr: sys::CUpointer_attribute, ptr: u64) -> Result<T, result::DriverError> {
    let mut value = T::default();
    // SAFETY: `value` has the attribute's type (the caller's contract) and lives for the call.
    unsafe { sys::cuPointerGetAttribute((&mut value as *mut T).cast(), attr, ptr) }.result()?;
    Ok(value)
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
    /// Arrays in the caller's device memory ([`ArgValue::Device`]: PyTorch or CuPy CUDA
    /// tensors) are passed to the kernel as they are, not copied, and `mut` ones are written
    /// in place; a launch with them runs once, whatever `repeat`, and is queued behind the
    /// work already on its stream without waiting for it (so its time includes that work).
    /// Every copy and launch goes on one stream: the stream of the first device array that
    /// names one (the producer's, so that the kernel runs after the work that made its
    /// inputs, with no host round trip), else the legacy default stream. The streams of other
    /// device arrays are synchronized before the launch. The launch synchronizes its stream
    /// before it returns, so the results are complete then; work on other streams is not
    /// waited for (no device-wide synchronization).
    ///
    /// Errors: `k`, `kernel` and `bound` do not belong together, or `k` was compiled for other
    /// than 32 lanes (E0417); `k` was compiled for a newer architecture than the device's
    /// (E0434); it needs more shared memory than a block may have (E0436); an extent of the
    /// grid is above `i32::MAX`, or the grid needs too many launches (E0416); the driver cannot
    /// compile the PTX (E0435, with its log); a driver call fails, also a kernel that faults
    /// (E0431); a device array is not memory of this device as the driver knows it, or
    /// extends beyond its allocation (E0443).
    /// These checks come before the grid's: a launch over an empty grid runs nothing but
    /// fails like any other. Device memory and the module are freed before it returns, also
    /// on errors.
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
        // The launch makes this device's context current on the calling thread; the caller's
        // (PyTorch's, of another device) is current again when it returns.
        let _restore = guard("reading the current CUDA context", RestoreContext::save)?;
        let mut runs = repeat.max(1) as usize;
        if device_arrays(bound).next().is_some() {
            // A second run would start from the first one's output, written in place.
            runs = 1;
            guard("checking device arrays", || {
                self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
                device_arrays(bound).try_for_each(|(name, d)| self.check_device_memory(name, d))
            })?;
        }
        let Some(GridPlan { grid: grid32, chunks }) = plan_grid(grid, max_grid)? else {
            return Ok(vec![Duration::ZERO; runs]);
        };
        // Several programs per block (`PtxKernel::programs_per_block`): axis 0 in blocks.
        let per_block = k.programs_per_block;
        let chunks = if per_block > 1 {
            let blocks = [grid32[0].div_ceil(per_block), grid32[1], grid32[2]];
            split_grid(blocks, max_grid).ok_or(RunError::GridTooLarge { grid })?
        } else {
            chunks
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
        if k.lanes.checked_mul(k.programs_per_block) != Some(LANES) {
            return Err(mismatch(format!(
                "the PTX was compiled for {} programs of {} lanes per block; CUDA blocks here are one warp of {LANES}",
                k.programs_per_block, k.lanes
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

    /// Error E0443 unless device array `d` (argument `name`) is memory of this device that the
    /// driver knows, holding the whole array. An empty array is not checked (PyTorch gives
    /// empty tensors a null address; kernels never index them). The context must be current.
    fn check_device_memory(&self, name: &str, d: &DeviceArray) -> Result<(), RunError> {
        if d.is_empty() {
            return Ok(());
        }
        let fail = |detail: String| RunError::CudaMemory { name: name.to_string(), detail };
        let ptr = d.ptr();
        use sys::CUpointer_attribute as P;
        // SAFETY: the device ordinal is an `int`; the context is current.
        let ordinal =
            unsafe { pointer_attribute::<i32>(P::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) }.map_err(|e| {
                fail(format!(
                    "at address {ptr:#x} is not CUDA device memory that the driver knows \
                 (cuPointerGetAttribute: {})",
                    error_name(&e)
                ))
            })?;
        let mine = self.ctx.ordinal();
        match usize::try_from(ordinal) {
            Ok(device) if device != mine => return Err(DeviceArray::on_other_device(name, device, mine)),
            Ok(_) => {}
            Err(_) => return Err(fail(format!("at address {ptr:#x} is on no CUDA device (ordinal {ordinal})"))),
        }
        // The allocation must hold the whole array (drivers that cannot say are trusted).
        // SAFETY: the range start is a `CUdeviceptr`, its size a `size_t`.
        let start = unsafe { pointer_attribute::<sys::CUdeviceptr>(P::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) };
        let size = unsafe { pointer_attribute::<usize>(P::CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) };
        if let (Ok(start), Ok(size)) = (start, size) {
            let end = start.saturating_add(size as u64);
            if d.address_range().end > end {
                return Err(fail(format!(
                    "needs {} bytes from address {ptr:#x}, beyond the end of its allocation at {end:#x} \
                     (its shape or dtype does not match its memory)",
                    d.byte_len()
                )));
            }
        }
        Ok(())
    }

    /// The stream of a launch: that of the first device array that names one, else the NULL
    /// (legacy default) stream. The other device arrays' streams are synchronized first, so
    /// that the work that made them is complete before the launch.
    fn launch_stream(bound: &Bound) -> Result<sys::CUstream, RunError> {
        let mut streams = device_arrays(bound).filter_map(|(_, d)| d.stream());
        let launch = streams.next().unwrap_or(0);
        for other in streams.filter(|&s| s != launch) {
            // SAFETY: a stream of the current context, by the contract of
            // `DeviceArray::from_raw` (or a special handle).
            unsafe { result::stream::synchronize(stream_handle(other)) }.map_err(drv("cuStreamSynchronize"))?;
        }
        Ok(stream_handle(launch))
    }

    /// The driver work of a launch (under `guard` and the launch lock).
    fn run(&self, kernel: &Kernel, bound: &mut Bound, plan: &Plan<'_>) -> Result<Vec<Duration>, RunError> {
        self.ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        let stream = CudaDevice::launch_stream(bound)?;
        let in_place = device_arrays(bound).next().is_some();
        let module = load_module(plan.source, &self.device_name)?;
        // SAFETY: a loaded module and a NUL-terminated name.
        let func = unsafe { result::module::get_function(module.0, plan.entry.to_owned()) }
            .map_err(drv("cuModuleGetFunction"))?;

        // One slot per array parameter, in parameter order: a buffer for a host array, the
        // caller's memory for a device array.
        let mut arrays: Vec<(usize, Slot)> = Vec::new();
        for (i, (_, arg)) in bound.args().iter().enumerate() {
            match arg {
                ArgValue::Array(a) => arrays.push((i, Slot::Buffer(DeviceBuffer::alloc(a.byte_len())?))),
                ArgValue::Device(d) => arrays.push((i, Slot::Caller(d.ptr()))),
                ArgValue::Scalar(_) => {}
            }
        }
        let params = DeviceBuffer::alloc(plan.params.len())?;
        // Every run starts from the bound arguments. The first uploads them; later runs restore
        // the `mut` host arrays from a copy kept on the device (so that `--repeat` times the
        // kernel, not uploads from pageable host memory), or upload them again where the device
        // has no room for the copy. (Launches with device arrays run once.)
        let mut pristine: Vec<Option<DeviceBuffer>> = Vec::new();
        for (i, _) in &arrays {
            let keep = plan.runs > 1 && is_mut(kernel, *i);
            pristine.push(match (keep, &bound.args()[*i].1) {
                (true, ArgValue::Array(a)) => DeviceBuffer::alloc(a.byte_len()).ok(),
                _ => None,
            });
        }
        // From here on work is queued on `stream`: the buffers above and the module must not
        // be freed before it is done, also on errors.
        let _wait = WaitOnDrop(stream);
        params.write(plan.params, stream)?;

        // Kernel arguments: the params region of the launch, then the arrays.
        let mut values: Vec<sys::CUdeviceptr> =
            std::iter::once(params.ptr).chain(arrays.iter().map(|(_, s)| s.ptr())).collect();
        let sync = || {
            // SAFETY: `stream` is the NULL stream or a stream of the current context.
            unsafe { result::stream::synchronize(stream) }.map_err(drv("cuStreamSynchronize"))
        };
        let mut times = Vec::with_capacity(plan.runs);
        for run in 0..plan.runs {
            for ((i, slot), copy) in arrays.iter().zip(&pristine) {
                let (Slot::Buffer(buffer), ArgValue::Array(a)) = (slot, &bound.args()[*i].1) else { continue };
                match (run, copy) {
                    (0, Some(copy)) => {
                        buffer.write(a.bytes(), stream)?;
                        copy.copy_from(buffer, a.byte_len(), stream)?;
                    }
                    (0, None) => buffer.write(a.bytes(), stream)?,
                    (_, Some(copy)) => buffer.copy_from(copy, a.byte_len(), stream)?,
                    (_, None) if is_mut(kernel, *i) => buffer.write(a.bytes(), stream)?,
                    _ => {}
                }
            }
            // Timed runs start from finished uploads; a launch with device arrays is queued
            // behind its stream's work at once.
            if !in_place {
                sync()?;
            }
            let t0 = Instant::now();
            for (c, chunk) in plan.chunks.iter().enumerate() {
                values[0] = params.ptr + (c * plan.stride) as u64;
                let mut args: Vec<*mut c_void> = values.iter_mut().map(|v| (v as *mut u64).cast()).collect();
                let [x, y, z] = chunk.count;
                // SAFETY: `func` comes from the loaded module; its parameters are the params
                // pointer and one pointer per array (the launch ABI), and `args` points to
                // that many live device pointers (copied by the driver at launch); the buffers
                // and the caller's device arrays hold what the kernel indexes (the extents in
                // the params buffer are theirs).
                unsafe { result::launch_kernel(func, (x, y, z), (LANES, 1, 1), 0, stream, &mut args) }
                    .map_err(drv("cuLaunchKernel"))?;
            }
            sync()?;
            times.push(t0.elapsed());
        }

        let args = bound.args_mut();
        for (i, slot) in &arrays {
            if let (true, Slot::Buffer(buffer), ArgValue::Array(a)) = (is_mut(kernel, *i), slot, &mut args[*i].1) {
                buffer.read(a.bytes_mut(), stream)?;
            }
        }
        sync()?;
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
