//! Constructors of the frontend's diagnostics, one per error case; every code is listed in
//! `docs/errors.md`. Codes: E01xx names, E02xx types and shapes, E03xx items and kernels.

use crate::TargetLimits;
use tilec_grammar::ast::{BinOp, Ident, UnOp};
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;
use tilec_midend::{Scalar, Type};

/// Levenshtein distance, for "did you mean" suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

fn suggest(d: Diagnostic, n: &Ident, cands: &[String]) -> Diagnostic {
    let name = n.name.as_str();
    let best = cands
        .iter()
        .filter(|c| c.as_str() != name)
        .map(|c| (distance(name, c), c))
        .filter(|(d, c)| name.len() > 1 && c.len() > 1 && *d <= (c.len() / 3).max(1))
        .min();
    match best {
        Some((_, c)) => d.help(format!("a name with a similar spelling exists: `{c}`")).suggest(
            format!("change it to `{c}`"),
            n.span,
            c.clone(),
        ),
        None => d,
    }
}

pub(crate) fn unknown_name(n: &Ident, cands: &[String]) -> Diagnostic {
    if matches!(n.name.as_str(), "break" | "continue") {
        return Diagnostic::error("E0221", format!("`{}` is not supported", n.name))
            .label(n.span, "loops in .tile always run to their bound")
            .help("use a `while` loop whose condition becomes false, or an `if` around the rest of the body");
    }
    let d = Diagnostic::error("E0101", format!("cannot find `{}` in this scope", n.name)).label(n.span, "not found");
    suggest(d, n, cands)
}

pub(crate) fn unknown_fn(n: &Ident, cands: &[String]) -> Diagnostic {
    let d = Diagnostic::error("E0102", format!("cannot find function `{}`", n.name))
        .label(n.span, "not a built-in or a `fn` item");
    suggest(d, n, cands)
}

pub(crate) fn unknown_type(n: &Ident) -> Diagnostic {
    Diagnostic::error("E0103", format!("unknown type `{}`", n.name))
        .label(n.span, "not a scalar type or a type parameter")
        .help("scalar types are bool, i32, u32, i64, f32 and f64, and the half types f16 and bf16")
}

pub(crate) fn duplicate(name: &str, first: Span, second: Span) -> Diagnostic {
    Diagnostic::error("E0104", format!("`{name}` is defined more than once"))
        .label(first, "first defined here")
        .label(second, "defined again here")
}

pub(crate) fn duplicate_across(name: &str, span: Span, module: &str) -> Diagnostic {
    Diagnostic::error("E0104", format!("`{name}` is defined here and in the imported module `{module}`"))
        .label(span, "defined here too")
        .help("item names are shared by a program and the modules it imports: rename this one")
}

pub(crate) fn unknown_module<'a>(m: &Ident, known: impl Iterator<Item = &'a str>) -> Diagnostic {
    let known: Vec<&str> = known.collect();
    Diagnostic::error("E0105", format!("unknown module `{}`", m.name))
        .label(m.span, "no such module")
        .help(format!("importable modules: {}", known.join(", ")))
}

pub(crate) fn unknown_method(m: &Ident) -> Diagnostic {
    let d = Diagnostic::error("E0106", format!("unknown method `{}`", m.name)).label(m.span, "not a tile method");
    let cands: Vec<String> = tilec_midend::Trsm::all_names()
        .into_iter()
        .chain(["cholesky_", "lu_", "eye_", "solve_triangular_"].map(str::to_string))
        .collect();
    let d = suggest(d, m, &cands);
    if d.help.is_some() {
        return d;
    }
    d.help("tile methods are `cholesky_(eps)`, `lu_()`, `eye_()`, `solve_triangular_(b)` and `solve_{left|right}_{lower|upper}[_t][_unit]_(b)`")
}

pub(crate) fn iota_arg(span: Span, want: &str) -> Diagnostic {
    Diagnostic::error("E0214", format!("`iota` needs {want}"))
        .label(span, "here")
        .help("`tile<i32, R, C>::iota(0)` holds each element's row index, `::iota(1)` its column index")
}

pub(crate) fn unknown_ctor(m: &Ident) -> Diagnostic {
    let d = Diagnostic::error("E0106", format!("unknown tile constructor `{}`", m.name))
        .label(m.span, "not a tile constructor");
    let d = suggest(d, m, &["zeros", "eye", "full", "iota"].map(str::to_string));
    if d.help.is_some() {
        return d;
    }
    d.help("tile constructors are `zeros()`, `eye()`, `full(x)` and `iota(axis)`")
}

pub(crate) fn no_kernel(name: &str, known: &[String]) -> Diagnostic {
    let d = Diagnostic::error("E0107", format!("no kernel named `{name}`")).note(format!(
        "kernels in this program: {}",
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    ));
    match known.iter().find(|k| distance(k, name) <= 2) {
        Some(k) => d.help(format!("did you mean `{k}`?")),
        None => d,
    }
}

pub(crate) fn array_as_value(n: &Ident) -> Diagnostic {
    Diagnostic::error("E0108", format!("array `{}` used as a value", n.name))
        .label(n.span, "an array parameter")
        .help(format!("index it: `{}[i, j]` reads an element, `{}[r0:r0+16, c0:c0+16]` a tile", n.name, n.name))
}

pub(crate) fn type_as_value(n: &Ident) -> Diagnostic {
    Diagnostic::error("E0108", format!("type parameter `{}` used as a value", n.name))
        .label(n.span, "a type, not a value")
}

