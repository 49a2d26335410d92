//! Arrays described by other libraries' exchange protocols, as the Python package receives
//! them: NumPy's array interface (type strings, byte strides), `__cuda_array_interface__`
//! (versions 2 and 3: address, shape, type string, strides, stream) and DLPack (`DLTensor`:
//! device, dtype, shape, strides in elements). Only the descriptions are read here, never the
//! elements: device memory is never touched on the host.
//!
//! Every failure is a [`RunError`] naming the argument: E0440 for a description tilec cannot
//! use (a dtype kernels cannot take, strides that are not C order, a malformed or unsupported
//! protocol entry), E0442 for memory of a device tilec does not run on, and the errors of
//! [`DeviceArray::from_raw`].

use std::ffi::{c_void, CStr};

use tilec_midend::Scalar;

use crate::array::DeviceArray;
use crate::error::RunError;

/// The dtypes kernels take, as error messages list them.
const KERNEL_DTYPES: &str = "float32, float64, int32, uint32, int64, float16, bfloat16";

/// E0440 for argument `name`: `detail` follows the argument's name in the message.
fn unusable(name: &str, detail: String) -> RunError {
    RunError::NotContiguous { name: name.to_string(), detail }
}

/// E0440: argument `name` has dtype `dtype` (as its protocol writes it), which kernels cannot
/// take.
fn unsupported_dtype(name: &str, dtype: &str) -> RunError {
    unusable(name, format!("has dtype `{dtype}`, which kernels cannot take (supported: {KERNEL_DTYPES})"))
}

/// The element type of an array-interface type string (NumPy's `__array_interface__` and
/// `__cuda_array_interface__`: `<f4`, `<f8`, `<i4`, `<f2`, `<V2` for `ml_dtypes.bfloat16`, ...)
/// of argument `name`. A type the protocol has but kernels do not take (`|b1`) is
/// returned as such, for E0406 later; anything else is E0440.
pub fn typestr_elem(name: &str, typestr: &str) -> Result<Scalar, RunError> {
    match typestr {
        "<f4" | "=f4" => Ok(Scalar::F32),
        "<f8" | "=f8" => Ok(Scalar::F64),
        "<i4" | "=i4" => Ok(Scalar::I32),
        "<i8" | "=i8" => Ok(Scalar::I64),
        "<u4" | "=u4" => Ok(Scalar::U32),
        "|b1" => Ok(Scalar::Bool),
        "<f2" | "=f2" => Ok(Scalar::F16),
        // `ml_dtypes.bfloat16`, which NumPy sees as a 2-byte void.
        "<V2" | "|V2" => Ok(Scalar::BF16),
        _ => Err(unsupported_dtype(name, typestr)),
    }
}

/// How to get a C-contiguous copy of a host array, for E0440's message.
pub const HOST_COPY: &str = "numpy.ascontiguousarray(...) of it";

/// How to get a C-contiguous copy of a CUDA array, for E0440's message.
pub const DEVICE_COPY: &str =
    "a contiguous copy of it (`.contiguous()` of a PyTorch tensor, cupy.ascontiguousarray(...))";

/// Error E0440 unless `strides` (bytes, `None` meaning C order) are those of a C-contiguous
/// array of `shape` with `itemsize`-byte elements (extents of 1 may have any stride; an empty
/// array is always fine). `copy` says how to get a contiguous copy ([`HOST_COPY`],
/// [`DEVICE_COPY`]).
pub fn check_c_contiguous(
    name: &str,
    shape: &[u64],
    strides: Option<&[i64]>,
    itemsize: i64,
    copy: &str,
) -> Result<(), RunError> {
    let Some(strides) = strides else { return Ok(()) };
    if shape.contains(&0) {
        return Ok(());
    }
    let mut want = itemsize;
    let wrong = strides.len() != shape.len()
        || shape.iter().zip(strides).rev().any(|(&d, &s)| {
            let bad = d != 1 && s != want;
            want = want.saturating_mul(d as i64);
            bad
        });
    if wrong {
        return Err(unusable(
            name,
            format!("is not C-contiguous (strides {strides:?} bytes for shape {shape:?}); pass {copy}"),
        ));
    }
    Ok(())
}

/// Extents as the protocols give them (signed), checked not to be negative (E0440).
fn extents(name: &str, what: &str, shape: &[i64]) -> Result<Vec<u64>, RunError> {
    shape
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| unusable(name, format!("has {what} {shape:?}, with a negative extent"))))
        .collect()
}

