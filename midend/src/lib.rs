//! The Tile IR of tilec and its passes: SSA values in per-function arenas, structured control
//! flow regions, tile-typed values; a text printer, a verifier, the passes (inline,
//! const-fold, fuse-maps, cse, simplify; guard-select for the CPU backends, block-rank1 for
//! the LLVM one) and a scalar evaluator for launch functions.

#![forbid(unsafe_code)]

pub mod bounds;
pub mod cse;
pub mod debug;
pub mod dims;
pub mod eval;
pub mod fold;
pub mod fusion;
pub mod half;
pub mod halfarith;
pub mod inline;
pub mod ir;
pub mod mapfuse;
pub mod mats;
pub mod parse;
pub mod passes;
pub mod print;
pub mod rank1blocks;
pub mod rowgather;
pub mod scalar;
pub mod selectguard;
pub mod simplify;
pub mod simt;
pub mod types;
pub mod verify;

pub use ir::*;
pub use types::{Scalar, Type, MAX_TILE_EXTENT};
