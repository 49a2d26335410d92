//! The text form of the Tile IR, used by `--emit tir`, snapshots and `--dump-after`.
//!
//! ```text
//! kernel potrf_batched__f32(%0: mut f32[?, ?, ?], %1: f32) {
//!   %2 = dim.0 %0 : i32
//!   %5 = for %3 = %c0 to %4 step %c1 iter(%6 = %a) -> (tile<f32, 16, 16>) { ... }
//! }
//! ```

use crate::ir::*;
use std::fmt::Write;

/// The mnemonic of an operation, with its attributes.
pub fn op_name(k: &OpKind) -> String {
    match k {
        OpKind::Const(c) => match c {
            Const::Bool(b) => format!("const {b}"),
            Const::Int(v, _) => format!("const {v}"),
            Const::Float(v, _) => format!("const {v:?}"),
        },
        OpKind::Bin(b) => format!("{b:?}").to_lowercase(),
        OpKind::Cmp(c) => format!("cmp.{}", format!("{c:?}").to_lowercase()),
        OpKind::Un(u) => format!("{u:?}").to_lowercase(),
        OpKind::Cast(s) => format!("cast.{}", s.name()),
        OpKind::Bitcast(s) => format!("bitcast.{}", s.name()),
        OpKind::Select => "select".into(),
        OpKind::Fma => "fma".into(),
        OpKind::ProgramId(a) => format!("program_id.{a}"),
        OpKind::NumPrograms(a) => format!("num_programs.{a}"),
        OpKind::Dim(a) => format!("dim.{a}"),
        OpKind::Fill(f) => format!("fill.{}", format!("{f:?}").to_lowercase()),
        OpKind::Load(ix) => format!("load{}", index_str(ix)),
        OpKind::LoadInto(ix) => format!("load_into{}", index_str(ix)),
        OpKind::Store(ix) => format!("store{}", index_str(ix)),
        OpKind::Outer => "outer".into(),
        OpKind::Rank1(a) => format!("rank1 {a:?}"),
        OpKind::Matmul => "matmul".into(),
        OpKind::Transpose => "transpose".into(),
        OpKind::Reduce(r, ax) => match ax {
            Some(a) => format!("reduce.{}.{a}", format!("{r:?}").to_lowercase()),
            None => format!("reduce.{}", format!("{r:?}").to_lowercase()),
        },
        OpKind::Scan(r, ax) => format!("scan.{}.{ax}", format!("{r:?}").to_lowercase()),
        OpKind::Flip(ax) => format!("flip.{ax}"),
        OpKind::Extract => "extract".into(),
        OpKind::Insert => "insert".into(),
        OpKind::Broadcast => "broadcast".into(),
        OpKind::Reshape => "reshape".into(),
        OpKind::ExtractLine(d) => format!("extract_line.{d}"),
        OpKind::InsertLine(d) => format!("insert_line.{d}"),
        OpKind::ExtractBlock(at) => format!("extract_block{at:?}"),
        OpKind::InsertBlock(at) => format!("insert_block{at:?}"),
        OpKind::Cholesky => "cholesky".into(),
        OpKind::Lu => "lu".into(),
        OpKind::Trsm(t) => format!("trsm.{}", t.name().trim_start_matches("solve_").trim_end_matches('_')),
        OpKind::MatmulAcc => "matmul_acc".into(),
        OpKind::Map => "map".into(),
        OpKind::AtomicAdd(ix) => format!("atomic_add{}", index_str(ix)),
        OpKind::AtomicRmw(k) => format!("atomic_rmw.{}", k.name()),
        OpKind::StoreMasked(ix) => format!("store_masked{}", index_str(ix)),
        OpKind::AllocShared(shape) => format!("alloc_shared{shape:?}"),
        OpKind::Barrier => "barrier".into(),
        OpKind::LaneId => "lane_id".into(),
        OpKind::Shuffle => "shuffle".into(),
        OpKind::For => "for".into(),
        OpKind::If => "if".into(),
        OpKind::While => "while".into(),
        OpKind::Yield => "yield".into(),
        OpKind::Return => "return".into(),
        OpKind::Call(i) => format!("call @{i}"),
        OpKind::Print(i) => format!("print.{i}"),
        OpKind::MatBuild => "mat_build".into(),
        OpKind::MatPart(i) => format!("mat_part.{i}"),
        OpKind::Assert(i) => format!("assert.{i}"),
    }
}

fn index_str(ix: &[Index]) -> String {
    let parts: Vec<String> = ix
        .iter()
        .map(|i| match i {
            Index::At => "i".to_string(),
            Index::Slice(k) => format!("+{k}"),
        })
        .collect();
    format!("[{}]", parts.join(","))
}

fn vals(f: &Function, vs: &[Value], typed: bool) -> String {
    let parts: Vec<String> =
        vs.iter().map(|v| if typed { format!("%{}: {}", v.0, f.ty(*v)) } else { format!("%{}", v.0) }).collect();
    parts.join(", ")
}

fn region(f: &Function, r: &Region, depth: usize, out: &mut String) {
    for op in &r.ops {
        let pad = "  ".repeat(depth);
        out.push_str(&pad);
        if !op.results.is_empty() {
            let _ = write!(out, "{} = ", vals(f, &op.results, false));
        }
        out.push_str(&op_name(&op.kind));
        if !op.args.is_empty() {
            let _ = write!(out, " {}", vals(f, &op.args, false));
        }
        if !op.results.is_empty() {
            let tys: Vec<String> = op.results.iter().map(|v| f.ty(*v).to_string()).collect();
            let _ = write!(out, " : {}", tys.join(", "));
        }
        for (i, r) in op.regions.iter().enumerate() {
            let _ = write!(out, "{}{{", if i == 0 { " " } else { " else " });
            if !r.params.is_empty() {
                let _ = write!(out, " ^({})", vals(f, &r.params, true));
            }
            out.push('\n');
            region(f, r, depth + 1, out);
            out.push_str(&pad);
            out.push('}');
        }
        out.push('\n');
    }
}

/// Prints one function.
pub fn print_function(f: &Function) -> String {
    let kind = match f.kind {
        FuncKind::Kernel => "kernel",
        FuncKind::Fn => "fn",
        FuncKind::Launch => "launch",
    };
    let mut out = format!("{kind} @{}({})", f.name, vals(f, &f.body.params, true));
    if !f.ret.is_empty() {
        let tys: Vec<String> = f.ret.iter().map(|t| t.to_string()).collect();
        let _ = write!(out, " -> ({})", tys.join(", "));
    }
    out.push_str(" {\n");
    region(f, &f.body, 1, &mut out);
    out.push_str("}\n");
    out
}

/// Prints every function of a module, in order, with its index.
pub fn print_module(m: &Module) -> String {
    let mut out = String::new();
    for (i, f) in m.funcs.iter().enumerate() {
        let _ = writeln!(out, "// @{i}");
        out.push_str(&print_function(f));
        out.push('\n');
    }
    out
}
