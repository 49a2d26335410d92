//! Parses the text form of the Tile IR (`print.rs`) back into functions and modules, so that
//! IR can be written by hand: the pass file tests (`midend/tests/passes/*.tir`) give an input
//! module, run one pass and compare the printed result. `print(parse(print(m))) == print(m)`
//! for every module (tested on the stdlib and the examples).
//!
//! The grammar is line-based, one op a line:
//!
//! ```text
//! module   := ("// @N" function)*            (or a single function)
//! function := ("kernel" | "fn" | "launch") " @" NAME "(" params ")" [" -> (" types ")"] " {"
//!             op* "}"
//! op       := [values " = "] MNEMONIC [" " values] [" : " types] [" {" [" ^(" params ")"]]
//!             (a line ending in "{" opens a region, closed by "}" or "} else {" ...)
//! ```
//!
//! Values keep their numbers (`%7` is `Value(7)`); numbers that appear nowhere get an `i32`
//! placeholder type. Source locations are not part of the text: parsed ops have none. Lines
//! that are empty or start with `;` or `//` are skipped.

use crate::ir::*;
use crate::types::{Scalar, Type};
use std::collections::HashMap;
use std::fmt;

/// A parse failure: the 1-based line and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IR text, line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

type R<T> = Result<T, String>;

/// Splits `s` at top-level `sep` (not inside `<>`, `[]` or `()`), trimming the parts.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in s.char_indices() {
        match c {
            '<' | '[' | '(' => depth += 1,
            '>' | ']' | ')' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(s[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() || !out.is_empty() {
        out.push(last);
    }
    out
}

fn scalar(s: &str) -> R<Scalar> {
    Scalar::from_name(s.trim()).ok_or_else(|| format!("unknown scalar type `{s}`"))
}

/// A type as `Type`'s `Display` writes it.
pub fn parse_type(s: &str) -> R<Type> {
    let s = s.trim();
    if let Some(inner) = s.strip_prefix("tile<").and_then(|r| r.strip_suffix('>')) {
        let parts = split_top(inner, ',');
        let elem = scalar(parts.first().ok_or("empty tile type")?)?;
        let shape =
            parts[1..].iter().map(|d| d.parse::<u32>().map_err(|_| format!("bad extent `{d}`"))).collect::<R<_>>()?;
        return Ok(Type::Tile { elem, shape });
    }
    let (mutable, rest) = match s.strip_prefix("mut ") {
        Some(r) => (true, r),
        None => (false, s),
    };
    if let Some(open) = rest.find('[') {
        let dims = rest[open + 1..].strip_suffix(']').ok_or_else(|| format!("bad array type `{s}`"))?;
        let rank = split_top(dims, ',').len() as u8;
        return Ok(Type::Array { elem: scalar(&rest[..open])?, rank, mutable });
    }
    Ok(Type::Scalar(scalar(s)?))
}

fn value(s: &str) -> R<Value> {
    s.trim()
        .strip_prefix('%')
        .and_then(|n| n.parse().ok())
        .map(Value)
        .ok_or_else(|| format!("expected a value, found `{s}`"))
}

fn values(s: &str) -> R<Vec<Value>> {
    split_top(s, ',').into_iter().filter(|p| !p.is_empty()).map(value).collect()
}

fn indices(s: &str) -> R<Vec<Index>> {
    split_top(s, ',')
        .into_iter()
        .map(|p| match p {
            "i" => Ok(Index::At),
            p => p
                .strip_prefix('+')
                .and_then(|k| k.parse().ok())
                .map(Index::Slice)
                .ok_or_else(|| format!("bad index `{p}`")),
        })
        .collect()
}

fn bracketed<'a>(rest: &'a str, what: &str) -> R<&'a str> {
    rest.strip_prefix('[').and_then(|r| r.strip_suffix(']')).ok_or_else(|| format!("`{what}` needs `[..]`"))
}

fn axis(s: &str) -> R<u8> {
    s.parse().map_err(|_| format!("bad axis `{s}`"))
}