pub(crate) fn mismatch(span: Span, op: BinOp, ta: &Type, sa: Span, tb: &Type, sb: Span) -> Diagnostic {
    Diagnostic::error("E0201", format!("mismatched types for `{}`: {ta} and {tb}", op.symbol()))
        .label(span, "in this operation")
        .label(sa, format!("this is {ta}"))
        .label(sb, format!("this is {tb}"))
        .help("convert one side with `as`")
}

pub(crate) fn assign_type(span: Span, want: &Type, got: &Type) -> Diagnostic {
    Diagnostic::error("E0201", format!("expected {want}, found {got}")).label(span, format!("this is {got}"))
}

pub(crate) fn const_item_type(span: Span, name: &str, want: Scalar, got: Scalar) -> Diagnostic {
    let (want, got) = (want.name(), got.name());
    Diagnostic::error("E0201", format!("the `const` item `{name}` is declared {want}, but its value is {got}"))
        .label(span, format!("this is {got}"))
        .help(format!("write a value of type {want}, or declare `{name}` as {got}"))
}

pub(crate) fn const_item_not_scalar(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error("E0218", format!("the `const` item `{name}` must have a scalar type"))
        .label(span, "not a scalar type")
        .help("`const` items are scalars: `const TS: i32 = 16;`")
}

pub(crate) fn shared_annotation(span: Span, want: &str, got: &str) -> Diagnostic {
    Diagnostic::error("E0201", format!("expected {want}, found {got}")).label(span, format!("this is {got}"))
}

pub(crate) fn store_type(span: Span, want: &Type, got: &Type) -> Diagnostic {
    if let (Type::Tile { shape: a, .. }, Type::Tile { shape: b, .. }) = (want, got) {
        if a == b {
            return Diagnostic::error(
                "E0201",
                format!("stored value has the wrong element type: the slice is {want}, the value is {got}"),
            )
            .label(span, format!("this is {got}"))
            .help(format!("convert it with `as {}`", want.elem().name()));
        }
    }
    Diagnostic::error("E0202", format!("stored value has the wrong shape: the slice is {want}, the value is {got}"))
        .label(span, format!("this is {got}"))
}

pub(crate) fn shape_mismatch(span: Span, op: &str, ta: &Type, sa: Span, tb: &Type, sb: Span) -> Diagnostic {
    Diagnostic::error("E0202", format!("tile shapes do not match for `{op}`: {ta} and {tb}"))
        .label(span, "in this operation")
        .label(sa, format!("this is {ta}"))
        .label(sb, format!("this is {tb}"))
        .note("element-wise operations need tiles of one shape up to broadcasting (extents aligned at the last dimension, each equal or 1: a `tile<T, N>` combines with every row of a `tile<T, M, N>`, a `tile<T, M, 1>`, such as `column(v)`, with every column), or a tile and a scalar")
}

pub(crate) fn matmul_inner(span: Span, ta: &Type, sa: Span, tb: &Type, sb: Span) -> Diagnostic {
    Diagnostic::error("E0203", format!("inner dimensions of `@` do not match: {ta} @ {tb}"))
        .label(span, "in this matrix product")
        .label(sa, format!("{ta}"))
        .label(sb, format!("{tb}"))
        .note("`a @ b` needs a: tile<T, M, K> and b: tile<T, K, N> or tile<T, K>")
}

pub(crate) fn matmul_operands(span: Span, ta: &Type, tb: &Type) -> Diagnostic {
    Diagnostic::error("E0203", format!("`@` needs two tiles, found {ta} and {tb}")).label(span, "here")
}

pub(crate) fn not_const(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0204", format!("{what} must be a compile-time constant"))
        .label(span, "this depends on run-time values")
        .help("use integer literals, `const` items or const generic parameters")
}

/// E0204 for an extent outside `1..=max`; for a tile's extent (`tile`: the target's limits)
/// over the limit, a note naming the target's limit (and the CPU's, on a GPU target).
pub(crate) fn bad_extent(span: Span, what: &str, v: f64, max: u32, tile: Option<&TargetLimits>) -> Diagnostic {
    let d = Diagnostic::error("E0204", format!("{what} must be an integer from 1 to {max}, found {v}"))
        .label(span, "this extent");
    let Some(limits) = tile.filter(|_| v >= 1.0) else { return d };
    match limits.name {
        "cpu" => d.note(format!("tiles on the CPU target have at most {max} elements per extent")),
        name => d.note(format!(
            "tiles on the {name} target have at most {max} elements per extent (the CPU target allows {})",
            TargetLimits::CPU.max_extent
        )),
    }
}

pub(crate) fn factor_too_large(span: Span, method: &str, n: u32, max: u32) -> Diagnostic {
    Diagnostic::error("E0204", format!("`{method}` takes tiles of at most {max} x {max}, found {n} x {n}"))
        .label(span, "this tile")
        .help("factor larger matrices by blocks (the stdlib's `potrf_batched` and `getrf_batched` take any order)")
}

pub(crate) fn sort_too_long(span: Span, f: &str, n: u32, max: u32) -> Diagnostic {
    Diagnostic::error("E0204", format!("`{f}` takes lines of at most {max} elements, found {n}"))
        .label(span, format!("lines of {n} along the sorted axis"))
        .note("a bitonic sorting network grows as n log2(n)^2 compare-exchanges")
        .help("sort blocks of at most 4096 and merge them, or sort along the shorter axis")
}

