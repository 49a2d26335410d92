//! [`HostArray`]: a row-major array in host memory with 8-byte aligned storage, as kernels
//! read and write it.

use tilec_midend::Scalar;

use crate::error::RunError;

// Array bytes are the host's native representation and `.npy` files are read and written
// little-endian without conversion.
#[cfg(target_endian = "big")]
compile_error!("tilec-runtime supports little-endian hosts only");

/// A dense row-major (C order) array of `f32`, `f64` or `i32` elements in host memory.
///
/// The elements are either owned (8-byte aligned storage) or borrowed from the caller's memory
/// ([`HostArray::from_raw`], how NumPy arrays and Rust slices are passed without copies). Either
/// way the data is aligned to its element size, so typed views and kernel pointers are aligned,
/// and the shape and the element count always agree. A clone owns a copy of the elements.
#[derive(Debug)]
pub struct HostArray {
    elem: Scalar,
    shape: Vec<u64>,
    len: usize,
    storage: Storage,
}

/// Where the elements of a [`HostArray`] live.
#[derive(Debug)]
enum Storage {
    Owned(Vec<u64>),
    /// Memory of the caller of [`HostArray::from_raw`]: `byte_len` bytes at `ptr`, written
    /// only when `writable`.
    Borrowed {
        ptr: std::ptr::NonNull<u8>,
        writable: bool,
    },
}

// SAFETY: owned storage is a `Vec`; borrowed storage is, by the contract of
// `HostArray::from_raw`, memory that the array may read (and, when writable, write) exclusively
// for as long as it lives, from any thread, like a `&mut [u8]`.
unsafe impl Send for HostArray {}
unsafe impl Sync for HostArray {}

impl Clone for HostArray {
    /// An owned copy of the elements, also of a borrowed array.
    fn clone(&self) -> HostArray {
        let n = self.byte_len().div_ceil(8);
        let mut words = zeroed_words(n).unwrap_or_else(|| {
            std::alloc::handle_alloc_error(std::alloc::Layout::array::<u64>(n).expect("the original's size"))
        });
        // SAFETY: `words` has at least `byte_len` bytes, `bytes()` has exactly that many, and
        // a fresh allocation does not overlap them.
        unsafe { std::ptr::copy_nonoverlapping(self.as_ptr(), words.as_mut_ptr() as *mut u8, self.byte_len()) };
        HostArray { elem: self.elem, shape: self.shape.clone(), len: self.len, storage: Storage::Owned(words) }
    }
}

impl PartialEq for HostArray {
    /// Same element type, shape and bytes (wherever the elements live).
    fn eq(&self, other: &HostArray) -> bool {
        self.elem == other.elem && self.shape == other.shape && self.bytes() == other.bytes()
    }
}

/// Number of elements of `shape`, if it is addressable with elements of `elem_bytes` bytes.
fn element_count(shape: &[u64], elem_bytes: usize) -> Option<usize> {
    let n = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))?;
    let n = usize::try_from(n).ok()?;
    let bytes = n.checked_mul(elem_bytes)?;
    (bytes <= isize::MAX as usize).then_some(n)
}

/// Arrays of at least this many bytes ask for transparent huge pages ([`huge_pages`]).
const HUGE_PAGE_BYTES: usize = 4 << 20;