/// The op of a mnemonic (`result` types the constants).
fn op_kind(m: &str, result: Option<&Type>) -> R<OpKind> {
    let elem = || result.map(|t| t.elem()).ok_or_else(|| format!("`{m}` needs a result type"));
    if let Some(c) = m.strip_prefix("const ") {
        let s = elem()?;
        return Ok(OpKind::Const(match s {
            Scalar::Bool => Const::Bool(c == "true"),
            s if s.is_float() => Const::Float(c.parse().map_err(|_| format!("bad float `{c}`"))?, s),
            s => Const::Int(c.parse().map_err(|_| format!("bad integer `{c}`"))?, s),
        }));
    }
    if let Some(a) = m.strip_prefix("rank1 ") {
        return Ok(OpKind::Rank1(a.parse().map_err(|_| format!("bad alpha `{a}`"))?));
    }
    if let Some(i) = m.strip_prefix("call @") {
        return Ok(OpKind::Call(FuncId(i.parse().map_err(|_| format!("bad callee `{i}`"))?)));
    }
    for (p, f) in [
        ("load_into", OpKind::LoadInto as fn(Vec<Index>) -> OpKind),
        ("load", OpKind::Load),
        ("store_masked", OpKind::StoreMasked),
        ("store", OpKind::Store),
        ("atomic_add", OpKind::AtomicAdd),
    ] {
        if let Some(rest) = m.strip_prefix(p) {
            if rest.starts_with('[') {
                return Ok(f(indices(bracketed(rest, p)?)?));
            }
        }
    }
    for (p, f) in [
        ("alloc_shared", OpKind::AllocShared as fn(Vec<u32>) -> OpKind),
        ("extract_block", OpKind::ExtractBlock),
        ("insert_block", OpKind::InsertBlock),
    ] {
        if let Some(rest) = m.strip_prefix(p) {
            let dims = bracketed(rest, p)?;
            let shape = split_top(dims, ',')
                .iter()
                .map(|d| d.parse().map_err(|_| format!("bad extent `{d}`")))
                .collect::<R<_>>()?;
            return Ok(f(shape));
        }
    }
    let (head, attr) = match m.split_once('.') {
        Some((h, a)) => (h, Some(a)),
        None => (m, None),
    };
    let bin = |n: &str| match n {
        "add" => Some(BinOp::Add),
        "sub" => Some(BinOp::Sub),
        "mul" => Some(BinOp::Mul),
        "div" => Some(BinOp::Div),
        "rem" => Some(BinOp::Rem),
        "min" => Some(BinOp::Min),
        "max" => Some(BinOp::Max),
        "and" => Some(BinOp::And),
        "or" => Some(BinOp::Or),
        _ => None,
    };
    let un = |n: &str| {
        [
            UnOp::Neg,
            UnOp::Not,
            UnOp::Abs,
            UnOp::Sqrt,
            UnOp::Exp,
            UnOp::Log,
            UnOp::Sin,
            UnOp::Cos,
            UnOp::Tanh,
            UnOp::Exp2,
            UnOp::Log2,
            UnOp::Trunc,
            UnOp::RoundF16,
            UnOp::RoundBf16,
        ]
        .into_iter()
        .find(|u| format!("{u:?}").to_lowercase() == n)
    };
    let reduce = |n: &str| match n {
        "sum" => Some(Reduce::Sum),
        "max" => Some(Reduce::Max),
        "min" => Some(Reduce::Min),
        "prod" => Some(Reduce::Prod),
        _ => None,
    };
    let rmw = |n: &str| [Rmw::Add, Rmw::Xchg, Rmw::Min, Rmw::Max, Rmw::Cas].into_iter().find(|k| k.name() == n);
    Ok(match (head, attr) {
        ("atomic_rmw", Some(k)) if rmw(k).is_some() => OpKind::AtomicRmw(rmw(k).expect("checked")),
        (h, None) if bin(h).is_some() => OpKind::Bin(bin(h).expect("checked")),
        (h, None) if un(h).is_some() => OpKind::Un(un(h).expect("checked")),
        ("cmp", Some(c)) => OpKind::Cmp(match c {
            "eq" => CmpOp::Eq,
            "ne" => CmpOp::Ne,
            "lt" => CmpOp::Lt,
            "le" => CmpOp::Le,
            "gt" => CmpOp::Gt,
            "ge" => CmpOp::Ge,
            _ => return Err(format!("unknown comparison `{c}`")),
        }),
        ("cast", Some(s)) => OpKind::Cast(scalar(s)?),
        ("bitcast", Some(s)) => OpKind::Bitcast(scalar(s)?),
        ("program_id", Some(a)) => OpKind::ProgramId(axis(a)?),
        ("num_programs", Some(a)) => OpKind::NumPrograms(axis(a)?),
        ("dim", Some(a)) => OpKind::Dim(axis(a)?),
        ("fill", Some(f)) => OpKind::Fill(match f {
            "zeros" => Fill::Zeros,
            "eye" => Fill::Eye,
            "full" => Fill::Full,
            f => match f.strip_prefix("iota(").and_then(|a| a.strip_suffix(')')) {
                Some(a) => Fill::Iota(axis(a)?),
                None => return Err(format!("unknown fill `{f}`")),
            },
        }),
        ("reduce", Some(r)) => {
            let (k, ax) = match r.split_once('.') {
                Some((k, a)) => (k, Some(axis(a)?)),
                None => (r, None),
            };
            OpKind::Reduce(reduce(k).ok_or_else(|| format!("unknown reduction `{k}`"))?, ax)
        }
        ("extract_line", Some(d)) => OpKind::ExtractLine(axis(d)?),
        ("insert_line", Some(d)) => OpKind::InsertLine(axis(d)?),
        ("scan", Some(r)) => {
            let (k, ax) = r.split_once('.').ok_or_else(|| format!("`scan.{r}` needs an axis"))?;
            OpKind::Scan(reduce(k).ok_or_else(|| format!("unknown scan `{k}`"))?, axis(ax)?)
        }
        ("flip", Some(d)) => OpKind::Flip(axis(d)?),
        ("print", Some(i)) => OpKind::Print(i.parse().map_err(|_| format!("bad site `{i}`"))?),
        ("assert", Some(i)) => OpKind::Assert(i.parse().map_err(|_| format!("bad site `{i}`"))?),
        ("trsm", Some(t)) => {
            OpKind::Trsm(Trsm::from_name(&format!("solve_{t}_")).ok_or_else(|| format!("unknown solve `{t}`"))?)
        }
        ("select", None) => OpKind::Select,
        ("fma", None) => OpKind::Fma,
        ("outer", None) => OpKind::Outer,
        ("matmul", None) => OpKind::Matmul,
        ("matmul_acc", None) => OpKind::MatmulAcc,
        ("transpose", None) => OpKind::Transpose,
        ("extract", None) => OpKind::Extract,
        ("insert", None) => OpKind::Insert,
        ("broadcast", None) => OpKind::Broadcast,
        ("reshape", None) => OpKind::Reshape,
        ("cholesky", None) => OpKind::Cholesky,
        ("lu", None) => OpKind::Lu,
        ("map", None) => OpKind::Map,
        ("barrier", None) => OpKind::Barrier,
        ("lane_id", None) => OpKind::LaneId,
        ("shuffle", None) => OpKind::Shuffle,
        ("for", None) => OpKind::For,
        ("if", None) => OpKind::If,
        ("while", None) => OpKind::While,
        ("yield", None) => OpKind::Yield,
        ("return", None) => OpKind::Return,
        _ => return Err(format!("unknown op `{m}`")),
    })
}