pub(crate) fn tile_too_large(span: Span, len: u64, limits: &TargetLimits) -> Diagnostic {
    let max = limits.max_tile_elems;
    let d = Diagnostic::error("E0204", format!("this tile has {len} elements, more than the limit of {max}"))
        .label(span, "too large for a register tile")
        .help("split the work into smaller tiles");
    match limits.name {
        "cpu" => d.note(format!("tiles on the CPU target have at most {max} elements")),
        name => d.note(format!(
            "tiles on the {name} target, held in registers, have at most {max} elements (the CPU target allows {})",
            TargetLimits::CPU.max_tile_elems
        )),
    }
}

pub(crate) fn read_only(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error("E0205", format!("cannot write to `{name}`, a read-only array"))
        .label(span, "written here")
        .help(format!("declare the parameter as `{name}: mut T[...]`"))
}

pub(crate) fn arg_count(span: Span, name: &str, want: usize, got: usize) -> Diagnostic {
    Diagnostic::error(
        "E0206",
        format!(
            "`{name}` takes {want} argument{}, but {got} {} given",
            if want == 1 { "" } else { "s" },
            if got == 1 { "was" } else { "were" }
        ),
    )
    .label(span, "in this call")
}

pub(crate) fn axis_range(span: Span, axis: i64, rank: u8) -> Diagnostic {
    Diagnostic::error("E0207", format!("grid axis {axis} is out of range for a grid of rank {rank}"))
        .label(span, format!("valid axes are 0..{rank}"))
}

pub(crate) fn program_id_outside(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error("E0207", format!("`{name}` is only available in a kernel body")).label(span, "used here")
}

pub(crate) fn slice_not_static(span: Span) -> Diagnostic {
    Diagnostic::error("E0208", "slice extent is not a compile-time constant")
        .label(span, "the extent `hi - lo` of this slice is not known statically")
        .help("write the slice as `x : x + K` with a constant `K`")
}

pub(crate) fn full_slice_dynamic(span: Span) -> Diagnostic {
    Diagnostic::error("E0208", "`:` over a dimension of run-time extent")
        .label(span, "the extent of this dimension is not static")
}

pub(crate) fn index_count(span: Span, rank: usize, got: usize) -> Diagnostic {
    let d = Diagnostic::error("E0209", format!("wrong number of indices: the array has rank {rank}, {got} given"))
        .label(span, "here");
    if got < rank {
        d.note("one or two indices fewer read small matrices when the last axes have fixed extents from 1 to 16 (`A: f32[P, 3, 3]`, `A[p]`: language §3.6)")
    } else {
        d
    }
}

pub(crate) fn tile_index(span: Span, rank: usize) -> Diagnostic {
    Diagnostic::error("E0209", format!("a tile of rank {rank} takes {rank} single indices, or `:` for the whole tile"))
        .label(span, "here")
}

pub(crate) fn tile_slice(span: Span) -> Diagnostic {
    Diagnostic::error("E0221", "tiles cannot be sliced")
        .label(span, "a slice of a tile")
        .help("index single elements (`t[i, j]`), whole rows or columns (`t[i, :]`, `t[:, j]`), blocks with a range or `:` in every dimension (`t[0:4, :]`), or load the part you need from the array (`A[b, 0:4, :]`)")
}

pub(crate) fn range_bound_not_const(span: Span) -> Diagnostic {
    Diagnostic::error("E0229", "bound of a tile range is not a compile-time integer constant")
        .label(span, "not known at compile time")
        .help(
            "a tile range has constant bounds (`t[2:6, :]`), or a run-time start and a constant extent (`t[i:i+4, :]`)",
        )
}

pub(crate) fn long_tile_range(span: Span, k: u32, n: u32) -> Diagnostic {
    Diagnostic::error("E0229", format!("tile range of {k} elements in a dimension of extent {n}"))
        .label(span, format!("{k} elements"))
        .help(format!("a range that starts at a run-time position has a constant extent of at most {n}"))
}

pub(crate) fn bad_tile_range(span: Span, lo: i64, hi: i64, n: u32) -> Diagnostic {
    let what = match lo.cmp(&hi) {
        std::cmp::Ordering::Equal => "is empty",
        std::cmp::Ordering::Greater => "is reversed",
        std::cmp::Ordering::Less => "is out of range",
    };
    Diagnostic::error("E0229", format!("tile range {lo}:{hi} {what}: the dimension has extent {n}"))
        .label(span, "this range")
        .help(format!("a range `lo:hi` of a tile needs 0 <= lo < hi <= {n}"))
}

pub(crate) fn tile_index_range(span: Span, i: i64, n: u32) -> Diagnostic {
    Diagnostic::error("E0209", format!("tile index {i} is out of range 0..{n}")).label(span, "this index")
}

pub(crate) fn expected_bool(span: Span, t: &Type) -> Diagnostic {
    Diagnostic::error("E0210", format!("expected bool, found {t}")).label(span, "this must be a bool")
}

pub(crate) fn bad_target(span: Span) -> Diagnostic {
    Diagnostic::error("E0211", "cannot assign to this expression")
        .label(span, "not a variable, a tile element or an array slice")
}

pub(crate) fn assign_const(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error("E0211", format!("cannot assign to constant `{name}`")).label(span, "a constant")
}

pub(crate) fn not_a_variable(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0211", format!("{what} must be a tile variable")).label(span, "not a variable")
}

