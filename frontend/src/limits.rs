//! Resource limits that are known per target before any device is seen: the shared memory one
//! program may allocate. `tilec check --target T` and `tilec build --target T` report kernels
//! over their target's limit with a span (E0227) instead of failing in code generation.

use crate::builder::Checker;
use crate::errors;
use tilec_grammar::span::Span;
use tilec_midend::{Function, Module, Op, OpKind, Type};

/// The limits of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetLimits {
    /// The target's name, for messages (`cpu`, `cuda`, `vulkan`).
    pub name: &'static str,
    /// Bytes of shared arrays one program may allocate.
    pub shared_bytes: u64,
    /// Where the limit comes from.
    pub source: &'static str,
    /// The lanes a program's register tiles are spread over, for which W0103 counts
    /// registers per lane: a CUDA warp's 32, a Vulkan device's subgroup size (32 until a
    /// device or `tilec build --lanes` says otherwise: [`TargetLimits::with_lanes`]). The
    /// CPU target keeps tiles in memory; its programs are checked as for a 32-lane GPU.
    pub lanes: u32,
}

impl TargetLimits {
    /// The CPU target: shared arrays live in the program's stack frame, at most 32 MiB
    /// together with its tiles.
    pub const CPU: TargetLimits = TargetLimits {
        name: "cpu",
        shared_bytes: 32 << 20,
        source: "the CPU target's 32 MiB frame per program",
        lanes: 32,
    };
    /// CUDA: 48 KiB of static shared memory per block (every NVIDIA GPU since sm_50).
    pub const CUDA: TargetLimits = TargetLimits {
        name: "cuda",
        shared_bytes: 48 << 10,
        source: "the 48 KiB of static shared memory a CUDA block may declare",
        lanes: 32,
    };
    /// Vulkan: 64 KiB, the largest `maxComputeSharedMemorySize` of common GPUs (AMD, Intel);
    /// NVIDIA has 48 KiB and lavapipe 32 KiB, which the launch checks (E0426).
    pub const VULKAN: TargetLimits = TargetLimits {
        name: "vulkan",
        shared_bytes: 64 << 10,
        source: "64 KiB, the largest `maxComputeSharedMemorySize` of common Vulkan GPUs (a device's own limit, often 32 or 48 KiB, is checked at launch: E0426)",
        lanes: 32,
    };

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