/// Asks Linux to back the `bytes` at `ptr` (a fresh allocation) with transparent huge pages, as
/// NumPy does for arrays of 4 MiB and more: streaming kernels then miss the TLB once per 2 MiB
/// instead of once per 4 KiB (10-30% on 64 MiB row kernels with LLVM on a 2-core VM whose THP
/// mode is `madvise`, in the commit that added this). Advice only: where the kernel declines,
/// or on other systems, nothing changes.
fn huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_PAGE_BYTES {
        // madvise wants a page-aligned start: skip to the next 4 KiB boundary.
        let offset = (ptr as usize).next_multiple_of(4096) - ptr as usize;
        // SAFETY: the range starts inside the allocation of `bytes` bytes at `ptr` (offset <
        // 4096 <= bytes) and ends at its end (madvise rounds that up to the page's end, which
        // the allocation's page holds); MADV_HUGEPAGE sets flags on the mapping, changes no
        // contents and unmaps nothing.
        unsafe { libc::madvise(ptr.add(offset) as *mut libc::c_void, bytes - offset, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes, HUGE_PAGE_BYTES);
}

/// `n` zero words, or `None` when the allocation fails (instead of aborting, as `vec!` does).
/// Zeroed memory comes from `alloc_zeroed`, so large arrays cost no page writes until used;
/// from 4 MiB on it asks for huge pages ([`huge_pages`]).
fn zeroed_words(n: usize) -> Option<Vec<u64>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(n).ok()?;
    // SAFETY: `layout` has a non-zero size (n > 0). The pointer, when not null, is an
    // allocation of the global allocator with `Vec<u64>`'s layout for capacity `n`, and
    // `alloc_zeroed` initialized all `n` words (zero is a valid u64).
    unsafe {
        let ptr = std::alloc::alloc_zeroed(layout) as *mut u64;
        if ptr.is_null() {
            return None;
        }
        huge_pages(ptr as *mut u8, n * 8);
        Some(Vec::from_raw_parts(ptr, n, n))
    }
}

fn check_elem(elem: Scalar) -> Result<(), RunError> {
    match elem {
        Scalar::F32 | Scalar::F64 | Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::F16 | Scalar::BF16 => Ok(()),
        _ => Err(RunError::UnsupportedElem { elem }),
    }
}

/// The element count of an array of `elem` over `shape`. Errors: `elem` is not a type kernels
/// take in arrays (E0406); the shape has more elements than memory can address (E0405).
fn checked_len(elem: Scalar, shape: &[u64]) -> Result<usize, RunError> {
    check_elem(elem)?;
    element_count(shape, elem.bytes() as usize).ok_or_else(|| RunError::DataLength {
        shape: shape.to_vec(),
        expected: None,
        actual: 0,
    })
}

impl HostArray {
    /// A zero-filled array. Errors: `elem` is `bool` (E0406); the shape has more
    /// elements than memory can address, or the allocation fails (E0405): this never aborts
    /// the process on a shape too large for the machine.
    pub fn zeros(elem: Scalar, shape: &[u64]) -> Result<HostArray, RunError> {
        let len = checked_len(elem, shape)?;
        let esize = elem.bytes() as usize;
        let too_large = || RunError::DataLength { shape: shape.to_vec(), expected: None, actual: 0 };
        let words = zeroed_words((len * esize).div_ceil(8)).ok_or_else(too_large)?;
        Ok(HostArray { elem, shape: shape.to_vec(), len, storage: Storage::Owned(words) })
    }

    /// An array over `shape` elements of `elem` at `ptr`, in the caller's memory: no copy is
    /// made, kernels read (and, for `mut` parameters, write) that memory directly.
    ///
    /// Errors: `elem` is not f32, f64 or i32 (E0406); the shape has more elements than memory
    /// can address (E0405); `ptr` is null or not aligned to the element size (E0439).
    ///
    /// # Safety
    ///
    /// `ptr` must point to `shape`'s element count times `elem`'s size readable bytes, holding
    /// the elements in row-major order, that stay valid for the array's lifetime; while the
    /// array lives nothing else may write them, and when `writable` nothing else may read or
    /// write them (kernels write a `writable` array in place).
    pub unsafe fn from_raw(elem: Scalar, shape: &[u64], ptr: *mut u8, writable: bool) -> Result<HostArray, RunError> {
        let len = checked_len(elem, shape)?;
        let esize = elem.bytes() as usize;
        let ptr = std::ptr::NonNull::new(ptr)
            .filter(|p| (p.as_ptr() as usize).is_multiple_of(esize))
            .ok_or(RunError::Misaligned { address: ptr as usize as u64, align: esize as u32, arg: None })?;
        Ok(HostArray { elem, shape: shape.to_vec(), len, storage: Storage::Borrowed { ptr, writable } })
    }