pub(crate) fn needs_square(span: Span, name: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0212", format!("`{name}` needs a square floating-point tile, found {t}"))
        .label(span, format!("this is {t}"))
}

pub(crate) fn needs_float(span: Span, name: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0212", format!("`{name}` needs a floating-point tile, found {t}"))
        .label(span, format!("this is {t}"))
}

pub(crate) fn trsm_shape(span: Span, name: &str, left: bool, l: &Type, b: &Type) -> Diagnostic {
    let (want, note) = if left {
        ("tile<T, N, M> or tile<T, N>", "a left solve op(A) X = B needs B's row count to equal A's order")
    } else {
        ("tile<T, M, N>", "a right solve X op(A) = B needs B's column count to equal A's order")
    };
    Diagnostic::error("E0212", format!("`{name}` needs b: {want} for a: {l}, found {b}"))
        .label(span, format!("this is {b}"))
        .note(note)
}

pub(crate) fn map_fn(span: Span) -> Diagnostic {
    Diagnostic::error("E0214", "the first argument of `map` must name a `fn`").label(span, "not a function name")
}

pub(crate) fn map_result(span: Span) -> Diagnostic {
    Diagnostic::error("E0214", "the `fn` given to `map` must return a scalar").label(span, "this function")
}

pub(crate) fn written_target(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0211", format!("`{what}` needs an array element or slice, like `A[i, j]` or `A[r:r+16, c]`"))
        .label(span, "not an indexed array")
}

pub(crate) fn masked_store_mask(span: Span, want: &Type, got: &Type) -> Diagnostic {
    Diagnostic::error("E0202", format!("the mask of `masked_store` must be {want}, the stored tile's shape, not {got}"))
        .label(span, format!("this is {got}"))
}

pub(crate) fn masked_store_scalar(span: Span) -> Diagnostic {
    Diagnostic::error("E0202", "`masked_store` stores a tile: the access needs a slice, like `A[r:r+16, c]`")
        .label(span, "a single element")
        .help("to store one element under a condition, use `if`")
}

pub(crate) fn shared_ctor(span: Span) -> Diagnostic {
    Diagnostic::error("E0106", "shared arrays are created with `shared<T, R, C>::zeros()`").label(span, "here")
}

pub(crate) fn bad_cast(span: Span, t: &Type, to: Scalar) -> Diagnostic {
    Diagnostic::error("E0213", format!("cannot cast {t} to {}", to.name())).label(span, "only scalars can be cast")
}

pub(crate) fn arg_type(span: Span, f: &str, want: &Type, got: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("argument of `{f}` has the wrong type: expected {want}, found {got}"))
        .label(span, format!("this is {got}"))
}

pub(crate) fn math_operand(span: Span, f: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`{f}` does not apply to {t}")).label(span, format!("this is {t}"))
}

pub(crate) fn present_operand(span: Span) -> Diagnostic {
    Diagnostic::error("E0214", "`present` takes the name of an array parameter")
        .label(span, "not an array parameter")
        .help("optional arrays are declared with `?`: `Bias: f32[N]?`")
}

pub(crate) fn outer_operands(span: Span, a: &Type, b: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`outer` needs two vector tiles of one element type, found {a} and {b}"))
        .label(span, "in this call")
}

pub(crate) fn needs_matrix(span: Span, f: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`{f}` needs a tile of rank 2, found {t}")).label(span, format!("this is {t}"))
}

pub(crate) fn needs_vector(span: Span, f: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`{f}` needs a numeric tile of rank 1, found {t}"))
        .label(span, format!("this is {t}"))
}

pub(crate) fn needs_tile(span: Span, f: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`{f}` needs a tile, found {t}")).label(span, format!("this is {t}"))
}

pub(crate) fn scan_axis(span: Span, f: &str, rank: usize) -> Diagnostic {
    let want = if rank == 1 { "0 (or no axis)" } else { "the constant 0 or 1" };
    Diagnostic::error("E0214", format!("the axis of `{f}` must be {want} for a tile of rank {rank}"))
        .label(span, "this axis")
}

pub(crate) fn scan_fn_result(span: Span, want: &Type, got: &Type) -> Diagnostic {
    let (want, got) = (want.elem().name(), got.elem().name());
    Diagnostic::error(
        "E0214",
        format!("the `fn` given to `scan` must return {want}, the tile's element type, not {got}"),
    )
    .label(span, "this function")
    .help(
        "`scan(t, axis, f)` calls `f(acc, x)` with the running value and the next element, both of `t`'s element type",
    )
}

pub(crate) fn split_operand(span: Span, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("`split` needs a numeric tile<T, N, 2>, found {t}"))
        .label(span, format!("this is {t}"))
        .help("`split(t)` returns the two columns of a tile of two columns: `let (a, b) = split(t);`")
}

pub(crate) fn reshape_count(span: Span, t: &Type, to: &[u32]) -> Diagnostic {
    let want: u32 = to.iter().product();
    let to: Vec<String> = to.iter().map(u32::to_string).collect();
    Diagnostic::error("E0214", format!("cannot reshape {t} to {} elements ({})", want, to.join(" x ")))
        .label(span, "another number of elements")
        .help("a reshape keeps every element: the extents' product must be the tile's element count")
}

pub(crate) fn topk_count(span: Span, n: u32) -> Diagnostic {
    Diagnostic::error("E0214", format!("`topk`'s count must be a constant from 1 to {n}, the length of its axis"))
        .label(span, "this count")
}