/// An op whose regions are being read, and the region being read.
struct Open {
    op: Op,
    params: Vec<Value>,
    ops: Vec<Op>,
}

/// Reads `^(%a: T, ..)` region parameters (the text after an opening `{`).
fn region_params(s: &str, types: &mut HashMap<u32, Type>) -> R<Vec<Value>> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(Vec::new());
    }
    let inner =
        s.strip_prefix("^(").and_then(|r| r.strip_suffix(')')).ok_or_else(|| format!("bad region parameters `{s}`"))?;
    typed_values(inner, types)
}

/// Reads `%a: T, %b: U` and records the types.
fn typed_values(s: &str, types: &mut HashMap<u32, Type>) -> R<Vec<Value>> {
    let mut out = Vec::new();
    for p in split_top(s, ',').into_iter().filter(|p| !p.is_empty()) {
        let (v, t) = p.split_once(':').ok_or_else(|| format!("expected `%N: type`, found `{p}`"))?;
        let v = value(v)?;
        types.insert(v.0, parse_type(t)?);
        out.push(v);
    }
    Ok(out)
}

/// Parses one op line (without its regions); returns it and the text after `{` if the line
/// opens a region.
fn op_line(line: &str, types: &mut HashMap<u32, Type>) -> R<(Op, Option<String>)> {
    let (line, open) = match line.find('{') {
        Some(i) => (line[..i].trim_end(), Some(line[i + 1..].to_string())),
        None => (line, None),
    };
    let (results, rest) = match line.split_once(" = ") {
        Some((r, rest)) if r.starts_with('%') => (values(r)?, rest),
        _ => (Vec::new(), line),
    };
    let (head, tys) = match rest.split_once(" : ") {
        Some((h, t)) => (h, split_top(t, ',').into_iter().map(parse_type).collect::<R<Vec<_>>>()?),
        None => (rest, Vec::new()),
    };
    if tys.len() != results.len() {
        return Err(format!("{} results but {} types", results.len(), tys.len()));
    }
    for (v, t) in results.iter().zip(&tys) {
        types.insert(v.0, t.clone());
    }
    let (mnemonic, args) = match head.find(" %") {
        Some(i) => (&head[..i], values(&head[i + 1..])?),
        None => (head, Vec::new()),
    };
    let kind = op_kind(mnemonic.trim(), tys.first())?;
    Ok((Op { kind, args, results, regions: Vec::new(), loc: Loc::default() }, open))
}

