//! The error type of the runtime ([`RunError`]), with one stable code per case.

use std::fmt;
use std::path::PathBuf;

use tilec_midend::eval::EvalError;
use tilec_midend::Scalar;

/// The dtypes `.npy` files may have, as listed in error messages.
pub(crate) const SUPPORTED_DTYPES: &str =
    "<f4 (f32), <f8 (f64), <i4 (i32), <u4 (u32), <i8 (i64), <f2 (f16), <V2 (bf16, as ml_dtypes saves it)";

/// Everything that can go wrong when reading, binding or launching. Each variant has a stable
/// code ([`RunError::code`]) in `E0400..=E0443` (`E0420..=E0428` are the Vulkan launcher's,
/// `E0430..=E0436` the CUDA launcher's, `E0437..` those of arrays in the caller's memory).
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// E0400: a file could not be opened, read, written or renamed.
    Io { path: PathBuf, action: &'static str, message: String },
    /// E0401: the file is not a `.npy` file, or its header cannot be parsed.
    NotNpy { path: PathBuf, detail: String },
    /// E0402: the `.npy` dtype is not one of f32, f64, i32 (little-endian).
    UnsupportedDtype { path: PathBuf, dtype: String },
    /// E0403: the `.npy` array is stored in Fortran order.
    FortranOrder { path: PathBuf },
    /// E0404: the `.npy` data is shorter than its header says (sizes in bytes).
    Truncated { path: PathBuf, expected: u64, actual: u64 },
    /// E0405: a host array's data does not match its shape (element counts), or the shape
    /// has more elements than memory can address.
    DataLength { shape: Vec<u64>, expected: Option<u64>, actual: u64 },
    /// E0406: arrays of this element type (`bool`) are not supported.
    UnsupportedElem { elem: Scalar },
    /// E0407: a kernel parameter has no argument.
    MissingArg { kernel: String, name: String, ty: String },
    /// E0408: an argument names no parameter of the kernel.
    UnknownArg { kernel: String, name: String, params: Vec<String> },
    /// E0409: an array was given for a scalar parameter, or a scalar for an array parameter.
    ArgKind { name: String, ty: String, given_array: bool },
    /// E0410: an argument's element or scalar type differs from the parameter's.
    DtypeMismatch { name: String, expected: Scalar, actual: Scalar },
    /// E0411: an array argument's rank differs from the parameter's.
    /// `expected` is the declared shape written with variable names, e.g. `[B, N, N]`.
    RankMismatch { name: String, expected: String, rank: usize, actual: Vec<u64> },
    /// E0412: an array argument's extents differ from the declared ones (literal extents or
    /// shape variables bound by earlier arguments).
    ShapeMismatch { name: String, expected: String, expected_values: Vec<u64>, actual: Vec<u64> },
    /// E0413: an array extent does not fit in i32.
    ExtentTooLarge { name: String, axis: usize, extent: u64 },
    /// E0419: an array has 2^31 elements or more, which the GPU targets' 32-bit element
    /// indices cannot address.
    GpuArrayTooLarge { name: String, elements: u64 },
    /// E0414: scalar argument text does not parse as the parameter's type; `arg` names the
    /// argument where the caller knows it ([`RunError::for_argument`]).
    BadScalar { text: String, ty: Scalar, reason: String, arg: Option<String> },
    /// E0409: a value that is not a number (`given` says what it is: ``a `str` ('3')``,
    /// `None`) for scalar argument `name`.
    NotANumber { name: String, given: String },
    /// E0415: the launch function could not be evaluated.
    Eval { kernel: String, error: EvalError },
    /// E0416: a grid extent is above `i32::MAX`, or the grid has too many programs.
    GridTooLarge { grid: [i64; 3] },
    /// E0417: the bound arguments, the module and the kernel do not belong together (an
    /// internal error of the caller).
    Mismatch { detail: String },
    /// E0418: an output was requested for something that is not a `mut` array parameter.
    NotAnOutput { kernel: String, name: String },
    /// E0429: a `.npy` header's shape needs more bytes than 64 bits count or this machine can
    /// allocate (found before any data is read; `elem_bytes` is the dtype's size).
    NpyTooLarge { path: PathBuf, shape: Vec<u64>, elem_bytes: u64 },
    /// E0420: the Vulkan loader library could not be loaded.
    VulkanLoader { library: &'static str, detail: String },
    /// E0421: a Vulkan call failed; `result` is the `VkResult` name (`VK_ERROR_DEVICE_LOST`).
    VulkanCall { call: &'static str, result: String },
    /// E0422: the Vulkan loader found no physical device.
    NoVulkanDevice,
    /// E0423: a Vulkan device index is out of range (`devices` lists the available ones).
    VulkanDeviceIndex { index: usize, devices: Vec<String> },
    /// E0424: the device (or the loader) lacks something the Vulkan launcher needs: Vulkan
    /// 1.1, subgroup shuffles in compute shaders, a compute queue, host-visible memory,
    /// descriptor indexing (for arrays larger than a storage buffer), enough storage buffers
    /// per shader.
    VulkanUnsupported { device: String, reason: String },
    /// E0425: the shader was compiled for a subgroup size other than the device's.
    SubgroupSize { device: String, lanes: u32, subgroup: u32 },
    /// E0426: the shader needs more shared memory than the device has (bytes).
    SharedMemory { device: String, needed: u32, available: u32 },
    /// E0427: the shader uses 64-bit floats or integers, or 16-bit storage (`f16`/`bf16` arrays),
    /// which the device does not support.
    DeviceFeature { device: String, feature: &'static str },
    /// E0428: a buffer is larger than the device allows (bytes); `name` says what it holds
    /// (``array `A` ``, `the params buffer`).
    BufferTooLarge { device: String, name: String, bytes: u64, limit: u64 },
    /// E0430: the CUDA driver library (`libcuda.so.1`, `nvcuda.dll` on Windows) could not be
    /// loaded: the machine has no NVIDIA driver, or it lies outside the places tried. `tried`
    /// says where it was looked for, each with the loader's answer (`dlerror`), in order.
    CudaDriverMissing { library: &'static str, tried: Vec<String> },
    /// E0431: a CUDA driver call failed (`detail`: the `CUresult` name and its description),
    /// or the driver lacks a function the launcher needs (too old), or the driver bindings
    /// panicked.
    CudaCall { call: String, detail: String },
    /// E0432: the CUDA driver found no device.
    NoCudaDevice,
    /// E0433: a CUDA device index is out of range (`devices` lists the available ones).
    CudaDeviceIndex { index: usize, devices: Vec<String> },
    /// E0434: the device's compute capability is below 7.0 (`arch: None`), or below the
    /// architecture the PTX was compiled for (`arch: Some("sm_90")`).
    CudaCapability { device: String, major: i32, minor: i32, arch: Option<String> },
    /// E0435: the CUDA driver could not compile (JIT) or load the PTX; `error` is the
    /// `CUresult` name, `log` the driver's error log.
    PtxJit { device: String, error: String, log: String },
    /// E0436: the kernel needs more shared memory per block than the CUDA device has (bytes).
    CudaSharedMemory { device: String, needed: u32, available: u32 },
    /// E0437: a read-only array (a NumPy array that is not writeable, a shared slice) for a
    /// `mut` parameter.
    ReadOnlyArg { name: String, ty: String },
    /// E0438: the memory of `mut` argument `name` overlaps that of argument `other`; kernels
    /// assume their arrays do not alias.
    Overlap { name: String, other: String },
    /// E0439: caller memory passed as an array is null or not aligned to its element size
    /// (`align` bytes); `arg` names the argument where the caller knows it.
    Misaligned { address: u64, align: u32, arg: Option<String> },
    /// E0440: an array argument from Python is not C-contiguous (`strides` in bytes) or does
    /// not expose its memory; tilec never copies arrays on the way in.
    NotContiguous { name: String, detail: String },
    /// E0441: the extent expression `expr` of array `name` cannot be evaluated with the
    /// arguments given (`reason`); `unbound` when a variable of it has no value.
    ExtentExpr { name: String, expr: String, reason: String, unbound: bool },
    /// E0442: array `name` is in memory that the launch cannot use, described by `memory`:
    /// CUDA device memory (a PyTorch or CuPy CUDA tensor) for a kernel that runs on `target`
    /// (`cpu` or `vulkan`), whose launcher cannot read it; or, with `target` `None`, the
    /// memory of a device tilec does not run on (a DLPack device other than CPU and CUDA).
    ArrayMemory { name: String, memory: String, target: Option<&'static str> },
    /// E0443: CUDA device array `name` is not where the launch needs it (`detail`): on another
    /// device than another argument or than the kernel's device, or at an address that the
    /// CUDA driver does not know as device memory, or beyond the end of its allocation.
    CudaMemory { name: String, detail: String },
}

impl RunError {
    /// The error with argument `name` filled in where it concerns one argument but was made
    /// without its name (a scalar's conversion, E0414; an array's address, E0439).
    pub fn for_argument(self, name: &str) -> RunError {
        match self {
            RunError::BadScalar { text, ty, reason, arg: None } => {
                RunError::BadScalar { text, ty, reason, arg: Some(name.to_string()) }
            }
            RunError::Misaligned { address, align, arg: None } => {
                RunError::Misaligned { address, align, arg: Some(name.to_string()) }
            }
            e => e,
        }
    }

    /// The stable error code, `E0400` to `E0443`.
    pub fn code(&self) -> &'static str {
        match self {
            RunError::Io { .. } => "E0400",
            RunError::NotNpy { .. } => "E0401",
            RunError::UnsupportedDtype { .. } => "E0402",
            RunError::FortranOrder { .. } => "E0403",
            RunError::Truncated { .. } => "E0404",
            RunError::DataLength { .. } => "E0405",
            RunError::UnsupportedElem { .. } => "E0406",
            RunError::MissingArg { .. } => "E0407",
            RunError::UnknownArg { .. } => "E0408",
            RunError::ArgKind { .. } | RunError::NotANumber { .. } => "E0409",
            RunError::DtypeMismatch { .. } => "E0410",
            RunError::RankMismatch { .. } => "E0411",
            RunError::ShapeMismatch { .. } => "E0412",
            RunError::ExtentTooLarge { .. } => "E0413",
            RunError::GpuArrayTooLarge { .. } => "E0419",
            RunError::BadScalar { .. } => "E0414",
            RunError::Eval { .. } => "E0415",
            RunError::GridTooLarge { .. } => "E0416",
            RunError::Mismatch { .. } => "E0417",
            RunError::NotAnOutput { .. } => "E0418",
            RunError::NpyTooLarge { .. } => "E0429",
            RunError::VulkanLoader { .. } => "E0420",
            RunError::VulkanCall { .. } => "E0421",
            RunError::NoVulkanDevice => "E0422",
            RunError::VulkanDeviceIndex { .. } => "E0423",
            RunError::VulkanUnsupported { .. } => "E0424",
            RunError::SubgroupSize { .. } => "E0425",
            RunError::SharedMemory { .. } => "E0426",
            RunError::DeviceFeature { .. } => "E0427",
            RunError::BufferTooLarge { .. } => "E0428",
            RunError::CudaDriverMissing { .. } => "E0430",
            RunError::CudaCall { .. } => "E0431",
            RunError::NoCudaDevice => "E0432",
            RunError::CudaDeviceIndex { .. } => "E0433",
            RunError::CudaCapability { .. } => "E0434",
            RunError::PtxJit { .. } => "E0435",
            RunError::CudaSharedMemory { .. } => "E0436",
            RunError::ReadOnlyArg { .. } => "E0437",
            RunError::Overlap { .. } => "E0438",
            RunError::Misaligned { .. } => "E0439",
            RunError::NotContiguous { .. } => "E0440",
            RunError::ExtentExpr { .. } => "E0441",
            RunError::ArrayMemory { .. } => "E0442",
            RunError::CudaMemory { .. } => "E0443",
        }
    }

    /// An [`RunError::Io`] from a `std::io::Error`.
    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, e: &std::io::Error) -> RunError {
        RunError::Io { path: path.into(), action, message: e.to_string() }
    }
}

/// Writes `[a, b, c]`.
pub(crate) fn list(xs: &[u64]) -> String {
    let parts: Vec<String> = xs.iter().map(u64::to_string).collect();
    format!("[{}]", parts.join(", "))
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Io { path, action, message } => {
                write!(f, "cannot {action} `{}`: {message}", path.display())
            }
            RunError::NotNpy { path, detail } => {
                write!(f, "`{}` is not a valid .npy file: {detail}", path.display())
            }
            RunError::UnsupportedDtype { path, dtype } => write!(
                f,
                "`{}` has dtype `{dtype}`, which is not supported (supported: {SUPPORTED_DTYPES})",
                path.display()
            ),
            RunError::FortranOrder { path } => write!(
                f,
                "`{}` is stored in Fortran order; only C order is supported \
                 (save it with numpy.ascontiguousarray)",
                path.display()
            ),
            RunError::Truncated { path, expected, actual } => write!(
                f,
                "`{}` is truncated: its header announces {expected} bytes of data, the file has {actual}",
                path.display()
            ),
            RunError::DataLength { shape, expected: Some(n), actual } => {
                write!(f, "an array of shape {} needs {n} elements, {actual} given", list(shape))
            }
            RunError::DataLength { shape, expected: None, .. } => {
                write!(f, "an array of shape {} has too many elements for this machine", list(shape))
            }
            RunError::UnsupportedElem { elem } => {
                write!(f, "arrays of {} are not supported (supported: f32, f64, i32, u32, i64, f16, bf16)", elem.name())
            }
            RunError::MissingArg { kernel, name, ty } => {
                write!(f, "missing argument `{name}: {ty}` of kernel `{kernel}`")
            }
            RunError::UnknownArg { kernel, name, params } => write!(
                f,
                "kernel `{kernel}` has no parameter `{name}` (its parameters: {})",
                if params.is_empty() { "none".to_string() } else { params.join(", ") }
            ),
            RunError::ArgKind { name, ty, given_array: true } => {
                write!(f, "argument `{name}` is an array, but the parameter is a scalar `{ty}`")
            }
            RunError::ArgKind { name, ty, given_array: false } => {
                write!(f, "argument `{name}` is a scalar, but the parameter is an array `{ty}`")
            }
            RunError::DtypeMismatch { name, expected, actual } => {
                write!(f, "argument `{name}`: expected dtype {}, got {}", expected.name(), actual.name())
            }
            RunError::RankMismatch { name, expected, rank, actual } => write!(
                f,
                "argument `{name}`: expected an array of rank {rank} {expected}, got rank {} {}",
                actual.len(),
                list(actual)
            ),
            RunError::ShapeMismatch { name, expected, expected_values, actual } => write!(
                f,
                "argument `{name}`: expected shape {expected} = {}, got {}",
                list(expected_values),
                list(actual)
            ),
            RunError::ExtentTooLarge { name, axis, extent } => {
                write!(f, "argument `{name}`: extent {extent} along axis {axis} is larger than {} (i32)", i32::MAX)
            }
            RunError::GpuArrayTooLarge { name, elements } => write!(
                f,
                "argument `{name}`: {elements} elements, more than the {} that GPU targets address \
                 (their element indices are 32-bit); split the array or use --target cpu",
                i32::MAX
            ),
            RunError::BadScalar { text, ty, reason, arg } => {
                if let Some(a) = arg {
                    write!(f, "argument `{a}`: ")?;
                }
                write!(f, "`{text}` is not a valid {}: {reason}", ty.name())
            }
            RunError::NotANumber { name, given } => {
                write!(f, "argument `{name}` is a scalar parameter and takes a number, but {given} was given")
            }
            RunError::Eval { kernel, error } => {
                write!(f, "cannot compute the launch grid of kernel `{kernel}`: {error}")
            }
            RunError::GridTooLarge { grid } => write!(
                f,
                "launch grid [{}, {}, {}] is too large (each extent must be at most {})",
                grid[0],
                grid[1],
                grid[2],
                i32::MAX
            ),
            RunError::Mismatch { detail } => write!(f, "internal launch error: {detail}"),
            RunError::NpyTooLarge { path, shape, elem_bytes } => write!(
                f,
                "`{}` has shape {}: {elem_bytes}-byte elements that need more memory than this \
                 machine can allocate",
                path.display(),
                list(shape)
            ),
            RunError::NotAnOutput { kernel, name } => {
                write!(f, "`{name}` is not a `mut` array parameter of kernel `{kernel}`, so it cannot be an output")
            }
            RunError::VulkanLoader { library, detail } => write!(
                f,
                "the Vulkan loader {library} was not found or could not be loaded ({detail}); \
                 install it with a driver, e.g. `apt-get install libvulkan1 mesa-vulkan-drivers` \
                 for lavapipe, a CPU driver"
            ),
            RunError::VulkanCall { call, result } => {
                write!(f, "Vulkan call {call} failed: {result}")
            }
            RunError::NoVulkanDevice => write!(
                f,
                "no Vulkan device found (for a CPU device, install lavapipe: \
                 `apt-get install mesa-vulkan-drivers`)"
            ),
            RunError::VulkanDeviceIndex { index, devices } => {
                let list: Vec<String> = devices.iter().enumerate().map(|(i, d)| format!("{i}: {d}")).collect();
                write!(f, "there is no Vulkan device {index} (devices: {})", list.join(", "))
            }
            RunError::VulkanUnsupported { device, reason } => {
                write!(f, "Vulkan device `{device}` cannot run tilec kernels: {reason}")
            }
            RunError::SubgroupSize { device, lanes, subgroup } => write!(
                f,
                "the shader was compiled for {lanes} lanes, but Vulkan device `{device}` has \
                 subgroups of {subgroup}; compile it for {subgroup} lanes"
            ),
            RunError::SharedMemory { device, needed, available } => write!(
                f,
                "the kernel needs {needed} bytes of shared memory, Vulkan device `{device}` has \
                 {available} bytes"
            ),
            RunError::DeviceFeature { device, feature } => {
                write!(f, "the kernel uses {feature}, which Vulkan device `{device}` does not support")
            }
            RunError::BufferTooLarge { device, name, bytes, limit } => write!(
                f,
                "{name} needs a buffer of {bytes} bytes, Vulkan device `{device}` allows at \
                 most {limit} bytes"
            ),
            RunError::CudaDriverMissing { library, tried } => write!(
                f,
                "CUDA driver ({library}) not found: this machine has no NVIDIA driver, or it lies \
                 outside the places tried ({}); use --target cpu or --target vulkan, install the \
                 NVIDIA driver, or put the folder that holds {library} on LD_LIBRARY_PATH",
                tried.join("; ")
            ),
            RunError::CudaCall { call, detail } => write!(f, "CUDA driver call {call} failed: {detail}"),
            RunError::NoCudaDevice => write!(
                f,
                "no CUDA device found (the NVIDIA driver is installed, but it lists no GPU); use \
                 --target cpu or --target vulkan"
            ),
            RunError::CudaDeviceIndex { index, devices } => {
                let list: Vec<String> = devices.iter().enumerate().map(|(i, d)| format!("{i}: {d}")).collect();
                write!(f, "there is no CUDA device {index} (devices: {})", list.join(", "))
            }
            RunError::CudaCapability { device, major, minor, arch: None } => write!(
                f,
                "CUDA device `{device}`: compute capability {major}.{minor} is below 7.0 (tilec's \
                 PTX needs sm_70 or newer); use --target vulkan or --target cpu"
            ),
            RunError::CudaCapability { device, major, minor, arch: Some(arch) } => write!(
                f,
                "the PTX was compiled for {arch}, but CUDA device `{device}` has compute capability \
                 {major}.{minor}; compile it for sm_{major}{minor}"
            ),
            RunError::PtxJit { device, error, log } => {
                write!(f, "the CUDA driver could not compile the PTX for device `{device}`: {error}")?;
                let log = log.trim();
                if !log.is_empty() {
                    write!(f, "\n{log}")?;
                }
                if error == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" {
                    write!(f, "\n(the PTX is newer than this driver understands: update the NVIDIA driver)")?;
                }
                Ok(())
            }
            RunError::CudaSharedMemory { device, needed, available } => write!(
                f,
                "the kernel needs {needed} bytes of shared memory, CUDA device `{device}` has \
                 {available} bytes per block"
            ),
            RunError::ReadOnlyArg { name, ty } => {
                write!(
                    f,
                    "argument `{name}` is read-only, but the parameter is `{name}: {ty}`, which the kernel writes"
                )
            }
            RunError::Overlap { name, other } => write!(
                f,
                "the memory of argument `{name}`, which the kernel writes, overlaps that of argument `{other}`"
            ),
            RunError::Misaligned { address, align, arg } => {
                if let Some(a) = arg {
                    write!(f, "argument `{a}`: ")?;
                }
                write!(f, "array memory at address {address:#x} is not aligned to its element size ({align} bytes)")
            }
            RunError::NotContiguous { name, detail } => write!(f, "argument `{name}` {detail}"),
            RunError::ExtentExpr { name, expr, reason, .. } => {
                write!(f, "the extent `{expr}` of `{name}` cannot be computed: {reason}")
            }
            RunError::ArrayMemory { name, memory, target: Some(target) } => write!(
                f,
                "argument `{name}` is in {memory}, which the {target} target cannot read; pass a \
                 host copy (`.cpu()` or `.numpy()` of a PyTorch tensor, `.get()` of a CuPy array) \
                 or run the kernel on target cuda"
            ),
            RunError::ArrayMemory { name, memory, target: None } => write!(
                f,
                "argument `{name}` is in {memory}, which tilec cannot use; pass an array in host \
                 memory or in CUDA device memory"
            ),
            RunError::CudaMemory { name, detail } => write!(f, "argument `{name}` {detail}"),
        }
    }
}

impl std::error::Error for RunError {}
