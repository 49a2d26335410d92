//! The host side of the SPIR-V launch ABI: the words of the params buffer, the split of a
//! grid into dispatches within the device's workgroup-count limits, and the 64-bit
//! capabilities a shader declares.

use tilec_codegen_spirv::{ParamsLayout, HEADER_WORDS};
use tilec_midend::{Const, Kernel, ParamKind, Scalar};

use crate::bind::{ArgValue, Bound};
use crate::error::RunError;

fn mismatch(detail: impl Into<String>) -> RunError {
    RunError::Mismatch {
        detail: detail.into(),
    }
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

/// Checks that `bound` holds arguments for `kernel` and that `layout` is its params layout.
/// Error E0417 otherwise.
pub(super) fn check_bound(
    kernel: &Kernel,
    layout: &ParamsLayout,
    bound: &Bound,
) -> Result<(), RunError> {
    if bound.kernel_symbol() != kernel.symbol || bound.args().len() != kernel.params.len() {
        return Err(mismatch(format!(
            "arguments bound for kernel `{}` used with kernel `{}`",
            bound.kernel_symbol(),
            kernel.symbol
        )));
    }
    if *layout != ParamsLayout::of(kernel) {
        return Err(mismatch(format!(
            "the SPIR-V shader's params layout is not that of kernel `{}`",
            kernel.symbol
        )));
    }
    for (p, (name, arg)) in kernel.params.iter().zip(bound.args()) {
        let fits = match (&p.kind, arg) {
            (ParamKind::Array { elem, dims, .. }, ArgValue::Array(a)) => {
                a.elem() == *elem && a.shape().len() == dims.len()
            }
            (ParamKind::Scalar(s), ArgValue::Scalar(c)) => c.ty() == *s,
            _ => false,
        };
        if !fits || *name != p.name {
            return Err(mismatch(format!(
                "argument `{name}` does not fit parameter `{}` of kernel `{}`",
                p.name, kernel.symbol
            )));
        }
    }
    Ok(())
}

/// The params buffer of a launch over `grid` (extents `>= 1`, at most `i32::MAX`): the grid,
/// zero program-id offsets (words 3..6, set per dispatch), then every parameter's extents or
/// value at its layout offset. `bound` must have passed [`check_bound`].
pub(super) fn params_words(layout: &ParamsLayout, bound: &Bound, grid: [u32; 3]) -> Vec<u32> {
    let mut w = vec![0u32; layout.words.max(HEADER_WORDS) as usize];
    w[..3].copy_from_slice(&grid);
    for ((_, arg), &off) in bound.args().iter().zip(&layout.offsets) {
        let off = off as usize;
        match arg {
            ArgValue::Array(a) => {
                for (j, &d) in a.shape().iter().enumerate() {
                    // Extents are at most `i32::MAX` (checked by `bind`).
                    w[off + j] = d as u32;
                }
            }
            ArgValue::Scalar(c) => {
                let bits = scalar_bits(*c);
                w[off] = bits as u32;
                if c.ty().bytes() == 8 {
                    w[off + 1] = (bits >> 32) as u32;
                }
            }
        }
    }
    w
}

/// One dispatch of a split grid: its first program id and its workgroup count per axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chunk {
    pub(super) offset: [u32; 3],
    pub(super) count: [u32; 3],
}

/// At most this many dispatches per launch (a larger split means absurd limits or grids).
pub(super) const MAX_DISPATCHES: usize = 1 << 18;

/// Splits `grid` (extents `>= 1`) into dispatches of at most `max[axis]` workgroups per
/// axis, axis 0 fastest. `None` when that takes more than [`MAX_DISPATCHES`].
pub(super) fn split_grid(grid: [u32; 3], max: [u32; 3]) -> Option<Vec<Chunk>> {
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

/// The 64-bit types a SPIR-V module declares capabilities for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Uses {
    pub(super) f64: bool,
    pub(super) i64: bool,
}

const SPIRV_MAGIC: u32 = 0x0723_0203;
const OP_CAPABILITY: u32 = 17;
const CAPABILITY_FLOAT64: u32 = 10;
const CAPABILITY_INT64: u32 = 11;

/// Reads the `OpCapability` instructions of a SPIR-V module. Error E0417 when the words are
/// not a SPIR-V module (drivers need not check).
pub(super) fn module_uses(words: &[u32]) -> Result<Uses, RunError> {
    if words.len() < 5 || words[0] != SPIRV_MAGIC {
        return Err(mismatch("the shader is not a SPIR-V module"));
    }
    let mut uses = Uses::default();
    let mut i = 5;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let opcode = words[i] & 0xffff;
        if count == 0 || i + count > words.len() {
            return Err(mismatch("the shader is not a valid SPIR-V module"));
        }
        if opcode == OP_CAPABILITY && count == 2 {
            match words[i + 1] {
                CAPABILITY_FLOAT64 => uses.f64 = true,
                CAPABILITY_INT64 => uses.i64 = true,
                _ => {}
            }
        }
        i += count;
    }
    Ok(uses)
}