/// Parses one function from `lines` (starting at its header); returns it and the number of
/// lines read.
fn function(lines: &[(usize, &str)]) -> Result<(Function, usize), ParseError> {
    let (first_no, header) = lines[0];
    let at = |line: usize| move |message: String| ParseError { line, message };
    let (kind, rest) =
        header.split_once(" @").ok_or_else(|| at(first_no)("expected `kernel|fn|launch @NAME(..) {`".into()))?;
    let kind = match kind {
        "kernel" => FuncKind::Kernel,
        "fn" => FuncKind::Fn,
        "launch" => FuncKind::Launch,
        k => return Err(at(first_no)(format!("unknown function kind `{k}`"))),
    };
    let open = rest.find('(').ok_or_else(|| at(first_no)("expected `(`".into()))?;
    let name = rest[..open].to_string();
    let body = rest.strip_suffix('{').ok_or_else(|| at(first_no)("the header does not end in `{`".into()))?.trim_end();
    let close = body
        .rfind(") -> (")
        .map_or_else(|| body.rfind(')'), Some)
        .ok_or_else(|| at(first_no)("expected `)`".into()))?;
    let mut types: HashMap<u32, Type> = HashMap::new();
    let params = typed_values(&body[open + 1..close], &mut types).map_err(at(first_no))?;
    let ret = match body[close..].strip_prefix(") -> (").and_then(|r| r.strip_suffix(')')) {
        Some(r) => split_top(r, ',').into_iter().map(parse_type).collect::<R<Vec<_>>>().map_err(at(first_no))?,
        None => Vec::new(),
    };
    let mut stack: Vec<Open> = Vec::new();
    let mut ops: Vec<Op> = Vec::new();
    let mut n = 1;
    loop {
        let Some(&(no, line)) = lines.get(n) else {
            return Err(at(first_no)(format!("function @{name} is not closed")));
        };
        n += 1;
        let cur = |stack: &mut Vec<Open>, ops: &mut Vec<Op>, op: Op| match stack.last_mut() {
            Some(o) => o.ops.push(op),
            None => ops.push(op),
        };
        if line == "}" || line.starts_with("} else {") {
            let Some(mut o) = stack.pop() else {
                if line == "}" {
                    break;
                }
                return Err(at(no)("`else` outside an op".into()));
            };
            o.op.regions.push(Region { params: std::mem::take(&mut o.params), ops: std::mem::take(&mut o.ops) });
            if let Some(after) = line.strip_prefix("} else {") {
                o.params = region_params(after, &mut types).map_err(at(no))?;
                stack.push(o);
            } else {
                cur(&mut stack, &mut ops, o.op);
            }
            continue;
        }
        let (op, open) = op_line(line, &mut types).map_err(at(no))?;
        match open {
            Some(after) => {
                let params = region_params(&after, &mut types).map_err(at(no))?;
                stack.push(Open { op, params, ops: Vec::new() });
            }
            None => cur(&mut stack, &mut ops, op),
        }
    }
    let mut f = Function::new(name, kind);
    let len = types.keys().max().map_or(0, |m| m + 1);
    for i in 0..len {
        f.new_value(types.remove(&i).unwrap_or(Type::Scalar(Scalar::I32)));
    }
    f.body = Region { params, ops };
    f.ret = ret;
    Ok((f, n))
}