/// E0001: a string literal where none is allowed (as the parser says for one outside a
/// call's arguments).
pub(crate) fn string_here(span: Span, text: &str) -> Diagnostic {
    Diagnostic::error("E0001", format!("unexpected string `{text:?}`"))
        .label(span, "not a token here")
        .help("a string is only the label of `print(\"..\", ..)` or the message of `assert(cond, \"..\")`")
}

/// E0231: `print` without its label or `assert` without its message, a string literal.
pub(crate) fn debug_string(span: Span, call: &str, what: &str, position: usize) -> Diagnostic {
    let example = if call == "print" { "print(\"k\", k, t)" } else { "assert(x > 0.0, \"x is positive\")" };
    Diagnostic::error("E0231", format!("`{call}` takes a {what} string as its argument {position}"))
        .label(span, format!("expected a string literal, the {what}"))
        .help(format!("for example `{example}`"))
}

/// E0231: a printed value that is not a scalar or a tile.
pub(crate) fn not_printable(span: Span) -> Diagnostic {
    Diagnostic::error("E0231", "`print` takes scalars and tiles")
        .label(span, "not a scalar or a tile")
        .help("print a tile of the array instead: `print(\"a\", A[i, 0:8])`")
}

/// E0230: a named argument (`name = value`) where none is taken, or one that is not known.
pub(crate) fn named_arg(span: Span, name: &str, known: &[&str]) -> Diagnostic {
    let d = Diagnostic::error("E0230", format!("unexpected named argument `{name}`")).label(span, "not taken here");
    if known.is_empty() {
        return d.help(
            "only the scans (`cumsum`, `cumprod`, `cummax`, `cummin`, `scan`) take a named argument, `reverse = true`, \
             and `sort` and `argsort`, `descending = true`",
        );
    }
    d.help(format!(
        "the named arguments here are {}",
        known.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
    ))
}

/// E0230: a named argument whose value is not the constant it must be.
pub(crate) fn named_arg_value(span: Span, name: &str, want: &str) -> Diagnostic {
    Diagnostic::error("E0230", format!("`{name}` must be {want}")).label(span, "not a constant of that type")
}

pub(crate) fn reduce_axis(span: Span, rank: usize) -> Diagnostic {
    Diagnostic::error(
        "E0214",
        format!("the reduction axis must be the constant 0 or 1 of a tile of rank 2 (this tile has rank {rank})"),
    )
    .label(span, "this axis")
}

pub(crate) fn not_indexable(span: Span, t: &Type) -> Diagnostic {
    Diagnostic::error("E0214", format!("{t} cannot be indexed")).label(span, "only arrays and tiles can be indexed")
}

pub(crate) fn bad_unary(span: Span, op: UnOp, t: &Type) -> Diagnostic {
    let s = if op == UnOp::Neg { "-" } else { "!" };
    Diagnostic::error("E0214", format!("`{s}` does not apply to {t}")).label(span, "here")
}

pub(crate) fn bool_arith(span: Span, op: &str) -> Diagnostic {
    Diagnostic::error("E0214", format!("`{op}` does not apply to bool")).label(span, "here")
}

pub(crate) fn expected_int(span: Span, what: &str, t: &Type) -> Diagnostic {
    Diagnostic::error("E0215", format!("{what} must be an integer, found {t}"))
        .label(span, format!("this is {t}"))
        .help("convert with `as i32`")
}

pub(crate) fn loop_bounds(span: Span, a: &Type, b: &Type) -> Diagnostic {
    Diagnostic::error("E0215", format!("loop bounds and step must have one type, i32 or i64, found {a} and {b}"))
        .label(span, "here")
}

pub(crate) fn bad_step(span: Span) -> Diagnostic {
    Diagnostic::error("E0215", "the loop step must be positive").label(span, "this step")
}

pub(crate) fn cannot_infer(span: Span, f: &str, p: &str) -> Diagnostic {
    Diagnostic::error("E0216", format!("cannot infer the generic parameter `{p}` of `{f}`"))
        .label(span, "in this call")
        .help("every generic parameter must appear in a parameter's type")
}

pub(crate) fn cannot_infer_launch(kernel: &str, p: &str) -> Diagnostic {
    Diagnostic::error("E0216", format!("cannot infer the element type `{p}` of kernel `{kernel}` from its arguments"))
        .help(format!("pass an array argument of type `{p}[...]`, or fix it with `--generic {p}=f32`"))
}

pub(crate) fn generic_dtype(kernel: &str, p: &str, arg: &str, dt: Scalar, allowed: &[Scalar]) -> Diagnostic {
    let a: Vec<&str> = allowed.iter().map(|s| s.name()).collect();
    Diagnostic::error(
        "E0216",
        format!(
            "argument `{arg}` of kernel `{kernel}` has dtype {}, but `{p}` must be one of {}",
            dt.name(),
            a.join(", ")
        ),
    )
}

pub(crate) fn generic_conflict(kernel: &str, p: &str, a1: &str, s1: Scalar, a2: &str, s2: Scalar) -> Diagnostic {
    Diagnostic::error(
        "E0216",
        format!(
            "arguments `{a1}` ({}) and `{a2}` ({}) of kernel `{kernel}` give `{p}` two element types",
            s1.name(),
            s2.name()
        ),
    )
    .help("convert the inputs to one dtype")
}