/// The stream of a CUDA array, as `__cuda_array_interface__` (version 3) and DLPack's
/// `__dlpack__(stream=...)` write it: `None` when no ordering is needed, 1 for the legacy
/// default stream, 2 for the per-thread default stream, any other positive value a
/// `cudaStream_t`. These are the driver's `CUstream` handle values, returned as they are.
/// Error E0440 for 0 (which the protocol disallows as ambiguous) and negative values.
pub fn cuda_stream(name: &str, stream: Option<i64>) -> Result<Option<u64>, RunError> {
    match stream {
        None => Ok(None),
        Some(s) if s > 0 => Ok(Some(s as u64)),
        Some(s) => Err(unusable(
            name,
            format!(
                "names CUDA stream {s}, which the protocol disallows (1: the legacy default stream, \
                 2: the per-thread default stream, else a cudaStream_t; no entry or None: no stream)"
            ),
        )),
    }
}

/// The entries of a `__cuda_array_interface__` (versions 2 and 3), as the producer gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaArrayInterface {
    /// `version`: 2 (PyTorch) or 3 (CuPy, Numba), which add nothing tilec needs to 2 but the
    /// stream.
    pub version: i64,
    /// `data`: the device address of the first element and the read-only flag.
    pub data: (u64, bool),
    /// `shape`: the extents, outermost first.
    pub shape: Vec<i64>,
    /// `typestr`: the element type, as NumPy's array interface writes it (`<f4`).
    pub typestr: String,
    /// `strides` in bytes, `None` for C order.
    pub strides: Option<Vec<i64>>,
    /// Whether `mask` is given (not `None`): masked arrays cannot be passed.
    pub masked: bool,
    /// `stream` (see [`cuda_stream`]): `None` when the producer's work on the array is
    /// complete.
    pub stream: Option<i64>,
}

impl CudaArrayInterface {
    /// The device array it describes, for argument `name`, on CUDA device `device` where the
    /// producer says which (`__dlpack_device__`; the interface itself does not).
    ///
    /// Errors: a version other than 2 or 3, a mask, a negative extent, a stream of 0 or below
    /// (E0440); a type string kernels cannot take (E0440, as for host arrays); strides that
    /// are not C order (E0440); those of [`DeviceArray::from_raw`] (E0405, E0406, E0439).
    ///
    /// # Safety
    ///
    /// The description must be true of the producer's memory, as [`DeviceArray::from_raw`]
    /// requires (with `writable` the negated read-only flag), for as long as the array is used.
    pub unsafe fn device_array(&self, name: &str, device: Option<usize>) -> Result<DeviceArray, RunError> {
        let cai = "__cuda_array_interface__";
        if !(2..=3).contains(&self.version) {
            return Err(unusable(
                name,
                format!("has a {cai} of version {}; tilec reads versions 2 and 3", self.version),
            ));
        }
        if self.masked {
            return Err(unusable(name, format!("has a {cai} with a mask; pass an array without one")));
        }
        let shape = extents(name, "shape", &self.shape)?;
        let elem = typestr_elem(name, &self.typestr)?;
        check_c_contiguous(name, &shape, self.strides.as_deref(), elem.bytes() as i64, DEVICE_COPY)?;
        let stream = cuda_stream(name, self.stream)?;
        let (ptr, read_only) = self.data;
        // SAFETY: the caller's contract.
        unsafe { DeviceArray::from_raw(elem, &shape, ptr, device, stream, !read_only) }
    }
}

/// DLPack's `DLDevice`: a device type (`kDLCPU` 1, `kDLCUDA` 2, ...) and an index.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

/// DLPack's `DLDataType`: a type code (0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool),
/// its width in bits and its lanes (1 for scalars).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// DLPack's `DLTensor`: the data pointer (plus `byte_offset`), device, rank, dtype, extents
/// and strides (in elements; null for C order).
#[repr(C)]
#[derive(Debug)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *const i64,
    pub strides: *const i64,
    pub byte_offset: u64,
}

/// DLPack's `DLManagedTensor`, in a capsule named `dltensor` (DLPack before 1.0).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// DLPack's `DLPackVersion`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

