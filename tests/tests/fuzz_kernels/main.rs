//! Differential fuzzing of whole kernels: a seeded generator writes random well-typed tile
//! kernels (random tile shapes with partial edge tiles over random array extents, element-wise
//! arithmetic and math, `min`/`max`, masks and `where`, `iota`, tile casts, scans (reversed
//! too, and with a user `fn`), flips, `copysign`/`signbit`, a three-operand `map`, `fma` of tiles,
//! reshapes, rows, columns and ranges of tiles, broadcasts, transposes, `@`, integer `/`
//! and `%` by zero, masked loads at row offsets, loops carrying a tile with a const-parameter
//! trip count and a float const parameter's scale, uniform branches, shared arrays with `sync()`,
//! Cholesky, LU and triangular solves on well-conditioned SPD tiles, row and whole-tile
//! reductions (`argmax`/`argmin` of integer tiles), `atomic_add`, masked stores, gathers and
//! scatters through index tiles (positions out of the arrays, repeated ones added atomically),
//! scatter-maxima and minima and a fetch-and-add with its old values,
//! ranges of tiles at run-time starts, vectors longer than 64 elements with run-time element
//! indices and scans, `f16`/`bf16` storage of the `f32` kernels' arrays and `f16`/`bf16`
//! arithmetic on the loaded inputs, atomics on `f16`/`bf16` arrays (which Vulkan must refuse),
//! `topk`, `join`/`split`, `row`, `inf`/`nan` and a compare-and-swap with its old values, an
//! optional array given or omitted),
//! and every one
//! runs on the CPU (both code generators where the build has LLVM), in SIMT form at 4 to 64
//! lanes by the reference interpreter, and on Vulkan (lavapipe at 4, 8 and 16 lanes; a
//! subset, since its shader compiles are slow). The two CPU code generators must agree bit for
//! bit (but for float atomic additions, whose order varies). Other results must agree: integers bit for bit, floats normwise within
//! 1e-4 (`f32`) or 1e-10 (`f64`) of the Cranelift CPU result, NaN where it has NaN; outputs
//! stored as `f16` or `bf16` within two of their units in the last place.
//!
//! Branch conditions and masks compare inputs, never computed values, so that a rounding
//! difference between targets cannot flip them.
//!
//! A second generator (`factors.rs`) draws the stdlib's factorizations (LU with pivoting
//! and its solve, QR, Q, least squares, the Jacobi eigensolver and SVD) on random stacks of
//! random, graded, singular, repeated-value and NaN matrices; they are compared the same way
//! (`TILEC_FUZZ_FACTOR_CASES` of them, default 14).
//!
//! The budget: `TILEC_FUZZ_CASES` kernels (default 60; Vulkan runs those with tiles of at most 256 elements),
//! from `TILEC_FUZZ_SEED` (default fixed, so CI is deterministic). A failure prints the seed
//! and the kernel. `tools/fuzz.sh --minutes N` runs it for longer with fresh seeds
//! (`TILEC_FUZZ_SECONDS`).

use std::collections::HashMap;
use tilec::driver::InstanceRequest;
use tilec::{CpuBackend, SessionOptions, SourceSet, Target};
use tilec_midend::{Const, Scalar};
use tilec_runtime::{ArgValue, HostArray};
use tilec_tests::Rng;

mod factors;

/// Tile extents the generator picks from (partial tiles come from the array extents).
const EXTENTS: &[usize] = &[1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 32];

/// One generated kernel and its arguments.
struct Case {
    seed: u64,
    elem: Scalar,
    /// The element type of the arrays `A`, `B`, `O` and `V`: `elem`, or `f16`/`bf16` storage
    /// for an `f32` kernel.
    store: Scalar,
    /// The kernel to launch: `fz` of `src`, or a kernel of the stdlib's `linalg.tile`.
    kernel: &'static str,
    src: String,
    /// What a failure prints: the generated source, or the stdlib kernel and its inputs.
    what: String,
    args: HashMap<String, ArgValue>,
    /// The arrays compared between targets.
    outputs: Vec<Output>,
    /// Whether Vulkan runs it (small tiles and shallow expressions).
    on_vulkan: bool,
    /// Whether it has atomics on a half array (`HA`): Vulkan must refuse it (E0504).
    half_atomics: bool,
    /// The factor on [`tolerance`] for float outputs: 1, or how much an ill-conditioned input
    /// magnifies rounding differences (reductions run in another order on each target).
    tol_scale: f64,
}

/// An output array of a [`Case`] and how targets are compared on it.
struct Output {
    name: &'static str,
    /// Its element type ([`tolerance`]).
    elem: Scalar,
    /// Whether the two CPU code generators must give the same bits (not where float atomic
    /// additions from parallel programs land in another order).
    same_bits: bool,
}

impl Output {
    fn new(name: &'static str, elem: Scalar) -> Output {
        Output { name, elem, same_bits: true }
    }
}

struct Gen {
    rng: Rng,
    t: &'static str,
    float: bool,
    r: usize,
    c: usize,
    /// Names of extra tile variables in scope (loop-carried tiles), besides `a` and `b`.
    vars: Vec<String>,
    /// Name of an integer loop variable in scope, if any.
    k: Option<String>,
}

/// A scalar literal of a float or an integer element type, drawn from `rng`.
fn lit(rng: &mut Rng, float: bool) -> String {
    if float {
        let v = [0.0, 0.5, 1.0, -1.5, 2.0, 3.25, -0.25][rng.int(0, 7) as usize];
        format!("{v:?}")
    } else {
        rng.int(-5, 9).to_string()
    }
}

