//! The host side of the launch ABI shared by the GPU launchers (Vulkan and CUDA): checking
//! that bound arguments fit a kernel and its params layout, the 32-bit words of the params
//! buffer (grid extents, program-id offsets of the dispatch, array extents, scalar values),
//! and the split of a grid into dispatches (launches) within a device's grid limits.

use tilec_midend::simt::{ParamsLayout, HEADER_WORDS};
use tilec_midend::{Const, Kernel, ParamKind, Scalar};

use crate::bind::{ArgValue, Bound};
use crate::error::RunError;

fn mismatch(detail: impl Into<String>) -> RunError {
    RunError::Mismatch { detail: detail.into() }
}

/// The bit pattern of a scalar argument: 32-bit types (and `bool`, as 0 or 1) in the low
/// word, 64-bit types in both.
fn scalar_bits(c: Const) -> u64 {
    match c {
        Const::Bool(b) => b as u64,
        Const::Int(v, Scalar::I32 | Scalar::U32) => v as u32 as u64,
        Const::Int(v, _) => v as u64,
        Const::Float(v, Scalar::F32) => (v as f32).to_bits() as u64,
        Const::Float(v, _) => v.to_bits(),
    }
}

/// Checks that `bound` holds arguments for `kernel` and that `layout` is its params layout
/// (error E0417 otherwise), and that every array fits the GPU's 32-bit indices (E0419).
pub(crate) fn check_bound(kernel: &Kernel, layout: &ParamsLayout, bound: &Bound) -> Result<(), RunError> {
    if bound.kernel_symbol() != kernel.symbol || bound.args().len() != kernel.params.len() {
        return Err(mismatch(format!(
            "arguments bound for kernel `{}` used with kernel `{}`",
            bound.kernel_symbol(),
            kernel.symbol
        )));
    }
    if *layout != ParamsLayout::of(kernel) {
        return Err(mismatch(format!("the compiled kernel's params layout is not that of kernel `{}`", kernel.symbol)));
    }
    for (p, (name, arg)) in kernel.params.iter().zip(bound.args()) {
        let fits = match (&p.kind, arg, arg.array_type()) {
            (ParamKind::Array { elem, dims, .. }, _, Some((actual, shape))) => {
                actual == *elem && shape.len() == dims.len()
            }
            (ParamKind::Scalar(s), ArgValue::Scalar(c), _) => c.ty() == *s,
            _ => false,
        };
        if !fits || *name != p.name {
            return Err(mismatch(format!(
                "argument `{name}` does not fit parameter `{}` of kernel `{}`",
                p.name, kernel.symbol
            )));
        }
        if let Some((_, shape)) = arg.array_type() {
            gpu_indexable(name, shape)?;
        }
    }
    Ok(())
}

/// Checks that an array of `shape` can be addressed by the GPU targets, whose element indices
/// are 32-bit (`docs/ir.md` §10): at most `i32::MAX` elements. Error E0419 otherwise, before
/// anything is launched (an index would wrap to a wrong address).
pub(crate) fn gpu_indexable(name: &str, shape: &[u64]) -> Result<(), RunError> {
    let elements = shape.iter().try_fold(1u64, |n, d| n.checked_mul(*d)).unwrap_or(u64::MAX);
    if elements > i32::MAX as u64 {
        return Err(RunError::GpuArrayTooLarge { name: name.to_string(), elements });
    }
    Ok(())
}