/// DLPack's `DLManagedTensorVersioned`, in a capsule named `dltensor_versioned` (DLPack 1.x).
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_READ_ONLY` (bit 0), `..._IS_COPIED` (bit 1), ...
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

/// The read-only bit of [`DLManagedTensorVersioned::flags`].
pub const DLPACK_FLAG_READ_ONLY: u64 = 1;

/// The capsule name of a [`DLManagedTensor`].
pub const DLTENSOR: &CStr = c"dltensor";

/// The capsule name of a [`DLManagedTensorVersioned`].
pub const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";

/// The tensor in a DLPack capsule named `capsule` holding `ptr` (a [`DLManagedTensor`] for
/// [`DLTENSOR`], a [`DLManagedTensorVersioned`] for [`DLTENSOR_VERSIONED`]), and whether it is
/// read-only (only versioned tensors say so). Errors E0440: another name (`used_dltensor`: a
/// capsule already consumed), a versioned tensor of a major version other than 1.
///
/// # Safety
///
/// `ptr` must point to a live tensor of the kind that `capsule` names, for `'a`.
pub unsafe fn dlpack_tensor<'a>(
    name: &str,
    capsule: &CStr,
    ptr: *const c_void,
) -> Result<(&'a DLTensor, bool), RunError> {
    if capsule == DLTENSOR {
        // SAFETY: the caller's contract.
        let m = unsafe { &*ptr.cast::<DLManagedTensor>() };
        return Ok((&m.dl_tensor, false));
    }
    if capsule == DLTENSOR_VERSIONED {
        // SAFETY: the caller's contract.
        let m = unsafe { &*ptr.cast::<DLManagedTensorVersioned>() };
        if m.version.major != 1 {
            return Err(unusable(
                name,
                format!(
                    "gives a DLPack tensor of version {}.{}; tilec reads version 1 (and unversioned ones)",
                    m.version.major, m.version.minor
                ),
            ));
        }
        return Ok((&m.dl_tensor, m.flags & DLPACK_FLAG_READ_ONLY != 0));
    }
    Err(unusable(
        name,
        format!(
            "gives a capsule named `{}`, not a DLPack tensor (`dltensor` or `dltensor_versioned`; \
             `used_dltensor` is one already consumed)",
            capsule.to_string_lossy()
        ),
    ))
}

/// Where the memory of a DLPack device is, for tilec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// Host memory, which NumPy reads (CPU; CUDA and ROCm pinned host memory).
    Host,
    /// Memory of CUDA device `.0` (CUDA device memory, CUDA managed memory).
    Cuda(usize),
}

/// Where the memory of DLPack device `device` is (`__dlpack_device__()`, or a tensor's
/// device), for argument `name`. Errors: a device tilec does not run on (E0442); a negative
/// CUDA device index (E0440).
pub fn dlpack_memory(name: &str, device: DLDevice) -> Result<Memory, RunError> {
    let DLDevice { device_type, device_id } = device;
    let other = |kind: &str| RunError::ArrayMemory {
        name: name.to_string(),
        memory: format!("the memory of {kind} (DLPack device type {device_type})"),
        target: None,
    };
    match device_type {
        1 | 3 | 11 => Ok(Memory::Host),
        2 | 13 => match usize::try_from(device_id) {
            Ok(i) => Ok(Memory::Cuda(i)),
            Err(_) => Err(unusable(name, format!("is on CUDA device {device_id}, which is not a device index"))),
        },
        4 => Err(other("an OpenCL device")),
        7 => Err(other("a Vulkan device")),
        8 => Err(other("a Metal device")),
        10 => Err(other("a ROCm device")),
        14 => Err(other("a oneAPI device")),
        15 => Err(other("a WebGPU device")),
        _ => Err(other("a device")),
    }
}

/// The element type of DLPack dtype `t` of argument `name`. Types kernels do not take but
/// arrays may have (`int64`, `uint32`, `bool`) are returned as such, for E0406 later; any
/// other (vectors of lanes, complex, 8- and 16-bit integers) is E0440.
pub fn dlpack_elem(name: &str, t: DLDataType) -> Result<Scalar, RunError> {
    let elem = match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => Some(Scalar::F32),
        (2, 64, 1) => Some(Scalar::F64),
        (2, 16, 1) => Some(Scalar::F16),
        (4, 16, 1) => Some(Scalar::BF16),
        (0, 32, 1) => Some(Scalar::I32),
        (0, 64, 1) => Some(Scalar::I64),
        (1, 32, 1) => Some(Scalar::U32),
        (6, 8, 1) => Some(Scalar::Bool),
        _ => None,
    };
    elem.ok_or_else(|| {
        let kind = match t.code {
            0 => "int".to_string(),
            1 => "uint".to_string(),
            2 => "float".to_string(),
            4 => "bfloat".to_string(),
            5 => "complex".to_string(),
            6 => "bool".to_string(),
            c => format!("type code {c} of "),
        };
        let lanes = if t.lanes == 1 { String::new() } else { format!("x{}", t.lanes) };
        unsupported_dtype(name, &format!("{kind}{}{lanes}", t.bits))
    })
}

