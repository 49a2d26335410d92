//! The host side of the SPIR-V launch ABI: the 64-bit capabilities a shader declares; the
//! params words and the grid split are shared with the CUDA launcher (`crate::params`).

use crate::error::RunError;
pub(super) use crate::params::{check_bound, pack_params, params_words, plan_grid, Chunk, GridPlan};

fn mismatch(detail: impl Into<String>) -> RunError {
    RunError::Mismatch { detail: detail.into() }
}

/// The 64-bit types and 16-bit storage a SPIR-V module declares capabilities for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Uses {
    pub(super) f64: bool,
    pub(super) i64: bool,
    /// `StorageBuffer16BitAccess`: arrays of `f16` or `bf16`.
    pub(super) storage16: bool,
}

const SPIRV_MAGIC: u32 = 0x0723_0203;
const OP_CAPABILITY: u32 = 17;
const CAPABILITY_FLOAT64: u32 = 10;
const CAPABILITY_INT64: u32 = 11;
const CAPABILITY_STORAGE_BUFFER_16BIT: u32 = 4433;

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
                CAPABILITY_STORAGE_BUFFER_16BIT => uses.storage16 = true,
                _ => {}
            }
        }
        i += count;
    }
    Ok(uses)
}
