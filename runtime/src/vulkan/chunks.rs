//! Arrays larger than a storage buffer may be: [`VulkanDevice::chunking`] says how the shader
//! should bind them (a descriptor array of storage buffers, "chunks", at the array's binding),
//! and [`VulkanDevice::plan_arrays`] checks that a shader's chunks fit the bound arguments and
//! says which buffers every array gets.

use std::ops::Range;

use tilec_codegen_spirv::{Chunks, SpirvKernel};
use tilec_midend::{Kernel, ParamKind};

use super::device::VulkanDevice;
use super::resources::buffer_size;
use crate::array::HostArray;
use crate::bind::{ArgValue, Bound};
use crate::error::RunError;

/// How an array of `len` elements of `elem_bytes` bytes each is bound when storage buffers
/// hold at most `limit` bytes: `None` (one buffer) when it fits in one, else chunks of the
/// largest power of two of elements that fits in `limit`, as many as it takes.
pub(super) fn chunks_for(len: u64, elem_bytes: u64, limit: u64) -> Option<Chunks> {
    if buffer_size(len.saturating_mul(elem_bytes)) <= limit {
        return None;
    }
    let per = (limit / elem_bytes.max(1)).max(1);
    let log2 = per.ilog2();
    let count = len.div_ceil(1 << log2);
    Some(Chunks { log2: log2 as u8, count: u32::try_from(count).unwrap_or(u32::MAX) })
}

/// The buffers of one array argument: `count` chunks of `chunk_bytes` bytes each, the last
/// ones holding the rest (or nothing); a single buffer is one chunk of the whole array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ArrayPlan {
    /// The array's parameter index.
    pub(super) param: usize,
    pub(super) chunk_bytes: usize,
    pub(super) count: usize,
    /// Whether the shader binds it as a descriptor array (even of one chunk).
    pub(super) chunked: bool,
}

impl ArrayPlan {
    /// The bytes of chunk `j` in array data of `len` bytes (empty past its end).
    pub(super) fn range(&self, j: usize, len: usize) -> Range<usize> {
        let start = j.saturating_mul(self.chunk_bytes).min(len);
        let end = (j + 1).saturating_mul(self.chunk_bytes).min(len);
        start..end
    }
}

fn mismatch(detail: String) -> RunError {
    RunError::Mismatch { detail }
}

impl VulkanDevice {
    /// How every array parameter of `kernel` (in order) should be bound for the arguments in
    /// `bound`: `None` for one storage buffer when the array fits in one
    /// ([`VulkanDevice::max_storage_buffer_range`] bytes), else `Some` chunks of the largest
    /// power of two of elements that fits, as many as the array needs. Compile the shader
    /// with these (`tilec_codegen_spirv::compile_with`) before launching it on `bound`; chunks
    /// are indexed with constant descriptor indices in the shader, so they need no device feature.
    ///
    /// A parameter whose argument is not an array gets `None` (the launch reports it).
    pub fn chunking(&self, kernel: &Kernel, bound: &Bound) -> Vec<Option<Chunks>> {
        let limit = self.limits.max_storage_buffer_range as u64;
        kernel
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.kind, ParamKind::Array { .. }))
            .map(|(i, _)| match bound.args().get(i) {
                Some((_, ArgValue::Array(a))) => chunks_for(a.len() as u64, a.elem().bytes() as u64, limit),
                _ => None,
            })
            .collect()
    }

    /// The buffers of every array argument (in parameter order) for shader `k`, whose chunks
    /// must hold the arrays in `bound` (which passed `check_bound`).
    ///
    /// Errors: the shader binds an array that does not fit in one storage buffer as one, or
    /// its chunks are too large for a storage buffer or too few for the array (E0417); its arrays
    /// and chunks need more storage buffers than a shader may use (E0424).
    pub(super) fn plan_arrays(
        &self,
        k: &SpirvKernel,
        kernel: &Kernel,
        bound: &Bound,
    ) -> Result<Vec<ArrayPlan>, RunError> {
        let limit = self.limits.max_storage_buffer_range as u64;
        let arrays: Vec<(usize, &str, &HostArray)> = bound
            .args()
            .iter()
            .enumerate()
            .filter_map(|(i, (name, arg))| match arg {
                ArgValue::Array(a) => Some((i, name.as_str(), a)),
                // Device arrays are rejected before (`check_host_memory`).
                ArgValue::Device(_) | ArgValue::Scalar(_) => None,
            })
            .collect();
        if !k.chunks.is_empty() && k.chunks.len() != arrays.len() {
            return Err(mismatch(format!(
                "the SPIR-V shader has chunks for {} arrays, kernel `{}` has {} arrays",
                k.chunks.len(),
                kernel.symbol,
                arrays.len()
            )));
        }
        let chunks = |j: usize| k.chunks.get(j).copied().flatten();

        let mut plans = Vec::with_capacity(arrays.len());
        for (j, &(param, name, a)) in arrays.iter().enumerate() {
            let bytes = a.byte_len();
            let Some(c) = chunks(j) else {
                if buffer_size(bytes as u64) > limit {
                    return Err(mismatch(format!(
                        "the SPIR-V shader binds array `{name}` ({bytes} bytes) as one storage \
                         buffer, but Vulkan device `{}` allows at most {limit} bytes in one; \
                         compile it with the chunks of `VulkanDevice::chunking`",
                        self.name()
                    )));
                }
                plans.push(ArrayPlan { param, chunk_bytes: bytes, count: 1, chunked: false });
                continue;
            };
            let elems = 1u64.checked_shl(c.log2 as u32);
            let chunk_bytes = elems.and_then(|e| e.checked_mul(a.elem().bytes() as u64));
            let (elems, chunk_bytes) = match (elems, chunk_bytes) {
                (Some(e), Some(b)) if buffer_size(b) <= limit => (e, b),
                _ => {
                    return Err(mismatch(format!(
                        "the SPIR-V shader binds array `{name}` in chunks of 2^{} elements, \
                         more than Vulkan device `{}` allows in one storage buffer ({limit} \
                         bytes)",
                        c.log2,
                        self.name()
                    )))
                }
            };
            if c.count == 0 || (c.count as u64).saturating_mul(elems) < a.len() as u64 {
                return Err(mismatch(format!(
                    "the SPIR-V shader binds array `{name}` as {} chunks of {elems} elements, \
                     which do not hold its {} elements",
                    c.count,
                    a.len()
                )));
            }
            plans.push(ArrayPlan { param, chunk_bytes: chunk_bytes as usize, count: c.count as usize, chunked: true });
        }

        // The params buffer is one more.
        let buffers = plans.iter().map(|p| p.count as u64).sum::<u64>() + 1;
        if buffers > self.limits.max_storage_buffers as u64 {
            return Err(RunError::VulkanUnsupported {
                device: self.name().to_string(),
                reason: format!(
                    "kernel `{}` needs {buffers} storage buffers (one per array or chunk of an \
                     array, one for the parameters), but a shader may use only {}",
                    kernel.symbol, self.limits.max_storage_buffers
                ),
            });
        }
        Ok(plans)
    }
}