/// Most dimensions a DLPack tensor may have here (a larger `ndim` is a malformed tensor).
const MAX_DIMS: i32 = 64;

/// The device array that DLPack tensor `t` of argument `name` describes, read-only when
/// `read_only`, ordered after `stream` (as [`cuda_stream`] reads it: the stream passed to the
/// producer's `__dlpack__`).
///
/// Errors: the tensor is in host memory (E0440: it belongs on the host path), or on a device
/// tilec does not run on (E0442); a negative or absurd rank, a null shape, negative extents,
/// an address that overflows with its byte offset, a stream of 0 or below (E0440); a dtype
/// kernels cannot take (E0440); strides that are not C order (E0440); those of
/// [`DeviceArray::from_raw`] (E0405, E0406, E0439).
///
/// # Safety
///
/// `t.shape` (and `t.strides` when not null) must point to `t.ndim` readable values, and the
/// description must be true of the producer's memory, as [`DeviceArray::from_raw`] requires
/// (with `writable` = `!read_only`), for as long as the array is used.
pub unsafe fn dlpack_device_array(
    name: &str,
    t: &DLTensor,
    read_only: bool,
    stream: Option<i64>,
) -> Result<DeviceArray, RunError> {
    let Memory::Cuda(device) = dlpack_memory(name, t.device)? else {
        return Err(unusable(name, "gives a DLPack tensor in host memory, not CUDA device memory".to_string()));
    };
    if !(0..=MAX_DIMS).contains(&t.ndim) || (t.ndim > 0 && t.shape.is_null()) {
        return Err(unusable(name, format!("gives a malformed DLPack tensor (rank {})", t.ndim)));
    }
    let n = t.ndim as usize;
    let read = |p: *const i64| -> Vec<i64> {
        if n == 0 {
            return Vec::new();
        }
        // SAFETY: `p` points to `ndim` values (the caller's contract), not null (checked).
        unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
    };
    let shape = extents(name, "shape", &read(t.shape))?;
    let elem = dlpack_elem(name, t.dtype)?;
    let itemsize = elem.bytes() as i64;
    if !t.strides.is_null() {
        let bytes: Vec<i64> = read(t.strides).iter().map(|&s| s.saturating_mul(itemsize)).collect();
        check_c_contiguous(name, &shape, Some(&bytes), itemsize, DEVICE_COPY)?;
    }
    let ptr = (t.data as usize as u64)
        .checked_add(t.byte_offset)
        .ok_or_else(|| unusable(name, "gives a DLPack tensor whose address overflows".to_string()))?;
    let stream = cuda_stream(name, stream)?;
    // SAFETY: the caller's contract.
    unsafe { DeviceArray::from_raw(elem, &shape, ptr, Some(device), stream, !read_only) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cai(shape: &[i64], typestr: &str, strides: Option<Vec<i64>>) -> CudaArrayInterface {
        CudaArrayInterface {
            version: 3,
            data: (0x7f00_0000_0000, false),
            shape: shape.to_vec(),
            typestr: typestr.to_string(),
            strides,
            masked: false,
            stream: Some(1),
        }
    }

    // SAFETY (every `device_array` and `dlpack_device_array` below): nothing is launched and no
    // element is read; shapes and strides point into live vectors.

    #[test]
    fn type_strings_and_strides() {
        assert_eq!(typestr_elem("A", "<f4").unwrap(), Scalar::F32);
        assert_eq!(typestr_elem("A", "|V2").unwrap(), Scalar::BF16);
        let e = typestr_elem("A", ">f4").unwrap_err();
        assert_eq!(e.code(), "E0440");
        assert_eq!(
            e.to_string(),
            "argument `A` has dtype `>f4`, which kernels cannot take (supported: float32, float64, int32, \
             uint32, int64, float16, bfloat16)"
        );
        assert!(check_c_contiguous("A", &[2, 3], None, 4, HOST_COPY).is_ok());
        assert!(check_c_contiguous("A", &[2, 3], Some(&[12, 4]), 4, HOST_COPY).is_ok());
        // Extents of 1 may have any stride; empty arrays any strides.
        assert!(check_c_contiguous("A", &[1, 3], Some(&[0, 4]), 4, HOST_COPY).is_ok());
        assert!(check_c_contiguous("A", &[0, 3], Some(&[4, 8]), 4, HOST_COPY).is_ok());
        let e = check_c_contiguous("A", &[2, 3], Some(&[4, 8]), 4, DEVICE_COPY).unwrap_err();
        assert_eq!(e.code(), "E0440");
        assert_eq!(
            e.to_string(),
            "argument `A` is not C-contiguous (strides [4, 8] bytes for shape [2, 3]); pass a contiguous copy \
             of it (`.contiguous()` of a PyTorch tensor, cupy.ascontiguousarray(...))"
        );
        // Strides of another rank than the shape.
        assert_eq!(check_c_contiguous("A", &[2, 3], Some(&[4]), 4, HOST_COPY).unwrap_err().code(), "E0440");
    }

    #[test]
    fn cuda_array_interfaces() {
        let d = unsafe { cai(&[4, 3], "<f4", Some(vec![12, 4])).device_array("A", Some(1)) }.unwrap();
        assert_eq!((d.elem(), d.shape(), d.ptr()), (Scalar::F32, &[4u64, 3][..], 0x7f00_0000_0000));
        assert_eq!((d.device(), d.stream(), d.is_writable()), (Some(1), Some(1), true));
        let err = |c: CudaArrayInterface| unsafe { c.device_array("A", None) }.unwrap_err();
        let with = |f: &dyn Fn(&mut CudaArrayInterface)| {
            let mut c = cai(&[4, 3], "<f4", None);
            f(&mut c);
            c
        };
        // Version 2 (PyTorch's) is read; others are not.
        assert!(unsafe { with(&|c| c.version = 2).device_array("A", None) }.is_ok());
        let e = err(with(&|c| c.version = 1));
        assert_eq!(e.code(), "E0440");
        assert_eq!(
            e.to_string(),
            "argument `A` has a __cuda_array_interface__ of version 1; tilec reads versions 2 and 3"
        );
        assert!(err(with(&|c| c.masked = true)).to_string().contains("with a mask"));
        assert!(err(with(&|c| c.stream = Some(0)))
            .to_string()
            .contains("names CUDA stream 0, which the protocol disallows"));
        assert_eq!(err(with(&|c| c.shape = vec![4, -3])).code(), "E0440");
        assert_eq!(err(with(&|c| c.typestr = "<c8".into())).code(), "E0440");
        assert_eq!(err(cai(&[4, 3], "<f4", Some(vec![4, 16]))).code(), "E0440");
        // Types arrays may have but kernels do not take, and null or misaligned addresses.
        assert_eq!(err(with(&|c| c.typestr = "|b1".into())).code(), "E0406");
        assert_eq!(err(with(&|c| c.data = (0, false))).code(), "E0439");
        assert_eq!(err(with(&|c| c.data = (0x1002, false))).code(), "E0439");
        // An empty tensor may have a null address; read-only and no-stream entries are kept.
        let d =
            unsafe { with(&|c| (c.shape, c.data, c.stream) = (vec![0, 3], (0, true), None)).device_array("A", None) };
        let d = d.unwrap();
        assert!(d.is_empty() && !d.is_writable() && d.stream().is_none());
    }

    fn tensor(device_type: i32, dtype: DLDataType, shape: &[i64], strides: Option<&[i64]>) -> DLTensor {
        DLTensor {
            data: std::ptr::without_provenance_mut(0x7f00_0000_0000),
            device: DLDevice { device_type, device_id: 1 },
            ndim: shape.len() as i32,
            dtype,
            shape: shape.as_ptr(),
            strides: strides.map_or(std::ptr::null(), <[i64]>::as_ptr),
            byte_offset: 64,
        }
    }

    const F32: DLDataType = DLDataType { code: 2, bits: 32, lanes: 1 };

    #[test]
    fn dlpack_tensors() {
        let shape = [5i64, 2];
        let t = tensor(2, F32, &shape, Some(&[2, 1]));
        let d = unsafe { dlpack_device_array("X", &t, false, Some(1)) }.unwrap();
        assert_eq!((d.elem(), d.shape(), d.ptr()), (Scalar::F32, &[5u64, 2][..], 0x7f00_0000_0040));
        assert_eq!((d.device(), d.stream(), d.is_writable()), (Some(1), Some(1), true));
        let err = |t: &DLTensor| unsafe { dlpack_device_array("X", t, true, None) }.unwrap_err();
        // Strides in elements, checked as bytes.
        let e = err(&tensor(2, F32, &shape, Some(&[1, 5])));
        assert!(e.to_string().contains("strides [4, 20] bytes for shape [5, 2]"), "{e}");
        // Dtypes.
        let bf16 = DLDataType { code: 4, bits: 16, lanes: 1 };
        assert_eq!(
            unsafe { dlpack_device_array("X", &tensor(13, bf16, &shape, None), true, None) }.unwrap().elem(),
            Scalar::BF16
        );
        let e = err(&tensor(2, DLDataType { code: 5, bits: 64, lanes: 1 }, &shape, None));
        assert!(e.to_string().contains("has dtype `complex64`"), "{e}");
        let e = err(&tensor(2, DLDataType { code: 2, bits: 32, lanes: 4 }, &shape, None));
        assert!(e.to_string().contains("has dtype `float32x4`"), "{e}");
        // Devices: host memory is not for this path; ROCm is no device of tilec's.
        assert_eq!(err(&tensor(1, F32, &shape, None)).code(), "E0440");
        let e = err(&tensor(10, F32, &shape, None));
        assert_eq!(e.code(), "E0442");
        assert_eq!(
            e.to_string(),
            "argument `X` is in the memory of a ROCm device (DLPack device type 10), which tilec cannot use; \
             pass an array in host memory or in CUDA device memory"
        );
        // Malformed tensors.
        let mut t = tensor(2, F32, &shape, None);
        t.ndim = -1;
        assert_eq!(err(&t).code(), "E0440");
        t.ndim = 2;
        t.shape = std::ptr::null();
        assert_eq!(err(&t).code(), "E0440");
        assert_eq!(err(&tensor(2, F32, &[3, -1], None)).code(), "E0440");
        // A rank-0 tensor has no shape to read.
        let mut t = tensor(2, F32, &[], None);
        t.shape = std::ptr::null();
        assert_eq!(unsafe { dlpack_device_array("X", &t, true, None) }.unwrap().len(), 1);
    }

    #[test]
    fn dlpack_capsules_and_devices() {
        let shape = [3i64];
        let managed = DLManagedTensor {
            dl_tensor: tensor(2, F32, &shape, None),
            manager_ctx: std::ptr::null_mut(),
            deleter: None,
        };
        let p = (&managed as *const DLManagedTensor).cast();
        let (t, ro) = unsafe { dlpack_tensor("X", DLTENSOR, p) }.unwrap();
        assert_eq!((t.ndim, ro), (1, false));
        let mut versioned = DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: std::ptr::null_mut(),
            deleter: None,
            flags: DLPACK_FLAG_READ_ONLY,
            dl_tensor: tensor(2, F32, &shape, None),
        };
        let p = (&versioned as *const DLManagedTensorVersioned).cast();
        let (t, ro) = unsafe { dlpack_tensor("X", DLTENSOR_VERSIONED, p) }.unwrap();
        assert_eq!((t.ndim, ro), (1, true));
        versioned.version.major = 2;
        let p = (&versioned as *const DLManagedTensorVersioned).cast();
        assert_eq!(unsafe { dlpack_tensor("X", DLTENSOR_VERSIONED, p) }.unwrap_err().code(), "E0440");
        let e = unsafe { dlpack_tensor("X", c"used_dltensor", p) }.unwrap_err();
        assert!(e.to_string().contains("capsule named `used_dltensor`"), "{e}");
        let dev = |device_type, device_id| dlpack_memory("X", DLDevice { device_type, device_id });
        assert_eq!(dev(1, 0).unwrap(), Memory::Host);
        assert_eq!(dev(3, 0).unwrap(), Memory::Host);
        assert_eq!(dev(2, 3).unwrap(), Memory::Cuda(3));
        assert_eq!(dev(2, -1).unwrap_err().code(), "E0440");
        assert_eq!(dev(8, 0).unwrap_err().code(), "E0442");
        assert_eq!(dev(99, 0).unwrap_err().code(), "E0442");
        assert_eq!(cuda_stream("X", Some(-5)).unwrap_err().code(), "E0440");
        assert_eq!(cuda_stream("X", Some(2)).unwrap(), Some(2));
    }
}
