//! [`CudaDevice`]: opening a CUDA device (driver checks, device choice, compute capability)
//! and what launches need to know about it.

use std::fmt;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use cudarc::driver::result::{self, DriverError};
use cudarc::driver::{sys, CudaContext};

use super::driver::{check_driver, drv, error_text, guard};
use crate::error::RunError;

/// The most blocks per launch along each axis (CUDA's limits; the device's may be lower).
pub(super) const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];

/// The newest architecture the PTX backend targets; newer devices run its PTX (JIT).
const NEWEST_ARCH: u32 = 90;

/// What a launch needs to know about the device.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Static shared memory per block (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK`).
    pub(super) max_shared_bytes: u32,
    /// Blocks per launch along each axis.
    pub(super) max_grid: [u32; 3],
}

/// An open CUDA device (its primary context), ready to run PTX from `tilec-codegen-ptx`.
/// Launches from several threads are serialised.
pub struct CudaDevice {
    /// Dropped under `catch_unwind` (see `Drop`).
    pub(super) ctx: ManuallyDrop<Arc<CudaContext>>,
    /// The driver's name of the device (`NVIDIA H100 80GB HBM3`).
    pub(super) device_name: String,
    /// `NVIDIA H100 80GB HBM3 (sm_90, CUDA driver 12.8)`.
    label: String,
    capability: (i32, i32),
    arch: String,
    pub(super) limits: Limits,
    /// Held by a launch: one at a time, so that timings are not shared.
    pub(super) launch_lock: Mutex<()>,
}

impl fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CudaDevice")
            .field("name", &self.label)
            .field("arch", &self.arch)
            .field("max_shared_bytes", &self.limits.max_shared_bytes)
            .field("max_grid", &self.limits.max_grid)
            .finish()
    }
}

impl Drop for CudaDevice {
    fn drop(&mut self) {
        // SAFETY: `ctx` is not used after this.
        let ctx = unsafe { ManuallyDrop::take(&mut self.ctx) };
        // Releasing the primary context calls the driver; a panic there must not escape.
        let _ = catch_unwind(AssertUnwindSafe(move || drop(ctx)));
    }
}

/// The architecture tilec compiles PTX for on a device of compute capability
/// `major.minor`: `sm_XY`, at most `sm_90` (newer devices JIT-compile `sm_90` PTX); `None`
/// below 7.0.
pub(super) fn arch_for(major: i32, minor: i32) -> Option<String> {
    if major < 7 || minor < 0 {
        return None;
    }
    let v = (major as u32).saturating_mul(10).saturating_add(minor as u32);
    Some(format!("sm_{}", v.min(NEWEST_ARCH)))
}