pub(crate) fn early_return(span: Span) -> Diagnostic {
    Diagnostic::error("E0217", "`return` in a `fn` must be its last statement")
        .label(span, "early return")
        .note("`fn`s are inlined into structured code: assign the result to a variable in the branches of an `if` and end the body with that variable")
}

pub(crate) fn kernel_return_value(span: Span) -> Diagnostic {
    Diagnostic::error("E0217", "a kernel cannot return a value").label(span, "write results to a `mut` array")
}

pub(crate) fn tail_not_allowed(span: Span) -> Diagnostic {
    Diagnostic::error("E0217", "a block value is only allowed at the end of a `fn` body")
        .label(span, "add `;` to make this a statement")
}

pub(crate) fn gather_shapes(span: Span, t: &Type) -> Diagnostic {
    Diagnostic::error("E0202", format!("a 2-D index tile ({t}) addresses elements one by one: the other indices must be single positions or index tiles of its shape"))
        .label(span, "this index")
        .help("use 1-D index tiles to combine gathered positions with slices, like `A[rows, 0:16]`")
}

pub(crate) fn tile_rank(span: Span, n: usize) -> Diagnostic {
    Diagnostic::error("E0218", format!("tiles have rank 1 or 2, this has rank {n}")).label(span, "here")
}

pub(crate) fn tile_elem(span: Span) -> Diagnostic {
    Diagnostic::error("E0218", "a tile's element type must be a scalar type").label(span, "here")
}

pub(crate) fn literal_range(span: Span, s: Scalar) -> Diagnostic {
    Diagnostic::error("E0219", format!("literal out of range for {}", s.name())).label(span, "this literal")
}

pub(crate) fn no_value(span: Span) -> Diagnostic {
    Diagnostic::error("E0220", "this expression has no value")
        .label(span, "an in-place operation")
        .note("in-place methods such as `cholesky_` update their tile and return nothing")
}

/// `want`: "type", "float" or "integer", what the parameter takes.
pub(crate) fn generic_kind(kernel: &str, p: &Ident, want: &str) -> Diagnostic {
    let (what, example) = match want {
        "type" => ("an element type", "f32"),
        "float" => ("a number", "0.5"),
        _ => ("an integer constant", "16"),
    };
    Diagnostic::error("E0302", format!("the generic parameter `{}` of kernel `{kernel}` takes {what}", p.name))
        .label(p.span, "declared here")
        .help(format!("pass `--generic {}={example}`", p.name))
}

pub(crate) fn array_not_here(span: Span) -> Diagnostic {
    Diagnostic::error("E0221", "array types are only allowed for kernel and `fn` parameters").label(span, "here")
}

pub(crate) fn recursion(span: Span, name: &str) -> Diagnostic {
    Diagnostic::error("E0222", format!("`{name}` calls itself"))
        .label(span, "recursive call")
        .note("`fn`s are inlined, so they cannot recurse")
}

pub(crate) fn const_div_zero(span: Span) -> Diagnostic {
    Diagnostic::error("E0223", "division by zero in a constant expression").label(span, "here")
}

pub(crate) fn const_overflow(span: Span, what: &str, s: Option<Scalar>) -> Diagnostic {
    let ty = s.map_or("64 bits".to_string(), |s| s.name().to_string());
    let help = match s {
        Some(s) if s != Scalar::I64 => {
            "compute in `i64` (`x as i64`), or use smaller values; constants never wrap around"
        }
        _ => "use smaller values; constants never wrap around",
    };
    Diagnostic::error("E0226", format!("arithmetic overflow in a constant expression: {what} does not fit in {ty}"))
        .label(span, format!("this overflows {ty}"))
        .help(help)
}

pub(crate) fn const_item_range(span: Span, name: &str, v: i64, s: Scalar) -> Diagnostic {
    Diagnostic::error("E0226", format!("the value of `{name}`, {v}, does not fit in {}", s.name()))
        .label(span, format!("this is {v}"))
        .help(format!("declare `{name}` with a wider type (`i64`), or use a smaller value"))
}

pub(crate) fn generic_value_range(kernel: &str, name: &Ident, v: i64, s: Scalar) -> Diagnostic {
    Diagnostic::error(
        "E0226",
        format!("`{}={v}` does not fit in {}, the type of `{kernel}`'s parameter", name.name, s.name()),
    )
    .label(name.span, format!("declared {} here", s.name()))
}

pub(crate) fn shared_limit(
    span: Span,
    kernel: &str,
    total: u64,
    largest: u64,
    limits: &crate::limits::TargetLimits,
) -> Diagnostic {
    Diagnostic::error(
        "E0227",
        format!(
            "kernel `{kernel}` allocates {total} bytes of shared arrays, more than {} on the {} target",
            limits.shared_bytes, limits.name
        ),
    )
    .label(span, format!("{largest} bytes"))
    .note(format!("the limit is {}", limits.source))
    .help("use smaller shared arrays, or tiles of a loop over the data")
}

pub(crate) fn in_instance(span: Span, key: &str) -> Diagnostic {
    Diagnostic::error("E0224", format!("errors in `{key}`, instantiated here")).label(span, "instantiated by this call")
}

pub(crate) fn uncalled_instance(span: Span, key: &str, name: &str) -> Diagnostic {
    Diagnostic::error("E0224", format!("errors in `{key}`, the instance checked because nothing calls `{name}`"))
        .label(span, "checked with the first type its bounds allow")
}

