//! `print` and `assert` in kernels: their sites, the debug buffer they write, and the options
//! that turn them off.
//!
//! The frontend makes an [`OpKind::Print`] or [`OpKind::Assert`] per call, indexing a
//! [`DebugSite`] of [`Module::debug`]. [`strip`] removes the kinds a compile turns off (then
//! they cost nothing: the values only they used are dead code); the pass `lower-debug`
//! ([`lower::run`], after `inline`) replaces the rest with ordinary IR (atomics, stores and an
//! `if`) on a hidden parameter of the kernel, the *debug buffer*, so every backend runs them
//! without knowing them and every target writes the same words. A kernel without either gets
//! no buffer. The host reads the buffer back after the launch ([`decode::decode`]).
//!
//! The buffer ([`BUFFER_PARAM`], `mut u32[BUFFER_WORDS]`, zeroed before each launch):
//!
//! | word | meaning |
//! |---|---|
//! | 0 | words of records reserved so far (an atomic add per record) |
//! | 1 | records started: every `print` run and every failed `assert` |
//! | 2 | failed `assert`s |
//! | 3 | 0 |
//! | 4.. | records, each `[site, program_id(0), program_id(1), program_id(2), payload..]` |
//!
//! A record's payload is the printed values, one after the other, each as 32-bit words:
//! `u32` as is, `i32` its bits, `f32` its bits, `bool` 0 or 1, `i64` and `f64` the low words
//! of every element, then the high words. A tile's elements are in row-major order (gathered
//! from the lanes on GPUs by the stores). A record is reserved with one atomic add, so the
//! records of one program are in its program order; one that does not fit is not written
//! (its stores fall outside the buffer) and counts as dropped. A failed `assert` writes a
//! record without payload.

pub mod decode;
pub mod lower;

use crate::ir::{Loc, Module, OpKind, Region};
use crate::types::{Scalar, Type};

/// The name of the debug buffer parameter, last among a kernel's parameters when it has
/// `print`s or `assert`s (the driver gives it; it is no name a program can declare).
pub const BUFFER_PARAM: &str = "__tilec_debug";

/// The words of the debug buffer: 4 MiB.
pub const BUFFER_WORDS: u64 = 1 << 20;

/// The words before the first record.
pub const HEADER_WORDS: u32 = 4;

/// The words of a record before its payload: the site and three program ids.
pub const RECORD_WORDS: u32 = 4;

/// Whether a site prints or asserts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugKind {
    Print,
    Assert,
}

/// One `print(..)` or `assert(..)` call of the source, as the frontend lowered it (once per
/// instance of its `fn` or kernel, so its value types are fixed).
#[derive(Debug, Clone, PartialEq)]
pub struct DebugSite {
    pub kind: DebugKind,
    /// The label of `print` or the message of `assert` (its string literal, unescaped).
    pub text: String,
    /// The call.
    pub loc: Loc,
    /// `print`: the types of the printed values (scalars or tiles), in order.
    pub values: Vec<Type>,
    /// `print`: the source of each printed value's expression, for its name in the output.
    pub value_locs: Vec<Loc>,
}

impl DebugSite {
    /// The payload words of a record of this site.
    pub fn payload_words(&self) -> u32 {
        self.values.iter().map(value_words).sum()
    }
}

/// The 32-bit words a printed value takes: one per element, two for 64-bit elements.
pub fn value_words(t: &Type) -> u32 {
    let n = t.tile_len().max(1);
    if matches!(t.elem(), Scalar::I64 | Scalar::F64) {
        2 * n
    } else {
        n
    }
}

/// Which debug ops a compile keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DebugOptions {
    /// Keep `print`s (`--quiet-prints` turns them off).
    pub prints: bool,
    /// Keep `assert`s (`--no-asserts` turns them off).
    pub asserts: bool,
}

impl Default for DebugOptions {
    /// Both on.
    fn default() -> DebugOptions {
        DebugOptions { prints: true, asserts: true }
    }
}

/// Removes from every function the `print`s (and `assert`s) that `opts` turns off; the values
/// only they used become dead code for `simplify`.
pub fn strip(m: &mut Module, opts: DebugOptions) {
    let drop = |k: &OpKind| match k {
        OpKind::Print(_) => !opts.prints,
        OpKind::Assert(_) => !opts.asserts,
        _ => false,
    };
    for f in &mut m.funcs {
        retain_ops(&mut f.body, &drop);
    }
}

/// Removes the ops for which `drop` holds from `r` and its nested regions.
fn retain_ops(r: &mut Region, drop: &dyn Fn(&OpKind) -> bool) {
    r.ops.retain(|o| !drop(&o.kind));
    for o in &mut r.ops {
        for reg in &mut o.regions {
            retain_ops(reg, drop);
        }
    }
}

/// Whether `r` or a nested region has a `print` or `assert`.
pub fn has_debug(r: &Region) -> bool {
    r.ops.iter().any(|o| matches!(o.kind, OpKind::Print(_) | OpKind::Assert(_)) || o.regions.iter().any(has_debug))
}
