//! The SPIR-V backend of tilec: SPIR-V 1.3 compute shaders for Vulkan 1.1 (subgroup
//! shuffles), generated with rspirv from the SIMT form of a kernel.
//!
//! # Launch ABI
//! One workgroup runs one program of the grid and has exactly `lanes` invocations (the
//! subgroup size the SIMT form was lowered for: one subgroup per workgroup). Descriptor set 0:
//! - binding `i` for the `i`-th array parameter (in declaration order): a storage buffer
//!   holding the array's elements, row-major, tightly packed;
//! - binding `arrays` (one past the last array): a read-only storage buffer of 32-bit words,
//!   the [`ParamsLayout`]: grid extents (3 words), program-id offsets of this dispatch (3 words,
//!   so a large grid can be split into several dispatches), then for every parameter in order
//!   its array extents (one `i32` word each) or its scalar value (one word for 32-bit types,
//!   two little-endian words for 64-bit ones).
//!
//! The workgroup count of a dispatch is the part of the grid it covers.

mod body;
mod control;
mod memory;
mod module;

pub use module::compile;

use std::fmt;
use tilec_midend::{Kernel, ParamKind};

/// Why SPIR-V generation failed: an operation or type the Vulkan target does not support.
#[derive(Debug, Clone, PartialEq)]
pub struct SpirvError {
    pub message: String,
}

impl fmt::Display for SpirvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SPIR-V generation failed: {}", self.message)
    }
}

impl std::error::Error for SpirvError {}

pub(crate) fn err(m: impl Into<String>) -> SpirvError {
    SpirvError { message: m.into() }
}

/// A compiled compute shader and what its launch needs.
#[derive(Debug, Clone)]
pub struct SpirvKernel {
    /// The SPIR-V module (entry point `main`).
    pub words: Vec<u32>,
    /// Invocations per workgroup (= lanes of the SIMT form).
    pub lanes: u32,
    /// Number of array parameters (bindings `0..arrays`); the params buffer is at `arrays`.
    pub arrays: u32,
    /// Layout of the params buffer.
    pub params: ParamsLayout,
    /// Bytes of shared (workgroup) memory.
    pub shared_bytes: u32,
}

/// Word offsets of the params buffer (see the crate docs).
#[derive(Debug, Clone, PartialEq)]
pub struct ParamsLayout {
    /// For every kernel parameter: the word of its first extent (arrays) or of its value.
    pub offsets: Vec<u32>,
    /// Total words.
    pub words: u32,
}

/// Words 0..3: grid extents; 3..6: program-id offsets of the dispatch.
pub const HEADER_WORDS: u32 = 6;

impl ParamsLayout {
    /// The layout for a kernel's parameters.
    pub fn of(kernel: &Kernel) -> ParamsLayout {
        let mut offsets = Vec::new();
        let mut w = HEADER_WORDS;
        for p in &kernel.params {
            match &p.kind {
                ParamKind::Array { dims, .. } => {
                    offsets.push(w);
                    w += dims.len() as u32;
                }
                ParamKind::Scalar(s) => {
                    if s.bytes() == 8 {
                        w += w % 2;
                    }
                    offsets.push(w);
                    w += if s.bytes() == 8 { 2 } else { 1 };
                }
            }
        }
        ParamsLayout { offsets, words: w }
    }
}
