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

#![forbid(unsafe_code)]

mod atomics;
mod body;
mod control;
mod half;
mod memory;
mod module;

pub use module::{compile, compile_with};

use std::fmt;
pub use tilec_midend::simt::{ParamsLayout, HEADER_WORDS};

/// Why SPIR-V generation failed: an operation or type the Vulkan target does not support, or
/// a SIMT form the verifier rejects. `loc` is the source location of the op that failed, when
/// it has one.
#[derive(Debug, Clone, PartialEq)]
pub struct SpirvError {
    pub message: String,
    pub loc: Option<tilec_midend::Loc>,
}

impl SpirvError {
    /// This error, located at `loc` unless it already has a location.
    pub(crate) fn at(mut self, loc: tilec_midend::Loc) -> SpirvError {
        if self.loc.is_none() && loc != tilec_midend::Loc::default() {
            self.loc = Some(loc);
        }
        self
    }
}

impl fmt::Display for SpirvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SPIR-V generation failed: {}", self.message)
    }
}

impl std::error::Error for SpirvError {}

pub(crate) fn err(m: impl Into<String>) -> SpirvError {
    SpirvError { message: m.into(), loc: None }
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
    /// How each array parameter is bound (see [`Chunks`]); empty: all single buffers.
    pub chunks: Vec<Option<Chunks>>,
}

/// How one array parameter is bound: one buffer, or `count` buffers of `2^log2` elements
/// each (the last one holding the rest) as a descriptor array at its binding. Element `e` is
/// element `e & (2^log2 - 1)` of descriptor `e >> log2`. Used for arrays larger than the
/// device's `maxStorageBufferRange`. The shader reads every chunk with a constant descriptor
/// index and keeps the value of the right one, so no descriptor-indexing feature is needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Chunks {
    pub log2: u8,
    pub count: u32,
}

/// Options of [`compile_with`].
#[derive(Debug, Clone, Default)]
pub struct SpirvOptions {
    /// `chunks[i]` for the `i`-th array parameter (`None` or missing: a single buffer).
    pub chunks: Vec<Option<Chunks>>,
}