impl Gen {
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.rng.int(0, xs.len() as i64) as usize]
    }

    fn chance(&mut self, percent: i64) -> bool {
        self.rng.int(0, 100) < percent
    }

    /// A scalar literal of the element type.
    fn lit(&mut self) -> String {
        lit(&mut self.rng, self.float)
    }

    fn tile_ty(&self) -> String {
        format!("tile<{}, {}, {}>", self.t, self.r, self.c)
    }

    /// A tile whose values come straight from the inputs (safe in comparisons).
    fn input(&mut self) -> String {
        match self.rng.int(0, 4) {
            0 => "a".into(),
            1 => "b".into(),
            2 => format!("{}::iota({})", self.tile_ty(), self.rng.int(0, 2)),
            _ => format!("{}::full({})", self.tile_ty(), self.lit()),
        }
    }

    fn leaf(&mut self) -> String {
        if !self.vars.is_empty() && self.chance(30) {
            return self.pick(&self.vars.clone()).clone();
        }
        if let (Some(k), true) = (self.k.clone(), self.chance(15)) {
            return format!("{}::full({k} as {})", self.tile_ty(), self.t);
        }
        self.input()
    }

    /// Clamps a float tile to `[-1e3, 1e3]` so that chains of products stay finite.
    fn clamp(&self, x: String) -> String {
        if self.float {
            format!("min(max({x}, -1000.0), 1000.0)")
        } else {
            x
        }
    }

    /// A tile expression of type `tile<T, R, C>`.
    fn tile(&mut self, depth: u32) -> String {
        if depth == 0 || self.chance(20) {
            return self.leaf();
        }
        let d = depth - 1;
        let cmp = *self.pick(&["<", "<=", ">", ">=", "==", "!="]);
        match self.rng.int(0, 19) {
            0 => format!("({} + {})", self.tile(d), self.tile(d)),
            1 => format!("({} - {})", self.tile(d), self.tile(d)),
            2 if self.float && self.chance(30) => {
                let x = format!("fma({}, {}, {})", self.tile(d), self.tile(d), self.tile(d));
                self.clamp(x)
            }
            2 => {
                let x = format!("({} * {})", self.tile(d), self.tile(d));
                self.clamp(x)
            }
            3 => format!("({} * {})", self.tile(d), self.lit()),
            4 => format!("min({}, {})", self.tile(d), self.tile(d)),
            5 => format!("max({}, {})", self.tile(d), self.lit()),
            6 => {
                let (p, q) = (self.input(), self.input());
                format!("where({p} {cmp} {q}, {}, {})", self.tile(d), self.tile(d))
            }
            7 => {
                let p = self.input();
                let l = self.lit();
                format!("where({p} {cmp} {l} && {p} != {l}, {}, {})", self.tile(d), self.lit())
            }
            8 if self.float => {
                let x = self.tile(d);
                match self.rng.int(0, 7) {
                    0 => format!("abs({x})"),
                    1 => format!("sqrt(abs({x}))"),
                    2 => format!("tanh({x})"),
                    3 => format!("exp(min({x}, 3.0))"),
                    4 => format!("log(abs({x}) + 1.0)"),
                    5 => format!("sin({x})"),
                    _ => format!("(-{x})"),
                }
            }
            8 => format!("abs({})", self.tile(d)),
            9 if self.float => format!("({} / (abs({}) + 1.0))", self.tile(d), self.tile(d)),
            9 => {
                let op = *self.pick(&["/", "%"]);
                format!("({} {op} {})", self.tile(d), self.tile(d))
            }
            10 if self.r == self.c => format!("transpose({})", self.tile(d)),
            11 if self.r == self.c && self.float => {
                let x = format!("(({} @ {}) * 0.125)", self.tile(d), self.tile(d));
                self.clamp(x)
            }
            12 => format!("({} + s)", self.tile(d)),
            13 if self.float => format!("(({} as i32) as {})", self.tile(d), self.t),
            13 => format!("(({} as f64) as i32)", self.tile(d)),
            14 => {
                let f = *self.pick(&["cumsum", "cummax", "cummin", "cumprod"]);
                let axis = self.rng.int(0, 2);
                let x = self.tile(d);
                // Products bounded: factors in [-2, 2].
                let x = if f == "cumprod" { format!("min(max({x}, -2), 2)") } else { x };
                format!("{f}({x}, {axis})")
            }
            15 => {
                let (axis, x) = (self.rng.int(0, 3), self.tile(d));
                let f = *self.pick(&["cumsum", "cummax", "cummin"]);
                match axis {
                    2 => format!("flip({x})"),
                    _ if self.chance(50) => format!("{f}({x}, {axis}, reverse = true)"),
                    _ => format!("flip({x}, {axis})"),
                }
            }
            // Signs from the inputs: Vulkan drivers need not keep the sign of a zero that
            // arithmetic produces (docs/language.md §16).
            16 if self.float && self.chance(50) => format!("copysign({}, {})", self.tile(d), self.input()),
            16 if self.float => format!("where(signbit({}), {}, {})", self.input(), self.tile(d), self.lit()),
            16 if self.chance(50) => format!("map(mix3, {}, {}, {})", self.tile(d), self.input(), self.lit()),
            16 if self.r * self.c <= 4096 => {
                format!("reshape(reshape({}, {}), {}, {})", self.tile(d), self.r * self.c, self.r, self.c)
            }
            16 => format!("reshape(reshape({}, {}, {}), {}, {})", self.tile(d), self.c, self.r, self.r, self.c),
            17 if self.chance(50) => format!("map(mix3, {}, {}, {})", self.tile(d), self.input(), self.lit()),
            17 => {
                let axis = self.rng.int(0, 2);
                format!("scan({}, {axis}, step2)", self.tile(d))
            }
            18 => {
                let (axis, x) = (self.rng.int(0, 2), self.tile(d));
                match self.rng.int(0, 3) {
                    0 => format!("sort({x}, {axis})"),
                    1 => format!("sort({x}, {axis}, descending = true)"),
                    _ => format!("(argsort({x}, {axis}, descending = {}) as {})", self.chance(50), self.t),
                }
            }
            _ => format!("({} - {})", self.tile(d), self.lit()),
        }
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn case(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let elem = [Scalar::F32, Scalar::F64, Scalar::I32][rng.int(0, 3) as usize];
    let (r, c) =
        (EXTENTS[rng.int(0, EXTENTS.len() as i64) as usize], EXTENTS[rng.int(0, EXTENTS.len() as i64) as usize]);
    let square = rng.int(0, 3) == 0;
    let c = if square { r } else { c };
    let (m, n) = (rng.int(1, 41) as usize, rng.int(1, 41) as usize);
    let depth = rng.int(1, 5) as u32;
    let t = elem.name();
    // Later additions draw from their own generator, so that the kernels of earlier seeds
    // keep their shapes and expressions (some f32 kernels' arrays become f16 or bf16).
    let mut more = Rng::new(seed ^ 0x5eed_f00d);
    let store = match (elem, more.int(0, 4)) {
        (Scalar::F32, 0) => Scalar::F16,
        (Scalar::F32, 1) => Scalar::BF16,
        _ => elem,
    };
    let st = store.name();
    let mut g = Gen { rng, t, float: elem.is_float(), r, c, vars: Vec::new(), k: None };
    let mut body = format!(
        "    let i = program_id(0) * {r};\n    let j = program_id(1) * {c};\n    let a = A[i:i+{r}, j:j+{c}];\n    let b = B[i:i+{r}, j:j+{c}];\n    let acc = {};\n",
        g.tile(depth)
    );
    g.vars.push("acc".into());
    let mut generic = String::new();
    if g.chance(35) {
        // A masked load at a row offset: elements past the array keep the tile's values.
        let (o, l) = (g.rng.int(0, 3), g.lit());
        body.push_str(&format!(
            "    let m = tile<{t}, {r}, {c}>::full({l});\n    m[:, :] = B[i+{o}:i+{o}+{r}, j:j+{c}];\n    acc = acc + m;\n"
        ));
    }
    if g.chance(50) {
        // A loop carrying the tile, its trip count a const parameter.
        // The scale a float const parameter.
        generic = format!("<const K: i32 = {}, const H: f64 = 0.5>", g.rng.int(0, 4));
        g.k = Some("k".into());
        let scale = if g.float { format!("(H as {t})") } else { "3".to_string() };
        let step = g.tile(depth.min(3));
        body.push_str(&format!("    for k in 0..K {{\n        acc = acc * {scale} + {step};\n    }}\n"));
        g.k = None;
    }
    if g.chance(40) {
        let l = g.lit();
        let (x, y) = (g.tile(depth.min(2)), g.tile(depth.min(2)));
        body.push_str(&format!(
            "    if s > {l} {{\n        acc = {x};\n    }} else {{\n        acc = acc - {y};\n    }}\n"
        ));
    }
    if g.chance(30) {
        // Rows and columns: a constant column and a run-time row (out of range: no change).
        let (j0, j1) = (g.rng.int(0, c as i64), g.rng.int(0, c as i64));
        body.push_str(&format!(
            "    acc[:, {j0}] = b[:, {j1}] + acc[:, {j0}];\n    acc[(s as i32) % {r}, :] += a[0, :];\n"
        ));
    }
    if g.chance(30) {
        // Through shared memory: every lane reads rows that other lanes wrote.
        body.push_str(&format!(
            "    let sh = shared<{t}, {r}, {c}>::zeros();\n    sh[0:{r}, 0:{c}] = acc;\n    sync();\n    acc = acc - sh[1:1+{r}, 0:{c}];\n"
        ));
    }
    if g.float && r == c && g.chance(40) {
        // A Cholesky factorization and a triangular solve on a well-conditioned SPD tile.
        let solve = *g.pick(&[
            "solve_left_lower_",
            "solve_left_lower_t_",
            "solve_right_lower_t_",
            "solve_right_upper_",
            "solve_left_upper_unit_",
        ]);
        body.push_str(&format!(
            "    let spd = (a @ transpose(a)) * 0.0625 + tile<{t}, {r}, {r}>::eye() * 4.0;\n    spd.cholesky_(0.000001);\n    spd.{solve}(acc);\n"
        ));
    }
    if g.chance(30) {
        // Ranges of tiles: a block of `b` at another offset into a block of `acc`, a block
        // to the edges updated with a scalar.
        let (h, w) = (g.rng.int(1, r as i64 + 1), g.rng.int(1, c as i64 + 1));
        let (r0, c0) = (g.rng.int(0, r as i64 - h + 1), g.rng.int(0, c as i64 - w + 1));
        let (r1, c1) = (g.rng.int(0, r as i64 - h + 1), g.rng.int(0, c as i64 - w + 1));
        let l = g.lit();
        body.push_str(&format!(
            "    acc[{r0}:{}, {c0}:{}] = b[{r1}:{}, {c1}:{}] - acc[{r0}:{}, {c0}:{}];
    acc[{r1}:, :{}] += {l};
",
            r0 + h,
            c0 + w,
            r1 + h,
            c1 + w,
            r0 + h,
            c0 + w,
            c1 + w
        ));
    }
    if g.chance(30) {
        // Broadcasts: a row vector, a column, a one-row range.
        let (i0, j0) = (g.rng.int(0, r as i64), g.rng.int(0, c as i64));
        body.push_str(&format!(
            "    acc = acc - b[{i0}, :] + column(a[:, {j0}]) - a[{i0}:{}, :];
    acc += a[0, :];
",
            i0 + 1
        ));
    }
    if g.float && r == c && g.chance(30) {
        // LU without pivoting of a well-conditioned SPD tile.
        body.push_str(&format!(
            "    let f = (b @ transpose(b)) * 0.0625 + tile<{t}, {r}, {r}>::eye() * 4.0;
    f.lu_();
    acc = acc + f;
"
        ));
    }
    if more.int(0, 100) < 30 {
        // A range of the tile at a run-time start (past either end for some `s`): a window
        // of at most 4x4, since GPU code grows with its elements times the registers per
        // lane (language.md §7.5).
        let (h, w) = (more.int(1, r.min(4) as i64 + 1), more.int(1, c.min(4) as i64 + 1));
        let (c0, c1) = (more.int(0, c as i64 - w + 1), more.int(0, c as i64 - w + 1));
        let l = lit(&mut more, g.float);
        body.push_str(&format!(
            "    let q = (s as i32) % {r} - 1;\n    acc[q:q+{h}, {c0}:{}] = b[q:q+{h}, {c1}:{}] - acc[q:q+{h}, {c0}:{}] * {l};\n",
            c0 + w,
            c1 + w,
            c0 + w
        ));
    }
    let mut more2 = Rng::new(seed ^ 0x11e5_c01d);
    if more2.int(0, 100) < 30 {
        // A column and a row at run-time indices (out of range for some `s`: reads give
        // zeros, writes change nothing).
        let (j, o) = (more2.int(0, c as i64), more2.int(-1, 2));
        let l = lit(&mut more2, g.float);
        body.push_str(&format!(
            "    let q2 = (s as i32) % {c} + {o};\n    acc[:, q2] = acc[:, q2] * {l} - b[:, {j}];\n    acc[q2 - {o}, :] = acc[q2, :] + a[q2 - 1, :];\n"
        ));
    }
    let long = *[0, 0, 65, 97, 128, 200].get(more.int(0, 6) as usize).unwrap_or(&0);
    if long > 0 {
        // A vector longer than 64 elements (distributed over the lanes on GPUs): a masked
        // load, arithmetic with a reduction of `acc`, an element written and one read at
        // run-time indices, a scan and a whole-vector reduction, stored by one program.
        let (l1, l2, l3) = (lit(&mut more, g.float), lit(&mut more, g.float), lit(&mut more, g.float));
        let (k1, k2) = (more.int(0, long as i64), more.int(0, long as i64));
        body.push_str(&format!(
            "    let v = tile<{t}, {long}>::full({l1});
    v[:] = V[0:{long}];
    v = v * {l2} + sum(acc);
    v[(s as i32) + {k1}] = {l3};
    let e = v[(s as i32) * 3 + {k2}];
    if program_id(0) == 0 {{
        if program_id(1) == 0 {{
            W[0:{long}] = {};
            W[{long}] = max(v) - e;
        }}
    }}
",
            if g.float { "cumsum(v, 0) * 0.125" } else { "cumsum(min(max(v, -50), 50), 0)" }
        ));
    }
    if store.is_half() {
        // Within f16's range: two targets' f32 results just below and above 65520 would
        // round to 65504 and to infinity.
        body.push_str("    acc = min(max(acc, -60000.0), 60000.0);\n");
    }
    let mut more3 = Rng::new(seed ^ 0x6a7e_5ca7);
    let gathers = more3.int(0, 100) < 35;
    if gathers {
        // Gathers (language §7.6) through index tiles of run-time positions, some out of the
        // arrays (reads give zeros; the masked load keeps its fill): rows with a column
        // slice, columns, and one position per element from the inputs.
        let (p, o) = (more3.int(1, 6), more3.int(-2, 3));
        let l = lit(&mut more3, g.float);
        let pos = if g.float { "(a * 4.0) as i32" } else { "a" };
        body.push_str(&format!(
            "    let gr = (tile<i32, {r}>::iota(0) * {p} + (s as i32)) % {} + i + {o};
    let gc = (tile<i32, {c}>::iota(0) * {p} + {o}) % {} + j;
    let gm = tile<{t}, {r}, {c}>::full({l});
    gm[:] = B[gr, j:j+{c}];
    acc = acc + gm - A[i:i+{r}, gc] + B[({pos}) % {}, ({pos}) % {}];
",
            r + 2,
            c + 1,
            m + 1,
            n + 1
        ));
    }
    if gathers && more3.int(0, 100) < 50 {
        // A scatter of rows to distinct positions of this program's block (a permutation:
        // `p2` and `r` coprime), clipped at the array's edge.
        let p2 = (1..=r).rev().find(|k| gcd(*k, r) == 1 && more3.int(0, 2) == 0).unwrap_or(1);
        let q = more3.int(0, r as i64);
        body.push_str(&format!(
            "    O[(tile<i32, {r}>::iota(0) * {p2} + {q}) % {r} + i, j:j+{c}] = acc;
"
        ));
    } else if g.chance(30) {
        // Under a mask of the inputs: the masked-off elements keep the 7 they were given.
        let (p, l) = (g.input(), g.lit());
        body.push_str(&format!("    masked_store(O[i:i+{r}, j:j+{c}], acc, {p} > {l});\n"));
    } else {
        body.push_str(&format!("    O[i:i+{r}, j:j+{c}] = acc;\n"));
    }
    // Index reductions on integer tiles only: float results may differ in the last bit
    // between targets, and a tie then picks another index.
    let rows = if g.float {
        *g.pick(&["sum", "max_axis", "min_axis"])
    } else {
        *g.pick(&["sum", "max_axis", "min_axis", "argmax", "argmin"])
    };
    let whole = *g.pick(&["sum", "max", "min"]);
    body.push_str(&format!(
        "    if program_id(1) == 0 {{\n        P[i:i+{r}] = {rows}(acc, 1);\n        Q[i] = {whole}(acc);\n    }}\n"
    ));
    if g.chance(40) {
        body.push_str(&format!("    atomic_add(Z[i:i+{r}], sum(acc, 1));\n"));
    }
    if more3.int(0, 100) < 35 {
        // Scatter-maxima and minima (repeated positions: the result does not depend on the
        // order) and a fetch-and-add whose old values, at distinct positions of rows that
        // only this program updates, are the starting zeros. No NaN: their sign bits differ between
        // targets, and totalOrder tells them apart.
        let (f, p4) = (if more3.int(0, 2) == 0 { "atomic_max" } else { "atomic_min" }, more3.int(1, 4));
        let z = if g.float { "0.0" } else { "0" };
        body.push_str(&format!(
            "    let rs = sum(acc, 1);\n    {f}(Y[(tile<i32, {r}>::iota(0) * {p4} + i) % {} - 1], where(rs == rs, rs, {z}));\n    if program_id(1) == 0 {{\n        let olds = atomic_add(Y2[tile<i32, {r}>::iota(0) + i], rs);\n        Y2[i:i+{r}] = olds + rs;\n    }}\n",
            m + 1
        ));
    }
    if gathers && more3.int(0, 100) < 50 {
        // A scatter-add through repeated and out-of-range positions.
        let p3 = more3.int(1, 4);
        body.push_str(&format!(
            "    atomic_add(Z[(tile<i32, {r}>::iota(0) * {p3} + i) % {} - 1], sum(acc, 1));\n",
            m + 1
        ));
    }
    let mut more4 = Rng::new(seed ^ 0x0f16_bf16);
    if g.float && more4.int(0, 100) < 35 {
        // Half arithmetic on the loaded inputs (multiples of 1/4, exact in every type): each
        // operation rounded to f16 or bf16 on every target alike, so the sum is exact too.
        let h = if more4.int(0, 2) == 0 { "f16" } else { "bf16" };
        let (l, l2) = (lit(&mut more4, true), lit(&mut more4, true));
        body.push_str(&format!(
            "    let ha = a as {h};\n    let hb = b as {h};\n    let hx = ha * {l} + ha / (abs(hb) + 0.7) - sqrt(abs(ha)) * hb;\n    acc = acc + (where(ha > hb, hx, hb * {l2}) as {t}) + (sum(hb, 1)[0] as {t});\n"
        ));
    }
    let mut more5 = Rng::new(seed ^ 0x00a7_0f16);
    let half_atomics = store.is_half() && more5.int(0, 100) < 60;
    if half_atomics {
        // Atomics on the half array `HA`: a scatter-maximum or -minimum through repeated
        // positions (rounding is monotonic, so the order does not matter), or an exchange and
        // a fetch-and-add at positions only this program updates (old values: the starting
        // 0.5, then the exchanged values), each operand rounded to the half type.
        let z = "where(hs == hs, hs, 0.0)";
        let at = format!("tile<i32, {r}>::iota(0)");
        body.push_str("    let hs = sum(acc, 1);\n");
        body.push_str(&match more5.int(0, 3) {
            0 => format!("    atomic_max(HA[({at} * {} + i) % {} - 1], {z});\n", more5.int(1, 4), m + 1),
            1 => format!("    atomic_min(HA[({at} * {} + i) % {} - 1], {z});\n", more5.int(1, 4), m + 1),
            _ => format!(
                "    if program_id(1) == 0 {{\n        let was = atomic_xchg(HA[{at} + i], {z} * 0.5);\n        atomic_add(HA[{at} + i], was + {z});\n    }}\n"
            ),
        });
    }
    let mut more6 = Rng::new(seed ^ 0x7095_c0a5);
    let cas = more6.int(0, 100) < 45;
    if cas {
        // `topk`, `join`/`split`, `row`, `inf`/`nan` (in the instance's type; each a no-op on
        // finite values), then a compare-and-swap at positions only this program updates:
        // the even ones match the starting value and take the row sums, and the old values
        // (the starting value everywhere) are added back.
        let (t, k) = (g.t, more6.int(1, c as i64 + 1));
        let (one, seven) = if g.float { ("0.5", "7.0") } else { ("1", "7") };
        let odd = if g.float { " + min(acc, inf) - acc + where(a != a, nan, max(b, -inf)) - b" } else { "" };
        // `topk` (a sorting network through shared memory on GPUs) only in kernels that
        // Vulkan does not run: lavapipe's shader compiler takes minutes on them.
        let (top, tops) = if r * c > 256 {
            (
                format!("    let (tv, ti) = topk(a, {k}, 1);\n"),
                format!(" + tile<{t}, {r}, {c}>::full(sum(tv) + sum(ti as {t}))"),
            )
        } else {
            (String::new(), String::new())
        };
        body.push_str(&format!(
            "{top}    let (x0, x1) = split(join(sum(a, 1), max_axis(b, 1)));\n    let ex = acc + column(x0 - x1) + row(sum(b, 0)){odd}{tops};\n    if program_id(1) == 0 {{\n        let at = tile<i32, {r}>::iota(0);\n        let was = atomic_cas(CS[at + i], where(at % 2 == 0, {one}, {seven}), sum(ex, 1));\n        atomic_add(CS[at + i], was);\n    }}\n"
        ));
    }
    // An optional array, given or omitted: read under `present` and past it (zeros when
    // omitted), and written (nothing when omitted).
    let opt_given = more4.int(0, 2) == 0;
    if more4.int(0, 100) < 40 {
        body.push_str(&format!(
            "    if present(Opt) {{\n        acc = acc - Opt[i:i+{r}, j:j+{c}];\n    }}\n    acc = acc + Opt[i:i+{r}, j:j+{c}];\n    OptOut[i:i+{r}, j:j+{c}] = acc;\n"
        ));
    }
    let src = format!(
        "fn mix3<U>(x: U, y: U, z: U) -> U {{\n    max(x, y) - z\n}}\n\nfn step2<U>(a: U, x: U) -> U {{\n    max(a - x, x)\n}}\n\nkernel fz{generic}(A: {st}[M, N], B: {st}[M, N], O: mut {st}[M, N], P: mut {t}[M], Q: mut {t}[M], Z: mut {t}[M], Y: mut {t}[M], Y2: mut {t}[M], V: {st}[L], W: mut {t}[201], Opt: {t}[M, N]?, OptOut: mut {t}[M, N]?, HA: mut {st}[M]?, CS: mut {t}[M]?, s: {t}) grid(cdiv(M, {r}), cdiv(N, {c})) {{\n{body}}}\n"
    );
    let mut rng = Rng::new(seed ^ 0xabcdef);
    let vals = |rng: &mut Rng, len: usize| -> Vec<f64> {
        (0..len).map(|_| if elem.is_float() { rng.int(-16, 17) as f64 / 4.0 } else { rng.int(-9, 10) as f64 }).collect()
    };
    let arr =
        |ty: Scalar, d: Vec<f64>, shape: &[u64]| ArgValue::Array(HostArray::from_f64_as(ty, &d, shape).expect("array"));
    let (mu, nu) = (m as u64, n as u64);
    let mut args = HashMap::new();
    args.insert("A".to_string(), arr(store, vals(&mut rng, m * n), &[mu, nu]));
    args.insert("B".to_string(), arr(store, vals(&mut rng, m * n), &[mu, nu]));
    args.insert("O".to_string(), arr(store, vec![7.0; m * n], &[mu, nu]));
    args.insert("P".to_string(), arr(elem, vec![7.0; m], &[mu]));
    args.insert("Q".to_string(), arr(elem, vec![7.0; m], &[mu]));
    args.insert("Z".to_string(), arr(elem, vec![0.0; m], &[mu]));
    args.insert("Y".to_string(), arr(elem, vec![0.0; m], &[mu]));
    args.insert("Y2".to_string(), arr(elem, vec![0.0; m], &[mu]));
    let nv = more.int(1, 221) as usize;
    args.insert("V".to_string(), arr(store, vals(&mut more, nv), &[nv as u64]));
    args.insert("W".to_string(), arr(elem, vec![7.0; 201], &[201]));
    if opt_given {
        args.insert("Opt".to_string(), arr(elem, vals(&mut more4, m * n), &[mu, nu]));
        args.insert("OptOut".to_string(), arr(elem, vec![7.0; m * n], &[mu, nu]));
    }
    if half_atomics {
        args.insert("HA".to_string(), arr(store, vec![0.5; m], &[mu]));
    }
    if cas {
        args.insert("CS".to_string(), arr(elem, vec![if elem.is_float() { 0.5 } else { 1.0 }; m], &[mu]));
    }
    let s = vals(&mut rng, 1)[0];
    let sc = if elem.is_float() { Const::Float(s, elem) } else { Const::Int(s as i64, elem) };
    args.insert("s".to_string(), ArgValue::Scalar(sc));
    let on_vulkan = r * c <= 256;
    let mut outputs: Vec<Output> = ["O", "P", "Q", "Z", "W", "Y", "Y2", "OptOut"]
        .into_iter()
        .map(|o| Output::new(o, if o == "O" { store } else { elem }))
        .collect();
    if half_atomics {
        outputs.push(Output::new("HA", store));
    }
    if cas {
        outputs.push(Output::new("CS", elem));
    }
    // Float atomic additions from parallel programs land in any order.
    for o in outputs.iter_mut().filter(|o| matches!(o.name, "Z" | "Y2" | "HA" | "CS")) {
        o.same_bits = false;
    }
    let what = src.clone();
    Case { seed, elem, store, kernel: "fz", src, what, args, outputs, on_vulkan, half_atomics, tol_scale: 1.0 }
}

/// How far `got` is from `want`: 0 when they agree (module docs), else a measure above the
/// tolerance (infinite when NaNs or infinities differ).
fn distance(elem: Scalar, got: &[f64], want: &[f64]) -> f64 {
    let mut scale: f64 = 1.0;
    for w in want.iter().filter(|w| w.is_finite()) {
        scale = scale.max(w.abs());
    }
    let mut worst: f64 = 0.0;
    for (g, w) in got.iter().zip(want) {
        if g.is_nan() != w.is_nan() || (w.is_infinite() && g != w) || (g.is_infinite() && g != w) {
            return f64::INFINITY;
        }
        if w.is_finite() {
            let d = (g - w).abs() / scale;
            if elem.is_int() && g != w {
                return f64::INFINITY;
            }
            worst = worst.max(d);
        }
    }
    worst
}

/// The tolerance of `distance` for results stored as `elem`: for `f16` and `bf16` two units
/// in the last place of the largest value (a 1e-4 difference in `f32` may round to
/// neighbouring half values).
fn tolerance(elem: Scalar) -> f64 {
    match elem {
        Scalar::F32 => 1e-4,
        Scalar::F64 => 1e-10,
        Scalar::F16 => 2.0 * 2f64.powi(-10),
        Scalar::BF16 => 2.0 * 2f64.powi(-7),
        _ => 0.0,
    }
}

/// Runs one case everywhere; returns a description of the first disagreement.
fn check(c: &Case, vulkan: Option<&tilec_runtime::VulkanDevice>) -> Result<(), String> {
    let file = if c.kernel == "fz" { "fuzz.tile" } else { "stdlib/linalg.tile" };
    let set = SourceSet::with_stdlib(file, c.src.clone());
    let fail = |what: String| Err(format!("seed {}: {what}\n{}", c.seed, c.what));
    // Every target through the driver's session, as `tilec run` and the APIs launch; the IR
    // verifier runs after every pass.
    let session = tilec::driver::Session::new(set, SessionOptions { verify: true, ..Default::default() });
    let request = InstanceRequest::of_args(&c.args, &HashMap::new());
    let launch_on = |target: Target| -> Result<(tilec_runtime::Bound, tilec_runtime::LaunchValues), tilec::Error> {
        let inst = session.instance(c.kernel, target, &request)?;
        let (l, b) = session.run(&inst, c.args.clone(), 1)?;
        Ok((b, l.values))
    };
    let cpu = match session.instance(c.kernel, Target::CPU, &request) {
        Ok(i) => i,
        Err(e) => return fail(format!("the generated kernel does not compile: {e}")),
    };
    let (reference, launch) = match launch_on(Target::CPU) {
        Ok(x) => x,
        Err(e) => return fail(format!("CPU launch failed: {e}")),
    };
    let want = |n: &str| reference.array(n).expect("output").to_f64_vec();
    let compare = |target: &str, got: &dyn Fn(&str) -> Vec<f64>| -> Result<(), String> {
        for out in &c.outputs {
            let (g, w) = (got(out.name), want(out.name));
            let tol = tolerance(out.elem) * if out.elem.is_float() { c.tol_scale } else { 1.0 };
            let d = distance(out.elem, &g, &w);
            if d > tol {
                let k = g.iter().zip(&w).position(|(x, y)| distance(out.elem, &[*x], &[*y]) > tol);
                let at = k.map_or(String::new(), |k| format!(" (element {k}: got {}, want {})", g[k], w[k]));
                return fail(format!("{target}: `{}` differs from the Cranelift CPU result by {d:e}{at}", out.name));
            }
        }
        Ok(())
    };
    let vulkan_only = std::env::var("TILEC_FUZZ_VULKAN_ONLY").as_deref() == Ok("1");
    if CpuBackend::Llvm.available() && !vulkan_only {
        let (b, _) = launch_on(Target::Cpu(CpuBackend::Llvm)).map_err(|e| format!("seed {}: LLVM: {e}", c.seed))?;
        // The two CPU code generators give the same bits (NaN payloads aside), except where
        // float atomic additions from parallel programs land in another order: the driver may
        // run either for the same launch (tiered compilation).
        for out in c.outputs.iter().filter(|o| o.same_bits) {
            let (g, w) = (b.array(out.name).expect("output").to_f64_vec(), want(out.name));
            let same = |(x, y): (&f64, &f64)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan());
            if let Some(k) = g.iter().zip(&w).position(|p| !same(p)) {
                return fail(format!("CPU (LLVM): `{}` element {k} is {}, Cranelift's {}", out.name, g[k], w[k]));
            }
        }
        compare("CPU (LLVM)", &|n| b.array(n).expect("output").to_f64_vec())?;
    }
    let (module, kernel) = (cpu.module(), cpu.kernel());
    for lanes in [4, 8, 16, 32, 64].into_iter().filter(|_| !vulkan_only) {
        let arrays = match tilec_tests::run_simt(module, kernel, &c.args, lanes, launch.grid) {
            Ok(a) => a,
            Err(e) => return fail(format!("SIMT form at {lanes} lanes: {e}")),
        };
        compare(&format!("SIMT form at {lanes} lanes"), &|n| arrays[n].to_f64_vec())?;
    }
    if let (Some(dev), true) = (vulkan, c.on_vulkan) {
        let ran = launch_on(Target::Vulkan { device: None });
        if c.half_atomics {
            return match ran {
                Err(e) if e.to_string().contains("not supported on Vulkan") => Ok(()),
                other => fail(format!("Vulkan: atomics on a half array, not refused: {:?}", other.err())),
            };
        }
        let b = match ran {
            Ok((b, _)) => b,
            Err(e) => return fail(format!("Vulkan: {e}")),
        };
        compare(&format!("Vulkan on {}", dev.name()), &|n| b.array(n).expect("output").to_f64_vec())?;
    }
    Ok(())
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[test]
fn random_kernels_agree_on_every_target() {
    let cases = env_u64("TILEC_FUZZ_CASES", 60);
    let seed = env_u64("TILEC_FUZZ_SEED", 0x0071_11ec);
    let dev = tilec_runtime::VulkanDevice::open(None).ok();
    if dev.is_none() && std::env::var("TILEC_REQUIRE_VULKAN").as_deref() == Ok("1") {
        panic!("TILEC_REQUIRE_VULKAN=1 but no Vulkan device");
    }
    if let (Some(d), Ok(w)) = (&dev, std::env::var("LP_NATIVE_VECTOR_WIDTH")) {
        if d.name().starts_with("llvmpipe") {
            assert_eq!(
                d.subgroup_size() * 32,
                w.parse::<u32>().expect("a width"),
                "lavapipe's subgroup follows the width"
            );
        }
    }
    // tools/fuzz.sh: as many kernels as fit in TILEC_FUZZ_SECONDS instead of a count.
    let deadline = std::env::var("TILEC_FUZZ_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s));
    let mut failures = Vec::new();
    let mut i = 0;
    let vulkan_only = std::env::var("TILEC_FUZZ_VULKAN_ONLY").as_deref() == Ok("1");
    while deadline.map_or(i < cases, |d| std::time::Instant::now() < d) {
        let c = case(seed.wrapping_add(i));
        if vulkan_only && !c.on_vulkan {
            i += 1;
            continue;
        }
        let dev = dev
            .as_ref()
            .filter(|d| (c.elem != Scalar::F64 || d.supports_f64()) && (c.store == c.elem || d.supports_storage16()));
        if let Err(e) = check(&c, dev) {
            eprintln!("FUZZ FAILURE {e}\n");
            failures.push(c.seed);
        }
        i += 1;
    }
    let on_vulkan = (0..i).filter(|&k| dev.is_some() && case(seed.wrapping_add(k)).on_vulkan).count();
    eprintln!("fuzzed {i} kernels from seed {seed} ({on_vulkan} of them also on Vulkan)");
    assert!(
        failures.is_empty(),
        "{} of {i} kernels disagree; seeds {failures:?} (TILEC_FUZZ_SEED=<seed> TILEC_FUZZ_CASES=1 reruns one)",
        failures.len()
    );
}

/// The Vulkan kernels again with lavapipe's subgroup at 4, 8 and 16 lanes: each width
/// (`LP_NATIVE_VECTOR_WIDTH` 128, 256, 512, read when the driver loads) in a child process of
/// this test binary, comparing Vulkan with the CPU only (`TILEC_FUZZ_VULKAN_ONLY=1`); the
/// width the parent already ran is skipped.
#[test]
fn random_kernels_agree_on_vulkan_at_4_8_16_lanes() {
    let Ok(dev) = tilec_runtime::VulkanDevice::open(None) else {
        eprintln!("skipped: no Vulkan device");
        return;
    };
    if !dev.name().starts_with("llvmpipe") || std::env::var("TILEC_FUZZ_VULKAN_ONLY").is_ok() {
        return;
    }
    let current = (dev.subgroup_size() * 32).to_string();
    drop(dev);
    let exe = std::env::current_exe().expect("test binary");
    for width in ["128", "256", "512"].into_iter().filter(|w| *w != current) {
        let status = std::process::Command::new(&exe)
            .args(["--exact", "random_kernels_agree_on_every_target", "--nocapture"])
            .env("LP_NATIVE_VECTOR_WIDTH", width)
            .env("TILEC_FUZZ_VULKAN_ONLY", "1")
            .status()
            .expect("runs the child test");
        assert!(status.success(), "Vulkan results differ from the CPU with LP_NATIVE_VECTOR_WIDTH={width}");
    }
}

/// The generator itself: deterministic per seed, and it makes every construct it claims.
#[test]
fn the_generator_covers_its_constructs() {
    let all: String = (0..300).map(|s| case(s).src).collect();
    for construct in [
        "for k in",
        "if s >",
        "where(",
        "iota(",
        "transpose(",
        " @ ",
        "exp(",
        "sum(acc, 1)",
        " % ",
        "f64",
        "i32",
        "m[:, :] = B[i+1",
        "const K",
        "sync()",
        "cholesky_",
        "solve_",
        "atomic_add",
        "max_axis",
        "Q[i] = min",
        "acc[",
        "column(",
        "lu_()",
        "f16[M, N]",
        "bf16[M, N]",
        "acc[q:q+",
        "tile<f32, 200>",
        "tile<i32, 65>",
        "v[(s as i32) + ",
        "acc[:, q2] = ",
        "flip(",
        "reverse = true)",
        "copysign(",
        "signbit(",
        "map(mix3, ",
        "reshape(reshape(",
        ", step2)",
        "const H: f64",
        "= argmax(acc, 1)",
        "sort(",
        "descending = true)",
        "argsort(",
        "gm[:] = B[gr, ",
        "A[i:i+1, gc]",
        "B[((a * 4.0) as i32) % ",
        "% 1 + i, j:j+",
        "atomic_add(Z[(tile<i32, ",
        "atomic_max(Y[",
        "atomic_min(Y[",
        "    let olds = atomic_add(Y2[",
        "let ha = a as f16;",
        "let ha = a as bf16;",
        "sum(hb, 1)[0] as f64",
        "    if present(Opt) {",
        "    atomic_max(HA[(tile<i32, ",
        "    atomic_min(HA[(tile<i32, ",
        "let was = atomic_xchg(HA[tile<i32, ",
        "let (tv, ti) = topk(a, ",
        "split(join(sum(a, 1), ",
        "where(a != a, nan, max(b, -inf))",
        "let was = atomic_cas(CS[at + i], ",
    ] {
        assert!(all.contains(construct), "no generated kernel uses `{construct}`");
    }
    assert_eq!(case(42).src, case(42).src);
}