    /// Whether kernels may write the elements: always for owned arrays, for borrowed ones
    /// when [`HostArray::from_raw`] said so. A read-only array cannot be bound to a `mut`
    /// parameter (E0437).
    pub fn is_writable(&self) -> bool {
        match self.storage {
            Storage::Owned(_) => true,
            Storage::Borrowed { writable, .. } => writable,
        }
    }

    /// Whether the elements are borrowed from the caller's memory ([`HostArray::from_raw`]).
    pub fn is_borrowed(&self) -> bool {
        matches!(self.storage, Storage::Borrowed { .. })
    }

    /// The address range of the elements, `start..end` (empty for an empty array).
    pub fn address_range(&self) -> std::ops::Range<usize> {
        let start = self.as_ptr() as usize;
        start..start + self.byte_len()
    }

    /// Makes a read-only borrowed array an owned copy, so that it may be written.
    fn make_writable(&mut self) {
        if !self.is_writable() {
            *self = self.clone();
        }
    }

    fn from_slice<T: Copy>(elem: Scalar, data: &[T], shape: &[u64]) -> Result<HostArray, RunError> {
        let mut a = HostArray::zeros(elem, shape).map_err(|e| match e {
            RunError::DataLength { shape, expected, .. } => {
                RunError::DataLength { shape, expected, actual: data.len() as u64 }
            }
            e => e,
        })?;
        if a.len != data.len() {
            return Err(RunError::DataLength {
                shape: shape.to_vec(),
                expected: Some(a.len as u64),
                actual: data.len() as u64,
            });
        }
        // SAFETY: `a` holds `len` elements of `size_of::<T>()` bytes (T matches `elem`) in
        // 8-byte aligned storage, and `data` has `len` elements.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), a.as_mut_ptr() as *mut T, data.len());
        }
        Ok(a)
    }

    /// An `f32` array of `shape` holding `data` (row-major). Error E0405 when the lengths differ.
    pub fn from_f32(data: &[f32], shape: &[u64]) -> Result<HostArray, RunError> {
        HostArray::from_slice(Scalar::F32, data, shape)
    }

    /// An `f64` array of `shape` holding `data` (row-major). Error E0405 when the lengths differ.
    pub fn from_f64(data: &[f64], shape: &[u64]) -> Result<HostArray, RunError> {
        HostArray::from_slice(Scalar::F64, data, shape)
    }

    /// An `i32` array of `shape` holding `data` (row-major). Error E0405 when the lengths differ.
    pub fn from_i32(data: &[i32], shape: &[u64]) -> Result<HostArray, RunError> {
        HostArray::from_slice(Scalar::I32, data, shape)
    }

    /// An array of element type `elem` converted from `f64` values: rounded to nearest for
    /// `f32`, truncated toward zero (saturating) for `i32`, `u32` and `i64`. Errors as [`HostArray::zeros`] and
    /// E0405 when the lengths differ.
    pub fn from_f64_as(elem: Scalar, data: &[f64], shape: &[u64]) -> Result<HostArray, RunError> {
        match elem {
            Scalar::F32 => {
                let v: Vec<f32> = data.iter().map(|&x| x as f32).collect();
                HostArray::from_f32(&v, shape)
            }
            Scalar::I32 => {
                let v: Vec<i32> = data.iter().map(|&x| x as i32).collect();
                HostArray::from_i32(&v, shape)
            }
            Scalar::F64 => HostArray::from_f64(data, shape),
            Scalar::U32 => {
                let v: Vec<u32> = data.iter().map(|&x| x as u32).collect();
                HostArray::from_slice(elem, &v, shape)
            }
            Scalar::I64 => {
                let v: Vec<i64> = data.iter().map(|&x| x as i64).collect();
                HostArray::from_slice(elem, &v, shape)
            }
            Scalar::F16 | Scalar::BF16 => {
                let v: Vec<u16> = data.iter().map(|&x| tilec_midend::half::narrow(elem, x as f32)).collect();
                HostArray::from_slice(elem, &v, shape)
            }
            _ => Err(RunError::UnsupportedElem { elem }),
        }
    }

    /// The element type (f32, f64 or i32).
    pub fn elem(&self) -> Scalar {
        self.elem
    }

    /// The extents, outermost first.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the data in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * self.elem.bytes() as usize
    }

    /// The data as raw little-endian bytes, row-major.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the storage holds at least `byte_len` initialized bytes (owned words, or the
        // caller's memory by the contract of `from_raw`); u8 has alignment 1.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.byte_len()) }
    }

    /// The data as mutable raw little-endian bytes, row-major. A read-only borrowed array
    /// becomes an owned copy first: the caller's memory is never written through it.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.byte_len();
        // SAFETY: as in `bytes`, the storage is writable (`as_mut_ptr`), and `&mut self` gives
        // exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), n) }
    }

    /// Pointer to the first element, aligned to the element size (8 bytes for owned storage;
    /// dangling but aligned when empty).
    pub fn as_ptr(&self) -> *const u8 {
        match &self.storage {
            Storage::Owned(words) => words.as_ptr() as *const u8,
            Storage::Borrowed { ptr, .. } => ptr.as_ptr(),
        }
    }

    /// Mutable pointer to the first element, as [`HostArray::as_ptr`]. A read-only borrowed
    /// array becomes an owned copy first (so the pointer may be written through).
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.make_writable();
        match &mut self.storage {
            Storage::Owned(words) => words.as_mut_ptr() as *mut u8,
            Storage::Borrowed { ptr, .. } => ptr.as_ptr(),
        }
    }

    fn view<T>(&self, elem: Scalar) -> Option<&[T]> {
        // SAFETY: `elem` matches T, the storage is aligned to T's size (8 bytes owned,
        // checked by `from_raw` borrowed) and holds `len` initialized elements; every bit
        // pattern is a valid f32, f64 or i32.
        (self.elem == elem).then(|| unsafe { std::slice::from_raw_parts(self.as_ptr() as *const T, self.len) })
    }

    fn view_mut<T>(&mut self, elem: Scalar) -> Option<&mut [T]> {
        let len = self.len;
        // SAFETY: as in `view`, the storage is writable, and `&mut self` gives exclusive access.
        (self.elem == elem).then(|| unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr() as *mut T, len) })
    }

    /// The elements, if the array is `f32`.
    pub fn as_f32(&self) -> Option<&[f32]> {
        self.view(Scalar::F32)
    }

    /// The elements, if the array is `f64`.
    pub fn as_f64(&self) -> Option<&[f64]> {
        self.view(Scalar::F64)
    }

    /// The elements, if the array is `i32`.
    pub fn as_i32(&self) -> Option<&[i32]> {
        self.view(Scalar::I32)
    }

    /// The elements, mutably, if the array is `f32`.
    pub fn as_f32_mut(&mut self) -> Option<&mut [f32]> {
        self.view_mut(Scalar::F32)
    }

    /// The elements, mutably, if the array is `f64`.
    pub fn as_f64_mut(&mut self) -> Option<&mut [f64]> {
        self.view_mut(Scalar::F64)
    }

    /// The elements, mutably, if the array is `i32`.
    pub fn as_i32_mut(&mut self) -> Option<&mut [i32]> {
        self.view_mut(Scalar::I32)
    }

    /// The elements converted to `f64` (exact for every element type, `i64` up to 2^53).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        if self.elem.is_half() {
            let b = self.bytes();
            b.chunks_exact(2).map(|c| tilec_midend::half::widen(self.elem, u16::from_le_bytes([c[0], c[1]]))).collect()
        } else if let Some(v) = self.as_f32() {
            v.iter().map(|&x| x as f64).collect()
        } else if let Some(v) = self.as_i32() {
            v.iter().map(|&x| x as f64).collect()
        } else if self.elem == Scalar::U32 {
            self.bytes().chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect()
        } else if self.elem == Scalar::I64 {
            self.bytes().chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64).collect()
        } else {
            self.as_f64().map(<[f64]>::to_vec).unwrap_or_default()
        }
    }
}