/// The lines worth reading, numbered from 1 and trimmed.
fn lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with(';') && !l.starts_with("//"))
        .collect()
}

/// Parses one function (as [`crate::print::print_function`] writes it).
///
/// # Errors
/// The first malformed line.
pub fn parse_function(text: &str) -> Result<Function, ParseError> {
    let ls = lines(text);
    if ls.is_empty() {
        return Err(ParseError { line: 1, message: "no function".into() });
    }
    let (f, n) = function(&ls)?;
    if let Some(&(no, _)) = ls.get(n) {
        return Err(ParseError { line: no, message: "text after the function".into() });
    }
    Ok(f)
}

/// Parses a module as [`crate::print::print_module`] writes it: its functions in order
/// (`call @N` refers to the `N`-th). The module has no kernel entries (`Module::kernels`).
///
/// # Errors
/// The first malformed line.
pub fn parse_module(text: &str) -> Result<Module, ParseError> {
    let ls = lines(text);
    let mut m = Module::default();
    let mut i = 0;
    while i < ls.len() {
        let (f, n) = function(&ls[i..])?;
        m.funcs.push(f);
        i += n;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "// @0
kernel @k(%0: mut f32[?, ?], %1: f32) {
  %2 = const 0 : i32
  %3 = const 16 : i32
  %4 = fill.iota(1) : tile<f32, 4, 4>
  %5 = load[i,+4] %0, %2, %2 : tile<f32, 4>
  %9 = for %2, %3, %3, %4 : tile<f32, 4, 4> { ^(%6: i32, %7: tile<f32, 4, 4>)
    %8 = rank1 -1.0 %7, %5, %5 : tile<f32, 4, 4>
    yield %8
  }
  %10 = cmp.lt %1, %1 : bool
  %13 = if %10 : f32 {
    %11 = const -1.5 : f32
    yield %11
  } else {
    %12 = const NaN : f32
    yield %12
  }
  %14 = trsm.left_lower_t %9, %9 : tile<f32, 4, 4>
  %15 = alloc_shared[4, 4] : mut f32[?, ?]
  store[+4,+4] %15, %2, %2, %14
  return
}
";

    #[test]
    fn printed_text_parses_back_to_the_same_text() {
        let m = parse_module(TEXT).expect("parses");
        assert_eq!(crate::print::print_module(&m), format!("{TEXT}\n"));
        let f = &m.funcs[0];
        assert_eq!(f.values.len(), 16);
        assert_eq!(f.ty(Value(6)), &Type::Scalar(Scalar::I32));
        assert!(matches!(f.body.ops[4].kind, OpKind::For) && f.body.ops[4].regions[0].params.len() == 2);
        assert!(matches!(f.body.ops[6].kind, OpKind::If) && f.body.ops[6].regions.len() == 2);
    }

    #[test]
    fn malformed_lines_are_errors_with_their_line() {
        let bad = TEXT.replace("cmp.lt", "cmp.less");
        let e = parse_module(&bad).unwrap_err();
        assert_eq!(e.line, 11, "{e}");
        assert!(e.message.contains("comparison `less`"), "{e}");
        let e = parse_module("kernel @k() {\n  %1 = add %0, %0\n}\n").unwrap_err();
        assert!(e.message.contains("1 results but 0 types"), "{e}");
        let e = parse_function("kernel @k() {\n  return\n").unwrap_err();
        assert!(e.message.contains("not closed"), "{e}");
    }

    /// A kernel taking a block of a 5x4 tile at `at` with shape `shape` and writing it back.
    fn block_kernel(at: &str, shape: &str) -> String {
        format!(
            "kernel @k() {{
  %0 = fill.iota(0) : tile<f32, 5, 4>
  %1 = extract_block{at} %0 : tile<f32, {shape}>
  %2 = insert_block{at} %0, %1 : tile<f32, 5, 4>
  return
}}
"
        )
    }

    #[test]
    fn blocks_parse_back_and_are_verified_inside_the_tile() {
        let m = parse_module(&block_kernel("[1, 2]", "4, 2")).expect("parses");
        assert_eq!(crate::print::print_module(&m), format!("// @0\n{}\n", block_kernel("[1, 2]", "4, 2")));
        assert_eq!(crate::verify::verify(&m), Ok(()));
        for (at, shape) in [("[2, 2]", "4, 2"), ("[0, 3]", "1, 2"), ("[0]", "2, 2"), ("[0, 0]", "3")] {
            let m = parse_module(&block_kernel(at, shape)).expect("parses");
            let e = crate::verify::verify(&m).expect_err("a block outside the tile is rejected");
            assert!(e[0].message.contains("inside it"), "{at} {shape}: {}", e[0]);
        }
    }

    #[test]
    fn lines_parse_back_and_are_verified_against_the_tile() {
        let k = |d: u8, line: &str| {
            format!(
                "kernel @k() {{\n  %0 = fill.zeros : tile<f32, 3, 4>\n  %1 = const 1 : i32\n  %2 = extract_line.{d} %0, %1 : tile<f32, {line}>\n  %3 = insert_line.{d} %0, %1, %2 : tile<f32, 3, 4>\n  return\n}}\n"
            )
        };
        for (d, line) in [(0, "4"), (1, "3")] {
            let m = parse_module(&k(d, line)).expect("parses");
            assert_eq!(crate::print::print_module(&m), format!("// @0\n{}\n", k(d, line)));
            assert_eq!(crate::verify::verify(&m), Ok(()), "{d}");
        }
        for (d, line) in [(0, "3"), (1, "4"), (2, "4"), (0, "2, 2")] {
            let e = crate::verify::verify(&parse_module(&k(d, line)).expect("parses")).expect_err("rejected");
            assert!(e[0].message.contains("line of the tile"), "{d} {line}: {}", e[0]);
        }
    }

    #[test]
    fn broadcasts_parse_back_and_follow_the_trailing_axis_rule() {
        let k = |from: &str, to: &str| {
            format!("kernel @k() {{\n  %0 = fill.zeros : tile<f32, {from}>\n  %1 = broadcast %0 : tile<f32, {to}>\n  return\n}}\n")
        };
        for (from, to) in [("4", "3, 4"), ("1, 4", "3, 4"), ("3, 1", "3, 4"), ("1", "5"), ("1, 1", "2, 2")] {
            let m = parse_module(&k(from, to)).expect("parses");
            assert_eq!(crate::print::print_module(&m), format!("// @0\n{}\n", k(from, to)));
            assert_eq!(crate::verify::verify(&m), Ok(()), "{from} -> {to}");
        }
        for (from, to) in [("3", "3, 4"), ("2, 4", "3, 4"), ("3, 4", "4"), ("4", "3")] {
            let e = crate::verify::verify(&parse_module(&k(from, to)).expect("parses")).expect_err("rejected");
            assert!(e[0].message.contains("`broadcast`"), "{from} -> {to}: {}", e[0]);
        }
    }
}
