//! The SIMT form of the Tile IR and the lowering to it, shared by every GPU backend.
//!
//! A kernel in SIMT form is the program of one *lane* of a subgroup of `lanes` lanes; a
//! program (grid block) is one subgroup. Tiles are gone: every register tile is spread over
//! the lanes as per-lane scalar SSA values (its *registers*), with every register index
//! static, so backends never index local arrays (no spills by construction):
//!
//! - `tile<T, R, C>` is row-distributed: lane `l` holds rows `l, l + lanes, l + 2 lanes, ..`
//!   (`ceil(R / lanes)` row slots of `C` registers); row slots past `R` hold padding that is
//!   never stored or broadcast. With `lanes = 32` and `R = 16`, lanes 16..31 idle; with
//!   `lanes = 8`, each lane holds two rows.
//! - `tile<T, N>` (a vector) of up to 64 elements is replicated: every lane holds all `N`
//!   elements. A vector used against the rows of a matrix (`outer(u, v)`'s `u`) is also kept
//!   row-distributed. Longer vectors, and shorter ones of a length that the kernel uses only
//!   element-wise (never with a matrix, in a float sum only outside its loops), are distributed
//!   like a matrix's rows (`dist.rs`), so that their code and registers grow with `N / lanes`.
//!
//! Cross-lane traffic is `Shuffle` (read a register of another lane), always of a register
//! with a static index, and the scratch arrays in shared memory: rank-1 updates need none,
//! triangular solves broadcast their triangular factor, Cholesky broadcasts along the
//! diagonal, transposes exchange registers with lane `lane ^ d` (`transpose.rs`), matmul reads
//! its right operand from a scratch array in the PTX form (`staged.rs`; small ones, and all
//! in the SPIR-V form, are broadcast), and
//! reshapes pass through one (`reshape.rs`).
//!
//! Ops allowed in SIMT form: scalar `Const Bin Cmp Un Cast Bitcast Select Fma` (`Un` with
//! `exp log sin cos tanh` on `f32` only: `math.rs` expands the `f64` ones; no float `Min`,
//! `Max` or `Rem` from the source, whose float-to-integer `Cast`s are followed by selects
//! that saturate: `numerics.rs` writes them out), `ProgramId
//! NumPrograms Dim LaneId Shuffle`, scalar memory ops with one `Index::At` index per
//! dimension — `Load` (out of bounds: 0), `LoadInto(old, array, ..)` (out of bounds: `old`),
//! `Store` and `AtomicAdd` (out of bounds: nothing) — `AllocShared`, `Barrier`, and the
//! structured `For If While Yield Return`. Masked-off lanes store to index -1 (out of
//! bounds) instead of branching, so every branch condition is uniform across the subgroup.
//! Integer `Div`/`Rem` never divide by 0 or (signed) by -1: the lowering guards them with the
//! CPU target's semantics, so backends use plain division. Every store to an array, global or
//! shared, is followed by a `Barrier` (barrier insertion), since lanes later read what other
//! lanes wrote, and a barrier, not a shuffle, orders memory between lanes (the interpreter
//! models exactly that: `interp`).

mod blocks;
mod dist;
mod flip;
pub mod interp;
mod linalg;
mod lines;
mod lower;
mod math;
mod numerics;
mod ops;
mod reshape;
mod staged;
mod transpose;

pub use lower::{lower_for_warp, lower_kernel, lower_kernel_with};

use crate::ir::{Function, Kernel, ParamKind};
use std::fmt;

/// A kernel lowered to SIMT form for a subgroup of `lanes` lanes.
#[derive(Debug, Clone)]
pub struct SimtKernel {
    /// The signature of the kernel (parameters, grid rank).
    pub kernel: Kernel,
    /// The per-lane program. Its parameters are the kernel's, in order.
    pub func: Function,
    /// Lanes per subgroup (= per program) this form was made for.
    pub lanes: u32,
    /// Bytes of shared memory the program uses (its shared arrays).
    pub shared_bytes: u32,
}

/// Why a kernel could not be lowered to SIMT form.
#[derive(Debug, Clone, PartialEq)]
pub struct SimtError {
    pub message: String,
}

impl fmt::Display for SimtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SIMT lowering failed: {}", self.message)
    }
}

impl std::error::Error for SimtError {}

/// The params buffer shared by the GPU backends' launch ABIs: 32-bit words holding the grid
/// extents (3 words), the program-id offsets of one dispatch (3 words, so a large grid can
/// be split), then for every kernel parameter its array extents (one `i32` word each) or its
/// scalar value (one word for 32-bit types, two little-endian words, 8-byte aligned, for
/// 64-bit ones). `offsets[i]` is the first word of parameter `i`.
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