/// `T`, or `(T1, T2)` for several types.
pub(crate) fn types_text(ts: &[Type]) -> String {
    match ts {
        [t] => t.to_string(),
        _ => format!("({})", ts.iter().map(Type::to_string).collect::<Vec<_>>().join(", ")),
    }
}

pub(crate) fn return_type(span: Span, want: &[Type], got: &[Type]) -> Diagnostic {
    let (want, got) = (types_text(want), types_text(got));
    Diagnostic::error("E0225", format!("the `fn` returns {got}, but its declared type is {want}"))
        .label(span, "in this body")
}

pub(crate) fn missing_return(span: Span, want: &[Type]) -> Diagnostic {
    let want = types_text(want);
    Diagnostic::error("E0225", format!("missing return value of type {want}"))
        .label(span, "this `fn`")
        .help("end the body with an expression")
}

pub(crate) fn unexpected_return(span: Span, got: &[Type]) -> Diagnostic {
    let got = types_text(got);
    Diagnostic::error("E0225", format!("this `fn` declares no return type but returns {got}"))
        .label(span, "in this body")
        .help(format!("add `-> {got}`"))
}

/// E0228: a tuple where tuples are not allowed (only a `fn`'s several results are tuples).
pub(crate) fn tuple_not_here(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error("E0228", format!("{what} is only allowed as the results of a `fn`")).label(span, "not here").note(
        "a `fn` returns several values with `-> (T1, T2)` and `(a, b)`; callers bind them with `let (x, y) = f(..);`",
    )
}

/// E0228: a tuple of fewer than two.
pub(crate) fn tuple_arity(span: Span) -> Diagnostic {
    Diagnostic::error("E0228", "a tuple needs at least two elements")
        .label(span, "one element")
        .help("drop the parentheses")
}