/// The params buffer of a launch over `grid` (extents `>= 1`, at most `i32::MAX`): the grid,
/// zero program-id offsets (words 3..6, set per dispatch), then every parameter's extents or
/// value at its layout offset. `bound` must have passed [`check_bound`].
pub(crate) fn params_words(layout: &ParamsLayout, bound: &Bound, grid: [u32; 3]) -> Vec<u32> {
    let mut w = vec![0u32; layout.words.max(HEADER_WORDS) as usize];
    w[..3].copy_from_slice(&grid);
    for ((_, arg), &off) in bound.args().iter().zip(&layout.offsets) {
        let off = off as usize;
        if let ArgValue::Scalar(c) = arg {
            let bits = scalar_bits(*c);
            w[off] = bits as u32;
            if c.ty().bytes() == 8 {
                w[off + 1] = (bits >> 32) as u32;
            }
        } else if let Some((_, shape)) = arg.array_type() {
            for (j, &d) in shape.iter().enumerate() {
                // Extents are at most `i32::MAX` (checked by `bind`).
                w[off + j] = d as u32;
            }
        }
    }
    w
}

/// One dispatch of a split grid: its first program id and its workgroup count per axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub(crate) offset: [u32; 3],
    pub(crate) count: [u32; 3],
}

/// At most this many dispatches per launch (a larger split means absurd limits or grids).
pub(crate) const MAX_DISPATCHES: usize = 1 << 18;

/// Splits `grid` (extents `>= 1`) into dispatches of at most `max[axis]` workgroups per
/// axis, axis 0 fastest. `None` when that takes more than [`MAX_DISPATCHES`].
pub(crate) fn split_grid(grid: [u32; 3], max: [u32; 3]) -> Option<Vec<Chunk>> {
    let max = max.map(|m| m.max(1));
    let pieces = |a: usize| grid[a].div_ceil(max[a]) as usize;
    let total = pieces(0).checked_mul(pieces(1))?.checked_mul(pieces(2))?;
    if total > MAX_DISPATCHES {
        return None;
    }
    let starts = |a: usize| (0..grid[a]).step_by(max[a] as usize);
    let mut chunks = Vec::with_capacity(total);
    for z in starts(2) {
        for y in starts(1) {
            for x in starts(0) {
                let offset = [x, y, z];
                let count = [0, 1, 2].map(|a| (grid[a] - offset[a]).min(max[a]));
                chunks.push(Chunk { offset, count });
            }
        }
    }
    Some(chunks)
}

/// A non-empty grid and its dispatches.
pub(crate) struct GridPlan {
    pub(crate) grid: [u32; 3],
    pub(crate) chunks: Vec<Chunk>,
}

/// The dispatches of a launch over `grid` within `max` programs per axis: `None` for an empty
/// grid (nothing runs), else the grid as `u32`s and its split ([`split_grid`]). Error E0416
/// for an extent above `i32::MAX` or a split into more than [`MAX_DISPATCHES`].
pub(crate) fn plan_grid(grid: [i64; 3], max: [u32; 3]) -> Result<Option<GridPlan>, RunError> {
    if grid.iter().any(|&g| g > i32::MAX as i64) {
        return Err(RunError::GridTooLarge { grid });
    }
    if grid.iter().any(|&g| g <= 0) {
        return Ok(None);
    }
    let grid32 = grid.map(|g| g as u32);
    let chunks = split_grid(grid32, max).ok_or(RunError::GridTooLarge { grid })?;
    Ok(Some(GridPlan { grid: grid32, chunks }))
}

/// The params buffer of a split launch: for every chunk, the `words` with the chunk's
/// program-id offsets in words 3..6, little-endian, each region starting at a multiple of
/// `align` bytes. Returns the bytes and the stride between regions.
pub(crate) fn pack_params(words: &[u32], chunks: &[Chunk], align: usize) -> (Vec<u8>, usize) {
    let stride = (words.len().max(HEADER_WORDS as usize) * 4).next_multiple_of(align);
    let mut bytes = vec![0u8; stride * chunks.len()];
    for (c, chunk) in chunks.iter().enumerate() {
        let region = &mut bytes[c * stride..(c + 1) * stride];
        for (j, &w) in words.iter().enumerate() {
            let w = if (3..6).contains(&j) { chunk.offset[j - 3] } else { w };
            region[4 * j..4 * j + 4].copy_from_slice(&w.to_le_bytes());
        }
    }
    (bytes, stride)
}
