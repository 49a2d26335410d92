//! Resource limits that are known per target before any device is seen: the shared memory one
//! program may allocate (E0227), the size of a register tile (E0204) and the lanes its
//! registers are spread over (W0103). `tilec check --target T` and `tilec build --target T`
//! report kernels over their target's limits with a span instead of failing in code
//! generation.

use crate::builder::Checker;
use crate::errors;
use tilec_grammar::span::Span;
use tilec_midend::{Function, Module, Op, OpKind, Type};

/// The largest `block(..)` size and shared array extent, on every target.
pub(crate) const BLOCK_MAX: u32 = 4096;

/// The largest order of the in-register factorizations and triangular solves (`cholesky_`,
/// `lu_`, `solve_*_`), on every target: 128 x 128 is a GPU's largest square tile, and the
/// CPU code grows with the order squared (LLVM: 2.7 s to compile at 128, 40 s at 256).
pub(crate) const FACTOR_MAX: u32 = 128;

/// The longest line `sort`, `argsort` and `topk` take, on every target: their bitonic
/// networks grow as `n log2(n)^2` (4096: 78 stages, seconds to compile).
pub(crate) const SORT_MAX: u32 = 4096;

/// The largest tile extent on the GPU targets, whose tiles live in registers spread over a
/// subgroup's lanes.
const GPU_MAX_EXTENT: u32 = 4096;
/// The most elements of a tile on the GPU targets (64 KiB of `f32`: 512 registers per lane on
/// a 32-lane warp, which W0103 reports long before).
const GPU_MAX_TILE_ELEMS: u64 = 16384;

/// The limits of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetLimits {
    /// The target's name, for messages (`cpu`, `cuda`, `vulkan`).
    pub name: &'static str,
    /// Bytes of shared arrays one program may allocate.
    pub shared_bytes: u64,
    /// Where the limit comes from.
    pub source: &'static str,
    /// The largest extent of a register tile (and of a slice or a reshape).
    pub max_extent: u32,
    /// The most elements of one register tile.
    pub max_tile_elems: u64,
    /// The lanes a program's register tiles are spread over, for which W0103 counts
    /// registers per lane: a CUDA warp's 32, a Vulkan device's subgroup size (32 until a
    /// device or `tilec build --lanes` says otherwise: [`TargetLimits::with_lanes`]). The
    /// CPU target keeps tiles in memory; its programs are checked as for a 32-lane GPU.
    pub lanes: u32,
}

impl TargetLimits {
    /// The CPU target: tiles and shared arrays live in the program's stack frame, at most
    /// 32 MiB together; a tile may have 32768 elements per extent and 65536 in all (256 KiB of
    /// `f32`, four times a GPU's), so that a 32768-wide row of logits is one tile.
    pub const CPU: TargetLimits = TargetLimits {
        name: "cpu",
        shared_bytes: 32 << 20,
        source: "the CPU target's 32 MiB frame per program",
        max_extent: tilec_midend::MAX_TILE_EXTENT,
        max_tile_elems: 65536,
        lanes: 32,
    };
    /// CUDA: 48 KiB of static shared memory per block (every NVIDIA GPU since sm_50).
    pub const CUDA: TargetLimits = TargetLimits {
        name: "cuda",
        shared_bytes: 48 << 10,
        source: "the 48 KiB of static shared memory a CUDA block may declare",
        max_extent: GPU_MAX_EXTENT,
        max_tile_elems: GPU_MAX_TILE_ELEMS,
        lanes: 32,
    };
    /// Vulkan: 64 KiB, the largest `maxComputeSharedMemorySize` of common GPUs (AMD, Intel);
    /// NVIDIA has 48 KiB and lavapipe 32 KiB, which the launch checks (E0426).
    pub const VULKAN: TargetLimits = TargetLimits {
        name: "vulkan",
        shared_bytes: 64 << 10,
        source: "64 KiB, the largest `maxComputeSharedMemorySize` of common Vulkan GPUs (a device's own limit, often 32 or 48 KiB, is checked at launch: E0426)",
        max_extent: GPU_MAX_EXTENT,
        max_tile_elems: GPU_MAX_TILE_ELEMS,
        lanes: 32,
    };

    /// Whether a register tile of type `t` is within these limits (extents and elements);
    /// other types are.
    pub fn holds(&self, t: &Type) -> bool {
        match t {
            Type::Tile { shape, .. } => {
                shape.iter().all(|&d| d <= self.max_extent) && t.tile_len() as u64 <= self.max_tile_elems
            }
            _ => true,
        }
    }

    /// These limits for programs spread over `lanes` lanes (a Vulkan device's subgroup size:
    /// lavapipe's and Intel's 8, AMD's 64), at least 1.
    pub const fn with_lanes(self, lanes: u32) -> TargetLimits {
        TargetLimits { lanes: if lanes == 0 { 1 } else { lanes }, ..self }
    }
}

/// The shared arrays a function allocates, with those of the `fn`s it calls: (span, bytes).
fn shared_allocs(m: &Module, f: &Function, out: &mut Vec<(Span, u64)>, depth: u32) {
    fn walk(m: &Module, f: &Function, ops: &[Op], out: &mut Vec<(Span, u64)>, depth: u32) {
        for op in ops {
            match &op.kind {
                OpKind::AllocShared(shape) => {
                    let elem = match f.ty(op.results[0]) {
                        Type::Array { elem, .. } => elem.bytes() as u64,
                        _ => 4,
                    };
                    let n: u64 = shape.iter().map(|&d| d as u64).product();
                    out.push((Span { start: op.loc.start, end: op.loc.end }, n * elem));
                }
                OpKind::Call(i) if depth < 64 => {
                    if let Some(g) = m.funcs.get(i.index()) {
                        shared_allocs(m, g, out, depth + 1);
                    }
                }
                _ => {}
            }
            for r in &op.regions {
                walk(m, f, &r.ops, out, depth);
            }
        }
    }
    walk(m, f, &f.body.ops, out, depth);
}

/// E0227 when the kernel body `f` (lowered from source `source`) allocates more shared
/// memory than `limits` allow; the label is at the largest allocation.
pub(crate) fn check_shared(
    cx: &mut Checker<'_>,
    f: &Function,
    kernel: &str,
    source: Option<String>,
    limits: &TargetLimits,
) {
    let mut allocs = Vec::new();
    shared_allocs(&cx.module, f, &mut allocs, 0);
    let total: u64 = allocs.iter().map(|a| a.1).sum();
    if total <= limits.shared_bytes {
        return;
    }
    let Some(&(span, bytes)) = allocs.iter().max_by_key(|a| a.1) else { return };
    let mut d = errors::shared_limit(span, kernel, total, bytes, limits);
    d.source = source;
    cx.diags.push(d);
}