/// A dense row-major (C order) array in the memory of a CUDA device, owned by the caller (a
/// PyTorch or CuPy tensor, memory of the caller's own CUDA code).
///
/// Only the CUDA launcher uses it: kernels get its address as it is, with no copy, and write
/// `mut` parameters in place, in order with the work of the array's stream. Nothing on the
/// host reads or writes its elements (the CPU and Vulkan launchers reject it with E0442). A
/// clone describes the same memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceArray {
    elem: Scalar,
    shape: Vec<u64>,
    len: usize,
    ptr: u64,
    device: Option<usize>,
    stream: Option<u64>,
    writable: bool,
}

impl DeviceArray {
    /// An array over `shape` elements of `elem` at device address `ptr` on CUDA device
    /// `device` (`None`: the producer does not say; the launcher asks the driver).
    ///
    /// `stream` orders the launch after the producer's work: `None` when that work is
    /// complete (no ordering needed), else a `CUstream` handle value: 0 (the NULL stream) or 1
    /// (`CU_STREAM_LEGACY`) for the legacy default stream, 2 (`CU_STREAM_PER_THREAD`) for the
    /// per-thread default stream, any other value a stream the producer created. Kernels run
    /// on that stream.
    ///
    /// Errors: `elem` is not f32, f64, i32, f16 or bf16 (E0406); the shape has more elements
    /// than 64-bit addresses reach (E0405); `ptr` is null while the array has elements, or is
    /// not aligned to the element size (E0439).
    ///
    /// # Safety
    ///
    /// For as long as the array (or a clone) is passed to launches: `ptr` must point to
    /// `shape`'s element count times `elem`'s size bytes of memory that kernels on `device`
    /// can read, holding the elements in row-major order, and writable when `writable`; while
    /// a launch runs, nothing else may write them, and when `writable` nothing else may read
    /// them; `stream`, when given, must be a valid stream of that device's primary context
    /// (or one of the special handles above).
    pub unsafe fn from_raw(
        elem: Scalar,
        shape: &[u64],
        ptr: u64,
        device: Option<usize>,
        stream: Option<u64>,
        writable: bool,
    ) -> Result<DeviceArray, RunError> {
        let len = checked_len(elem, shape)?;
        let esize = elem.bytes() as usize;
        // Empty tensors may have a null address (PyTorch's); kernels never index them.
        if (ptr == 0 && len > 0) || !ptr.is_multiple_of(esize as u64) {
            return Err(RunError::Misaligned { address: ptr, align: esize as u32, arg: None });
        }
        Ok(DeviceArray { elem, shape: shape.to_vec(), len, ptr, device, stream, writable })
    }