/// E0228: a call returning `n` values used as one value.
pub(crate) fn several_values(span: Span, n: usize) -> Diagnostic {
    Diagnostic::error("E0228", format!("this call returns {n} values, not one"))
        .label(span, format!("{n} values"))
        .help(format!(
            "bind them with `let ({}) = ..;`",
            (0..n)
                .map(|i| ["a", "b", "c", "d", "e", "f"].get(i).copied().unwrap_or("x"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
}

/// E0228: `let (a, b) = e;` where `e` gives another number of values.
pub(crate) fn let_tuple_count(span: Span, names: usize, values: usize) -> Diagnostic {
    let what = if values == 1 { "1 value".to_string() } else { format!("{values} values") };
    Diagnostic::error("E0228", format!("{names} names bound to {what}")).label(span, format!("gives {what}"))
}

pub(crate) fn unknown_bound(b: &Ident) -> Diagnostic {
    Diagnostic::error("E0301", format!("unknown bound `{}`", b.name)).label(b.span, "bounds are `float` and `int`")
}

pub(crate) fn bound_violation(span: Span, f: &str, p: &Ident, bound: &Ident, got: Scalar) -> Diagnostic {
    let allowed = if bound.name == "int" { "i32 or i64" } else { "f32 or f64" };
    Diagnostic::error(
        "E0306",
        format!(
            "this call makes `{}` of `{f}` {}, but its bound `{}` allows {allowed}",
            p.name,
            got.name(),
            bound.name
        ),
    )
    .label(span, format!("`{}` = {} here", p.name, got.name()))
    .help("convert the argument with `as`, or call another `fn`")
}

pub(crate) fn const_param_type(ty: Span, p: &Ident) -> Diagnostic {
    Diagnostic::error("E0307", format!("the const parameter `{}` must have an integer or float type", p.name))
        .label(ty, "not an integer or float type")
        .help(format!("const parameters are integers or floats: `const {}: i32`, `const {}: f32`", p.name, p.name))
}

pub(crate) fn const_default_type(span: Span, p: &Ident, want: Scalar, got: Scalar) -> Diagnostic {
    let (want, got) = (want.name(), got.name());
    Diagnostic::error(
        "E0201",
        format!("the default of the const parameter `{}` is {got}, but `{}` is {want}", p.name, p.name),
    )
    .label(span, format!("this is {got}"))
    .help("write a default of the parameter's type")
}

pub(crate) fn const_default_range(span: Span, p: &Ident, s: Scalar, v: i64) -> Diagnostic {
    Diagnostic::error(
        "E0219",
        format!("the default {v} of the const parameter `{}` is out of range for {}", p.name, s.name()),
    )
    .label(span, format!("not a {}", s.name()))
}

pub(crate) fn tuning_candidate(span: Span, p: &Ident, s: Scalar) -> Diagnostic {
    Diagnostic::error(
        "E0308",
        format!("a tuning candidate of the const parameter `{}` is not a constant {}", p.name, s.name()),
    )
    .label(span, format!("not a constant {}", s.name()))
    .help(format!("list constants of the parameter's type: `const {}: i32 = 64 in [32, 64, 128]`", p.name))
}

pub(crate) fn tuning_twice(span: Span, p: &Ident) -> Diagnostic {
    Diagnostic::error("E0308", format!("a tuning candidate of the const parameter `{}` is listed twice", p.name))
        .label(span, "already listed")
}

pub(crate) fn tuning_default(span: Span, p: &Ident) -> Diagnostic {
    Diagnostic::error(
        "E0308",
        format!("the default of the const parameter `{}` is not one of its tuning candidates", p.name),
    )
    .label(span, "not in the list after `in`")
    .help("list the default among the candidates: a kernel runs with it until it is tuned")
}

pub(crate) fn tuning_without_default(span: Span, p: &Ident) -> Diagnostic {
    Diagnostic::error("E0308", format!("the const parameter `{}` has tuning candidates but no default", p.name))
        .label(span, "candidates")
        .help(format!("give it a default among them: `const {}: i32 = 64 in [32, 64, 128]`", p.name))
}

pub(crate) fn tuning_in_fn(span: Span, p: &Ident) -> Diagnostic {
    Diagnostic::error("E0308", format!("the const parameter `{}` of a `fn` has tuning candidates", p.name))
        .label(span, "tuning candidates")
        .help("only a kernel's const parameters are tuned; a `fn` takes its value from the kernel that calls it")
}

pub(crate) fn const_param_conflict(kernel: &str, g: &str, a: &str, x: u64, b: &str, y: u64) -> Diagnostic {
    let who = if a == b { format!("extents of argument `{a}`") } else { format!("arguments `{a}` and `{b}`") };
    Diagnostic::error(
        "E0216",
        format!("the {who} of kernel `{kernel}` give the const parameter `{g}` two values, {x} and {y}"),
    )
    .help("the extents that name a const parameter must be equal")
}

pub(crate) fn const_param_value(kernel: &str, p: &Ident) -> Diagnostic {
    let n = &p.name;
    Diagnostic::error("E0302", format!("the const parameter `{n}` of kernel `{kernel}` has no value"))
        .label(p.span, "no default value")
        .help(format!("give it a default (`const {n}: i32 = 16`) or a value with `--generic {n}=16`"))
}

pub(crate) fn bad_array_dim(span: Span) -> Diagnostic {
    Diagnostic::error(
        "E0303",
        "an array extent must be a literal, a constant, a shape variable, an integer scalar parameter, \
         or an integer expression of them",
    )
    .label(span, "here")
    .note("extent expressions use `+ - * / %`, `cdiv`, `min` and `max`: `T[Z * H, N]`, `T[cdiv(N, 16)]`")
}

/// E0303: a scalar parameter of a non-integer type used in an extent.
pub(crate) fn extent_not_int(span: Span, var: &str, s: Scalar) -> Diagnostic {
    Diagnostic::error("E0303", format!("the extent uses `{var}`, a {} parameter; extents are integers", s.name()))
        .label(span, "here")
        .help(format!("declare `{var}: i32`"))
}

/// E0303: a name in an extent expression that no argument gives a value.
pub(crate) fn extent_var(span: Span, expr: &str, var: &str) -> Diagnostic {
    Diagnostic::error("E0303", format!("the extent `{expr}` uses `{var}`, which no argument gives a value"))
        .label(span, format!("`{var}` is not the extent of an array axis nor an integer scalar parameter"))
        .help(format!(
            "declare `{var}` as a plain extent of some array (`A: f32[{var}, ..]`) or as a parameter `{var}: i32`"
        ))
}

pub(crate) fn bad_array_rank(span: Span) -> Diagnostic {
    Diagnostic::error("E0303", "arrays have rank 1 to 8").label(span, "here")
}

pub(crate) fn bad_kernel_param(span: Span) -> Diagnostic {
    Diagnostic::error("E0304", "kernel parameters are arrays or scalars")
        .label(span, "here")
        .help("load tiles from an array parameter")
}

pub(crate) fn grid_rank(span: Span, n: usize) -> Diagnostic {
    Diagnostic::error("E0305", format!("a grid has 1 to 3 extents, found {n}")).label(span, "in this kernel")
}

pub(crate) fn mat_operands(span: Span, what: &str, ta: &Type, tb: Option<&Type>) -> Diagnostic {
    let found = match tb {
        Some(tb) => format!("{ta} and {tb}"),
        None => format!("{ta}"),
    };
    Diagnostic::error("E0232", format!("{what} is not defined for {found}"))
        .label(span, "here")
        .note("small matrices and vectors take `+ - * /` entry by entry (with each other, of one size, or with a scalar or a tile of the matrices' shape), `@` between matrices and vectors whose sizes compose, and the functions of language §3.6")
}

pub(crate) fn mat_arg(span: Span, f: &str, want: &str, got: &Type) -> Diagnostic {
    Diagnostic::error("E0232", format!("`{f}` takes {want}, found {got}")).label(span, format!("this is {got}"))
}

pub(crate) fn mat_type(span: Span, msg: String) -> Diagnostic {
    Diagnostic::error("E0233", msg)
        .label(span, "here")
        .note("`mat<T, R, C>` and `vec<T, N>` hold numbers (i32, u32, i64, f32, f64) with R, C and N from 1 to 16; a tile of them has one extent: `tile<mat<f32, 3, 3>, 64>`")
}

pub(crate) fn array_arg(span: Span, f: &str, param: &str) -> Diagnostic {
    Diagnostic::error("E0214", format!("argument `{param}` of `{f}` must be an array, given by its name"))
        .label(span, "not the name of an array")
        .help("pass an array parameter of the kernel (or of the calling `fn`) as it is: `f(A, i)`")
}

pub(crate) fn array_arg_shape(span: Span, f: &str, want: &str, got: &str) -> Diagnostic {
    Diagnostic::error("E0214", format!("argument of `{f}` has the wrong type: expected {want}, found an array with {got}"))
        .label(span, "this array")
        .note("a `fn`'s constant array extents must be the argument's fixed extents, and a name takes the argument's extent (language §2.3)")
}