/// The driver's CUDA version (`cuDriverGetVersion`, `12080`) as text: `12.8`.
pub(super) fn version_text(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The device's grid limits (`CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_*`) within [`MAX_GRID`], at
/// least 1.
pub(super) fn grid_limits(attrs: [i32; 3]) -> [u32; 3] {
    [0, 1, 2].map(|a| (attrs[a].max(1) as u32).min(MAX_GRID[a]))
}

/// Device `ordinal` as listed in errors: `NVIDIA H100 80GB HBM3 (sm_90)`.
fn device_label(ordinal: usize) -> String {
    let described = || -> Result<String, DriverError> {
        let dev = result::device::get(ordinal as i32)?;
        let name = result::device::get_name(dev)?;
        let attr = |a| {
            // SAFETY: a device the driver returned.
            unsafe { result::device::get_attribute(dev, a) }
        };
        let major = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok(format!("{name} (sm_{major}{minor})"))
    };
    described().unwrap_or_else(|e| format!("a device whose name cannot be read ({})", error_text(&e)))
}

impl CudaDevice {
    /// Opens CUDA device `index` (in the driver's order, as `CUDA_VISIBLE_DEVICES` leaves
    /// them), or by default device 0.
    ///
    /// Errors: the driver library is missing (E0430, saying to use `--target cpu` or
    /// `--target vulkan` or to install the NVIDIA driver); a driver call fails, the driver
    /// lacks a function the launcher needs, or the driver bindings panic (E0431); there is no
    /// device (E0432); `index` is out of range (E0433, listing the devices); the device's
    /// compute capability is below 7.0 (E0434).
    pub fn open(index: Option<usize>) -> Result<CudaDevice, RunError> {
        check_driver()?;
        guard("opening a CUDA device", || open_device(index))
    }

    /// The device's name, compute capability and driver version:
    /// `NVIDIA H100 80GB HBM3 (sm_90, CUDA driver 12.8)`.
    pub fn name(&self) -> String {
        self.label.clone()
    }

    /// The architecture to compile PTX for (`tilec_codegen_ptx::compile`): `sm_XY` from the
    /// compute capability, at most `sm_90` (the newest the PTX backend targets; newer devices
    /// JIT-compile it).
    pub fn arch(&self) -> String {
        self.arch.clone()
    }

    /// The compute capability, `(9, 0)`.
    pub fn compute_capability(&self) -> (u32, u32) {
        (self.capability.0 as u32, self.capability.1 as u32)
    }

    /// Static shared memory per block in bytes.
    pub fn max_shared_bytes(&self) -> u32 {
        self.limits.max_shared_bytes
    }
}

/// [`CudaDevice::open`] once the driver is known to be there.
fn open_device(index: Option<usize>) -> Result<CudaDevice, RunError> {
    let count = match result::init().and_then(|()| result::device::get_count()) {
        Ok(n) => n.max(0) as usize,
        Err(DriverError(sys::CUresult::CUDA_ERROR_NO_DEVICE)) => 0,
        Err(e) => return Err(drv("cuInit")(e)),
    };
    if count == 0 {
        return Err(RunError::NoCudaDevice);
    }
    let ordinal = match index {
        Some(i) if i < count => i,
        Some(i) => return Err(RunError::CudaDeviceIndex { index: i, devices: (0..count).map(device_label).collect() }),
        None => 0,
    };
    let ctx = CudaContext::new(ordinal).map_err(drv("cuDevicePrimaryCtxRetain"))?;
    // From here on `device` owns the context and releases it on every path.
    let mut device = CudaDevice {
        ctx: ManuallyDrop::new(ctx),
        device_name: String::new(),
        label: String::new(),
        capability: (0, 0),
        arch: String::new(),
        limits: Limits { max_shared_bytes: 0, max_grid: [1; 3] },
        launch_lock: Mutex::new(()),
    };
    let ctx = &device.ctx;
    let name = ctx.name().map_err(drv("cuDeviceGetName"))?;
    let (major, minor) = ctx.compute_capability().map_err(drv("cuDeviceGetAttribute"))?;
    let Some(arch) = arch_for(major, minor) else {
        return Err(RunError::CudaCapability { device: name, major, minor, arch: None });
    };
    let attr = |a: sys::CUdevice_attribute| ctx.attribute(a).map_err(drv("cuDeviceGetAttribute"));
    use sys::CUdevice_attribute as A;
    let max_shared = attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?;
    let max_grid = grid_limits([
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
        attr(A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
    ]);
    let mut version = 0;
    // SAFETY: writes one int.
    let driver = unsafe { sys::cuDriverGetVersion(&mut version) }.result().ok().map(|()| version_text(version));
    let label = match driver {
        Some(v) => format!("{name} (sm_{major}{minor}, CUDA driver {v})"),
        None => format!("{name} (sm_{major}{minor})"),
    };
    device.limits = Limits { max_shared_bytes: max_shared.max(0) as u32, max_grid };
    device.device_name = name;
    device.label = label;
    device.capability = (major, minor);
    device.arch = arch;
    Ok(device)
}