    /// The element type.
    pub fn elem(&self) -> Scalar {
        self.elem
    }

    /// The extents, outermost first.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }

    /// Number of elements (the product of the shape).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the data in bytes.
    pub fn byte_len(&self) -> usize {
        self.len * self.elem.bytes() as usize
    }

    /// The device address of the first element (0 only for an empty array).
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The device address range of the elements, `start..end`.
    pub fn address_range(&self) -> std::ops::Range<u64> {
        self.ptr..self.ptr + self.byte_len() as u64
    }

    /// The CUDA device the producer says the memory is on, if it says.
    pub fn device(&self) -> Option<usize> {
        self.device
    }

    /// The stream that orders the launch after the producer's work (`None`: none needed);
    /// see [`DeviceArray::from_raw`].
    pub fn stream(&self) -> Option<u64> {
        self.stream
    }

    /// Whether kernels may write the elements (a `mut` parameter needs it: E0437).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Error E0443: argument `name`, on CUDA device `device`, is passed to a kernel that runs
    /// on CUDA device `kernel_device`.
    pub fn on_other_device(name: &str, device: usize, kernel_device: usize) -> RunError {
        RunError::CudaMemory {
            name: name.to_string(),
            detail: format!(
                "is on CUDA device {device}, but the kernel runs on CUDA device {kernel_device}; run it \
                 on device {device} (tilec.compile(..., target=\"cuda\", device={device}))"
            ),
        }
    }

    /// Error E0442: this array, argument `name`, is passed to a kernel that runs on `target`
    /// (`"cpu"`, `"vulkan"`), whose launcher cannot read CUDA device memory.
    pub fn unreadable_on(&self, name: &str, target: &'static str) -> RunError {
        RunError::ArrayMemory { name: name.to_string(), memory: self.memory_text(), target: Some(target) }
    }

    /// The memory as error messages name it: `CUDA device memory (device 1)`.
    pub fn memory_text(&self) -> String {
        match self.device {
            Some(d) => format!("CUDA device memory (device {d})"),
            None => "CUDA device memory".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_and_views() {
        let a = HostArray::from_f32(&[1.0, 2.5, -3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a.len(), 6);
        assert_eq!(a.byte_len(), 24);
        assert_eq!(a.as_ptr() as usize % 8, 0);
        assert_eq!(a.to_f64_vec(), vec![1.0, 2.5, -3.0, 4.0, 5.0, 6.0]);
        assert_eq!(&a.bytes()[4..8], &2.5f32.to_le_bytes());
        assert!(a.as_f64().is_none());
        let b = HostArray::from_f64_as(Scalar::I32, &[1.9, -1.9, 7.0], &[3]).unwrap();
        assert_eq!(b.as_i32(), Some(&[1, -1, 7][..]));
        let e = HostArray::zeros(Scalar::F64, &[0, 5]).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.as_ptr() as usize % 8, 0);
    }

    #[test]
    fn constructor_errors() {
        let e = HostArray::from_f64(&[1.0, 2.0], &[3]).unwrap_err();
        assert_eq!(e.code(), "E0405");
        assert_eq!(e.to_string(), "an array of shape [3] needs 3 elements, 2 given");
        let e = HostArray::zeros(Scalar::F32, &[u64::MAX, 2]).unwrap_err();
        assert_eq!(e.code(), "E0405");
        let e = HostArray::zeros(Scalar::Bool, &[1]).unwrap_err();
        assert_eq!(e.code(), "E0406");
    }

    #[test]
    fn device_arrays_are_described_not_read() {
        // SAFETY: nothing is launched with these arrays; the addresses are never dereferenced.
        let raw = |elem, shape: &[u64], ptr| unsafe { DeviceArray::from_raw(elem, shape, ptr, Some(1), Some(7), true) };
        let a = raw(Scalar::F32, &[2, 3], 0x7f00_0000_0100).unwrap();
        assert_eq!((a.len(), a.byte_len(), a.shape()), (6, 24, &[2u64, 3][..]));
        assert_eq!(a.address_range(), 0x7f00_0000_0100..0x7f00_0000_0118);
        assert_eq!((a.device(), a.stream(), a.is_writable()), (Some(1), Some(7), true));
        assert_eq!(a.memory_text(), "CUDA device memory (device 1)");
        // An empty tensor may have a null address; a non-empty one may not.
        assert!(raw(Scalar::F64, &[0, 4], 0).unwrap().is_empty());
        let e = raw(Scalar::F64, &[1], 0).unwrap_err();
        assert_eq!(e.code(), "E0439");
        let e = raw(Scalar::F64, &[1], 0x1004).unwrap_err();
        assert_eq!(e.to_string(), "array memory at address 0x1004 is not aligned to its element size (8 bytes)");
        assert_eq!(raw(Scalar::Bool, &[1], 0x1000).unwrap_err().code(), "E0406");
        assert_eq!(raw(Scalar::F32, &[u64::MAX, 4], 0x1000).unwrap_err().code(), "E0405");
    }
}
