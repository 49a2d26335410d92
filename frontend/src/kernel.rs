//! Kernels: parameters (arrays with shape variables, scalars), the kernel body function, the
//! launch function that computes the grid and flop count, instantiation of element-type
//! parameters, and the driver over every requested instance.

use crate::builder::{Binding, BodyKind, Checker, FnBuilder, GenericVal};
use crate::errors;
use crate::items::{From, Program};
use crate::semantic::DefKind;
use crate::{GenericArg, Instances};
use std::collections::HashMap;
use tilec_grammar::ast::{ExprKind, GenericParam, KernelItem, TypeExpr};
use tilec_grammar::diag::{Diagnostic, Severity};
use tilec_midend::dims::{DimExpr, DimOp};
use tilec_midend::{Const, Dim, FuncKind, Kernel, KernelParam, Loc, Module, OpKind, ParamKind, Scalar, Type, Value};

/// The element types a type parameter may take, from its bound (none: `float`).
pub(crate) fn candidates(bound: Option<&tilec_grammar::ast::Ident>) -> Result<Vec<Scalar>, ()> {
    match bound.map(|b| b.name.as_str()) {
        None | Some("float") => Ok(vec![Scalar::F32, Scalar::F64]),
        Some("int") => Ok(vec![Scalar::I32, Scalar::I64]),
        Some(_) => Err(()),
    }
}

/// The element types an array argument may give a type parameter with this bound: its
/// [`candidates`], and for `float` also the storage types `f16` and `bf16` (computed in `f32`).
pub(crate) fn accepted(bound: Option<&tilec_grammar::ast::Ident>) -> Vec<Scalar> {
    let mut c = candidates(bound).unwrap_or_default();
    if c.contains(&Scalar::F32) {
        c.extend([Scalar::F16, Scalar::BF16]);
    }
    c
}

/// What a kernel's generic parameter may be instantiated with.
enum Choice {
    /// An element type from this list.
    Types(Vec<Scalar>),
    /// A constant, with its default if declared.
    Const(Option<Const>),
}

/// Checks the generic parameters of a kernel: known bounds, constant defaults.
fn kernel_params(cx: &mut Checker<'_>, k: &KernelItem, source: Option<&str>) -> Option<Vec<(String, Choice)>> {
    let mut out = Vec::new();
    let mut ok = true;
    for g in &k.generics {
        let mut d = match g {
            GenericParam::Type { name, bound } => match candidates(bound.as_ref()) {
                Ok(c) => {
                    out.push((name.name.clone(), Choice::Types(c)));
                    continue;
                }
                Err(()) => errors::unknown_bound(bound.as_ref().expect("bound")),
            },
            GenericParam::Const { name, ty, default, candidates } => {
                let Some(s) = const_param_scalar(ty) else {
                    ok = false; // E0307, reported by `check_generic_decls`
                    continue;
                };
                let ((Some(e), _) | (None, Some(e))) = (default.as_ref(), candidates.first()) else {
                    out.push((name.name.clone(), Choice::Const(None)));
                    continue;
                };
                if default.is_none() {
                    errors::tuning_without_default(e.span, name)
                } else {
                    match const_default(cx, name, s, e)
                        .and_then(|c| tuning_candidates(cx, name, s, (e, c), candidates).map(|_| c))
                    {
                        Ok(c) => {
                            out.push((name.name.clone(), Choice::Const(Some(c))));
                            continue;
                        }
                        Err(d) => d,
                    }
                }
            }
        };
        d.source = source.map(str::to_string);
        cx.diags.push(d);
        ok = false;
    }
    ok.then_some(out)
}

/// Checks the declarations of generic parameters once: const parameters have an integer type
/// (E0307; kernels and `fn`s) and `fn` type parameters a known bound (E0301; kernels report
/// theirs when instantiated).
fn check_generic_decls(cx: &mut Checker<'_>) {
    let program = cx.program;
    let mut decls: Vec<(&[GenericParam], Option<&str>, u32)> =
        program.kernels.iter().map(|k| (&k.item.generics[..], k.source, k.item.span.start)).collect();
    decls.extend(program.fns.values().map(|f| (&f.item.generics[..], f.source, f.item.span.start)));
    decls.sort_by_key(|d| (d.1.map(str::to_string), d.2));
    let mut out = Vec::new();
    for (generics, source, _) in decls {
        for g in generics {
            let d = match g {
                GenericParam::Const { name, ty, .. } if const_param_scalar(ty).is_none() => {
                    errors::const_param_type(ty.span(), name)
                }
                _ => continue,
            };
            out.push((d, source));
        }
    }
    let mut fns: Vec<_> = program.fns.values().collect();
    fns.sort_by_key(|f| (f.source.map(str::to_string), f.item.span.start));
    for f in fns {
        for g in &f.item.generics {
            if let GenericParam::Type { bound: Some(b), .. } = g {
                if candidates(Some(b)).is_err() {
                    out.push((errors::unknown_bound(b), f.source));
                }
            }
            if let GenericParam::Const { name, candidates: tuned, .. } = g {
                if let Some(c) = tuned.first() {
                    out.push((errors::tuning_in_fn(c.span, name), f.source));
                }
            }
        }
    }
    for (mut d, source) in out {
        d.source = source.map(str::to_string);
        cx.diags.push(d);
    }
}

/// The generic argument of a const parameter's value.
fn generic_arg(c: Const) -> GenericArg {
    match c {
        Const::Float(x, _) => GenericArg::float(x),
        c => GenericArg::Const(c.as_i64()),
    }
}

/// The value of the default `e` of the const parameter `name` of type `s` (an integer or
/// float type; an integer default of a float parameter becomes a float), as a constant of `s`.
pub(crate) fn const_default(
    cx: &mut Checker<'_>,
    name: &tilec_grammar::ast::Ident,
    s: Scalar,
    e: &tilec_grammar::ast::Expr,
) -> Result<Const, Diagnostic> {
    let mut lookup = |n: &str| cx.const_item(n);
    match crate::consteval::eval(e, &mut lookup) {
        Ok(Const::Int(v, _)) if s.is_float() => Ok(Const::Float(s.round(v as f64), s)),
        Ok(Const::Float(x, _)) if s.is_float() => Ok(Const::Float(s.round(x), s)),
        Ok(Const::Int(v, _)) if s.wrap(v) != v => Err(errors::const_default_range(e.span, name, s, v)),
        Ok(Const::Int(v, _)) => Ok(Const::Int(v, s)),
        Ok(c) => Err(errors::const_default_type(e.span, name, s, c.ty())),
        Err(crate::consteval::NotConst::Error(d)) => Err(d),
        Err(crate::consteval::NotConst::Runtime(_)) => Err(errors::not_const(e.span, "a const parameter's default")),
    }
}

/// The values a tuner may give the const parameter `name` of type `s` whose default
/// expression and value are `default` (`const BM: i32 = 64 in [32, 64, 128]`), in the order
/// written; empty when none are listed. Errors (E0308): a candidate that is not a constant of
/// `s`, one listed twice, or a default that is not among them.
pub(crate) fn tuning_candidates(
    cx: &mut Checker<'_>,
    name: &tilec_grammar::ast::Ident,
    s: Scalar,
    default: (&tilec_grammar::ast::Expr, Const),
    candidates: &[tilec_grammar::ast::Expr],
) -> Result<Vec<Const>, Diagnostic> {
    let mut values: Vec<Const> = Vec::with_capacity(candidates.len());
    for e in candidates {
        let v = const_default(cx, name, s, e).map_err(|_| errors::tuning_candidate(e.span, name, s))?;
        if values.contains(&v) {
            return Err(errors::tuning_twice(e.span, name));
        }
        values.push(v);
    }
    if !values.is_empty() && !values.contains(&default.1) {
        return Err(errors::tuning_default(default.0.span, name));
    }
    Ok(values)
}

/// The type of a const parameter declared with `ty` (`i32`, `i64`, `u32`, `f32` or `f64`), if
/// it is one of those.
pub(crate) fn const_param_scalar(ty: &TypeExpr) -> Option<Scalar> {
    match ty {
        TypeExpr::Named(t) => Scalar::from_name(&t.name).filter(|s| s.is_int() || (s.is_float() && !s.is_half())),
        _ => None,
    }
}

/// Lowers the requested kernel instances of a program.
pub(crate) fn lower_program(
    program: &Program<'_>,
    instances: &Instances,
    limits: &crate::TargetLimits,
) -> (Module, Vec<Diagnostic>, crate::semantic::Analysis) {
    let mut cx = Checker {
        program,
        module: Module { sources: vec![None], ..Module::default() },
        diags: Vec::new(),
        instances: HashMap::new(),
        in_progress: Vec::new(),
        consts: HashMap::new(),
        called: std::collections::HashSet::new(),
        bad_defaults: std::collections::HashSet::new(),
        sem: crate::semantic::Analysis::default(),
        limits: *limits,
    };
    crate::items::define_items(&mut cx);
    let mut names: Vec<&String> = program.consts.keys().collect();
    names.sort();
    for n in names {
        cx.const_item(n);
    }
    check_generic_decls(&mut cx);
    match instances {
        Instances::All { fixed } => {
            for k in &program.kernels {
                let Some(params) = kernel_params(&mut cx, k.item, k.source) else {
                    continue;
                };
                let mut combos: Vec<HashMap<String, GenericArg>> = vec![HashMap::new()];
                // Const parameters at their defaults, for a note on errors in the instance.
                let defaults: Vec<(String, i64)> = params
                    .iter()
                    .filter_map(|(n, c)| match c {
                        Choice::Const(Some(Const::Int(v, _))) if !fixed.contains_key(n) => Some((n.clone(), *v)),
                        _ => None,
                    })
                    .collect();
                // Type parameters that take several types: errors name the instance.
                let varying: Vec<String> = params
                    .iter()
                    .filter(|(n, c)| !fixed.contains_key(n) && matches!(c, Choice::Types(ts) if ts.len() > 1))
                    .map(|(n, _)| n.clone())
                    .collect();
                let mut placeholders: Vec<(String, i64)> = Vec::new();
                for (name, choice) in params {
                    let cands: Vec<GenericArg> = match (fixed.get(&name), choice) {
                        (Some(v), _) => vec![*v],
                        (None, Choice::Types(ts)) => ts.into_iter().map(GenericArg::Type).collect(),
                        (None, Choice::Const(Some(c))) => vec![generic_arg(c)],
                        // Written as an extent: it takes the argument's extent at launch, and
                        // is checked here at a representative value.
                        (None, Choice::Const(None)) if extent_positions(k.item, &name).next().is_some() => {
                            placeholders.push((name.clone(), EXTENT_PLACEHOLDER));
                            vec![GenericArg::Const(EXTENT_PLACEHOLDER)]
                        }
                        (None, Choice::Const(None)) => {
                            let ident =
                                k.item.generics.iter().map(|g| g.name()).find(|g| g.name == name).expect("param");
                            let mut d = errors::const_param_value(&k.item.name.name, ident);
                            d.source = k.source.map(str::to_string);
                            cx.diags.push(d);
                            vec![]
                        }
                    };
                    combos = combos
                        .into_iter()
                        .flat_map(|m| {
                            let name = name.clone();
                            cands.iter().map(move |s| {
                                let mut m = m.clone();
                                m.insert(name.clone(), *s);
                                m
                            })
                        })
                        .collect();
                }
                let n_instances = combos.len();
                let kernel_start = cx.diags.len();
                for g in combos {
                    let before = cx.diags.len();
                    lower_kernel(&mut cx, *k, &g, limits);
                    let instance: Vec<String> = varying
                        .iter()
                        .filter_map(|n| match g.get(n) {
                            Some(GenericArg::Type(t)) => Some(format!("{n} = {}", t.name())),
                            _ => None,
                        })
                        .collect();
                    for d in &mut cx.diags[before..] {
                        if !instance.is_empty() {
                            let flags: Vec<String> =
                                instance.iter().map(|i| format!("--generic {}", i.replace(" = ", "="))).collect();
                            d.notes.push(format!(
                                "{INSTANCE_NOTE}`{}` with {} (`check` and `build` check every instance; `build {}` builds this one)",
                                k.item.name.name,
                                instance.join(", "),
                                flags.join(" ")
                            ));
                        }
                        note_defaults(d, &k.item.name.name, &defaults);
                        for (n, v) in &placeholders {
                            d.notes.push(format!(
                                "checked with `{n}` = {v}: `{n}` takes the extent of its array argument at launch"
                            ));
                        }
                    }
                }
                unnote_common_errors(&mut cx.diags[kernel_start..], n_instances);
            }
            check_uncalled_fns(&mut cx);
        }
        Instances::One { kernel, generics } => match program.kernel(kernel) {
            Some(k) => {
                if kernel_params(&mut cx, k.item, k.source).is_some() {
                    let before = cx.diags.len();
                    lower_kernel(&mut cx, k, generics, limits);
                    // The instance a caller asked for: its errors name every generic argument
                    // (a const parameter given 0 is named where its uses fail).
                    let args: Vec<String> = k
                        .item
                        .generics
                        .iter()
                        .filter_map(|p| {
                            let n = &p.name().name;
                            Some(format!("{n} = {}", generic_arg_text(generics.get(n)?)))
                        })
                        .collect();
                    if !args.is_empty() {
                        for d in cx.diags[before..].iter_mut().filter(|d| d.severity == Severity::Error) {
                            d.notes.push(format!("{INSTANCE_NOTE}`{}` with {}", k.item.name.name, args.join(", ")));
                        }
                    }
                }
            }
            None => cx.diags.push(errors::no_kernel(kernel, &program.kernel_names())),
        },
    }
    // Const items show their value where it is not written as a literal (`= 65536 * 4`).
    for d in cx.sem.defs.iter_mut().filter(|d| d.kind == crate::semantic::DefKind::Const) {
        if let Some(Some(c)) = cx.consts.get(&d.name) {
            let v = match c {
                Const::Int(v, _) => v.to_string(),
                Const::Float(v, _) => format!("{v:?}"),
                Const::Bool(b) => b.to_string(),
            };
            if !d.detail.ends_with(&format!("= {v}")) {
                d.detail.push_str(&format!(" (= {v})"));
            }
        }
    }
    (cx.module, cx.diags, cx.sem)
}

/// Checks the `fn`s that no kernel called, so that their errors are reported too: a
/// non-generic one as it is, a generic one as one instance, each type parameter set to the
/// first type its bound allows (`f32` for `float`, `i32` for `int`) and each const parameter
/// to its default. A generic `fn` with an unbounded type parameter, or a const parameter
/// without default, is not checked.
fn check_uncalled_fns(cx: &mut Checker<'_>) {
    let mut fns: Vec<_> = cx.program.fns.values().copied().collect();
    // Non-generic ones first: they may call generic ones, which then count as called.
    fns.sort_by_key(|f| (!f.item.generics.is_empty(), f.source.map(str::to_string), f.item.span.start));
    for f in fns {
        if cx.called.contains(&f.item.name.name) {
            continue;
        }
        let mut g = HashMap::new();
        for p in &f.item.generics {
            let v = match p {
                // Without a bound, no type is known to be meant: any choice could report
                // errors that no real call has.
                GenericParam::Type { bound: None, .. } => break,
                GenericParam::Type { bound: Some(b), .. } => match candidates(Some(b)) {
                    Ok(c) => GenericVal::Type(c[0]),
                    Err(()) => break,
                },
                GenericParam::Const { name, ty, default: Some(d), .. } => {
                    let Some(s) = const_param_scalar(ty) else {
                        break; // E0307
                    };
                    match const_default(cx, name, s, d) {
                        Ok(c) => GenericVal::Const(c),
                        Err(mut d) => {
                            d.source = f.source.map(str::to_string);
                            cx.diags.push(d);
                            break;
                        }
                    }
                }
                GenericParam::Const { .. } => break,
            };
            g.insert(p.name().name.clone(), v);
        }
        if g.len() == f.item.generics.len() {
            let mut b = FnBuilder::new(cx, String::new(), FuncKind::Fn, BodyKind::Launch, HashMap::new(), None);
            b.check_uncalled(f, g);
        }
    }
}

/// The value at which `tilec check` instantiates a const parameter without default that is
/// written as an array extent (its value comes from the argument's shape at launch).
const EXTENT_PLACEHOLDER: i64 = 16;

/// Where generic parameter `name` of kernel `k` is written as a whole extent of an array
/// parameter (`A: T[B, N, N]` gives `("A", 1)` and `("A", 2)` for `N`): `(parameter, axis)`.
/// A const parameter written there takes the argument's extent at launch.
pub fn extent_positions<'k>(k: &'k KernelItem, name: &'k str) -> impl Iterator<Item = (&'k str, usize)> + 'k {
    k.params.iter().flat_map(move |p| {
        let dims = match &p.ty {
            TypeExpr::Array { dims, .. } => dims.as_slice(),
            _ => &[],
        };
        dims.iter().enumerate().filter_map(move |(axis, d)| match &d.kind {
            ExprKind::Name(n) if n.name == name => Some((p.name.name.as_str(), axis)),
            _ => None,
        })
    })
}

/// How the note that names a kernel instance starts (`lower_program`).
const INSTANCE_NOTE: &str = "in the instance of ";

/// Drops the instance note of the errors that every one of a kernel's `n` instances has (the
/// same error by `dedup`'s measure, `crate::same_key`): those are not about one instance.
fn unnote_common_errors(diags: &mut [Diagnostic], n: usize) {
    let mut count: HashMap<crate::SameKey, usize> = HashMap::new();
    for d in diags.iter() {
        *count.entry(crate::same_key(d)).or_insert(0) += 1;
    }
    for d in diags.iter_mut() {
        if count[&crate::same_key(d)] >= n {
            d.notes.retain(|t| !t.starts_with(INSTANCE_NOTE));
        }
    }
}

/// Adds a note to an error in a kernel instance whose text shows the value of a const
/// parameter taken from its default (`expected tile<f32, 16, 64>` with `HEAD_DIM = 64`).
fn note_defaults(d: &mut Diagnostic, kernel: &str, defaults: &[(String, i64)]) {
    let texts: Vec<&str> =
        std::iter::once(d.message.as_str()).chain(d.labels.iter().map(|l| l.text.as_str())).collect();
    let shown = |v: i64| {
        let v = v.to_string();
        texts.iter().any(|t| {
            t.match_indices(&v).any(|(i, _)| {
                let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
                let before = t[..i].chars().next_back().is_none_or(|c| !word(c));
                let after = t[i + v.len()..].chars().next().is_none_or(|c| !word(c));
                before && after
            })
        })
    };
    for (n, v) in defaults.iter().filter(|(_, v)| shown(*v)) {
        d.notes.push(format!(
            "{v} is `{n}`, a const parameter of `{kernel}` at its default; shapes that use `{n}` have it (`--generic {n}=..` picks another value)"
        ));
    }
}

/// A generic argument as the instance notes write it: `f32`, `64`, `0.5`.
fn generic_arg_text(a: &GenericArg) -> String {
    match a {
        GenericArg::Type(t) => t.name().to_string(),
        GenericArg::Const(v) => v.to_string(),
        GenericArg::Float(bits) => format!("{:?}", f64::from_bits(*bits)),
    }
}

/// The integer of an integer generic argument (0 otherwise).
fn arg_i64(a: &GenericArg) -> i64 {
    match a {
        GenericArg::Const(v) => *v,
        _ => 0,
    }
}

/// Whether `p` is a const parameter of a float type.
fn is_float_param(p: &GenericParam) -> bool {
    matches!(p, GenericParam::Const { ty, .. } if const_param_scalar(ty).is_some_and(|s| s.is_float()))
}

/// The symbol part of a float const parameter's value: `__1em6`, `__0p5`, `__m2p0`.
fn float_symbol(x: f64) -> String {
    format!("__{}", format!("{x:?}").replace('.', "p").replace('-', "m").replace('+', ""))
}

/// The mangled symbol of a kernel instance: `name__f32`.
fn symbol(k: &KernelItem, g: &HashMap<String, GenericArg>) -> String {
    let mut s = k.name.name.clone();
    for p in &k.generics {
        match g.get(&p.name().name) {
            Some(GenericArg::Type(t)) => s.push_str(&format!("__{}", t.name())),
            // A float parameter's value as a float (`2` and `2.0` name one instance), `1e-6`
            // as `1em6` and `0.5` as `0p5`: a valid symbol.
            Some(GenericArg::Const(v)) if !is_float_param(p) => s.push_str(&format!("__{v}")),
            Some(GenericArg::Const(v)) => s.push_str(&float_symbol(*v as f64)),
            Some(GenericArg::Float(b)) => s.push_str(&float_symbol(f64::from_bits(*b))),
            None => {}
        }
    }
    s
}

impl FnBuilder<'_, '_> {
    /// Declares the kernel's parameters and binds its shape variables (from the extents of
    /// the first array that mentions each, required arrays first). Returns the parameter
    /// values and their kinds.
    fn kernel_params(&mut self, k: &KernelItem) -> Option<(Vec<Value>, Vec<KernelParam>)> {
        let mut values = Vec::new();
        let mut kinds = Vec::new();
        let mut ok = true;
        // Names in array shapes, recorded once every parameter is declared: a scalar parameter
        // of the same name wins over a shape symbol (as for the binding below).
        let mut shape_mentions: Vec<(&tilec_grammar::ast::Ident, usize, &String)> = Vec::new();
        // Extent expressions (`T[Z * H, N]`), with their span, to check once all are known.
        let mut extent_exprs: Vec<(DimExpr, tilec_grammar::span::Span)> = Vec::new();
        let scalar_names: Vec<&String> =
            k.params.iter().filter(|p| matches!(p.ty, TypeExpr::Named(_))).map(|p| &p.name.name).collect();
        for p in &k.params {
            match &p.ty {
                TypeExpr::Array { mutable, elem, dims, optional, .. } => {
                    let TypeExpr::Named(en) = &**elem else {
                        return None;
                    };
                    let e = self.storage_type(en);
                    let mut ds = Vec::new();
                    for (axis, d) in dims.iter().enumerate() {
                        match &d.kind {
                            // An integer scalar parameter: checked against its value.
                            ExprKind::Name(n) if scalar_names.contains(&&n.name) => {
                                let e = DimExpr::Var(n.name.clone());
                                extent_exprs.push((e.clone(), d.span));
                                ds.push(Dim::Expr(e));
                            }
                            ExprKind::Name(n)
                                if !self.generics.contains_key(&n.name)
                                    && !self.cx.program.consts.contains_key(&n.name) =>
                            {
                                shape_mentions.push((n, axis, &p.name.name));
                                ds.push(Dim::Var(n.name.clone()))
                            }
                            _ => match self.const_eval(d).map_err(|_| self.dim_expr(d)) {
                                Ok(Const::Int(v, _)) if v >= 0 => ds.push(match &d.kind {
                                    ExprKind::Name(n) => Dim::Named(n.name.clone(), v as u64),
                                    _ => Dim::Fixed(v as u64),
                                }),
                                Err(Some(e)) => {
                                    extent_exprs.push((e.clone(), d.span));
                                    ds.push(Dim::Expr(e));
                                }
                                _ => {
                                    self.error(errors::bad_array_dim(d.span));
                                    ok = false;
                                }
                            },
                        }
                    }
                    let Some(e) = e else {
                        ok = false;
                        continue;
                    };
                    if dims.is_empty() || dims.len() > 8 {
                        self.error(errors::bad_array_rank(p.span));
                        ok = false;
                        continue;
                    }
                    let at = Type::Array { elem: e, rank: dims.len() as u8, mutable: *mutable };
                    let detail =
                        format!("{}: {}", p.name.name, crate::semantic::type_text(&p.ty, &crate::semantic::expr_text));
                    self.define(&p.name, DefKind::Param, Some(&at), detail);
                    let v = self.f.new_value(at);
                    let fixed = ds
                        .iter()
                        .map(|d| if let Dim::Fixed(n) | Dim::Named(_, n) = d { Some(*n) } else { None })
                        .collect();
                    self.declare(
                        &p.name.name,
                        Binding::Array { value: v, mutable: *mutable, name: p.name.name.clone(), fixed },
                    );
                    values.push(v);
                    kinds.push(KernelParam {
                        name: p.name.name.clone(),
                        kind: ParamKind::Array { elem: e, dims: ds, mutable: *mutable, optional: *optional },
                    });
                }
                TypeExpr::Named(n) => {
                    let Some(s) = self.scalar_type(n) else {
                        ok = false;
                        continue;
                    };
                    let v = self.f.new_value(Type::Scalar(s));
                    self.define(
                        &p.name,
                        DefKind::Param,
                        Some(&Type::Scalar(s)),
                        format!("{}: {}", p.name.name, n.name),
                    );
                    self.declare(&p.name.name, Binding::Var(v));
                    values.push(v);
                    kinds.push(KernelParam { name: p.name.name.clone(), kind: ParamKind::Scalar(s) });
                }
                other => {
                    self.error(errors::bad_kernel_param(other.span()));
                    ok = false;
                }
            }
        }
        let scalar_params: Vec<&String> =
            k.params.iter().filter(|p| matches!(p.ty, TypeExpr::Named(_))).map(|p| &p.name.name).collect();
        let mut shape_syms = std::collections::HashSet::new();
        for (n, axis, array) in shape_mentions {
            if scalar_params.contains(&&n.name) || !shape_syms.insert(n.name.clone()) {
                self.resolve_use(n, false);
            } else {
                let detail = format!("{}: extent of axis {axis} of `{array}`", n.name);
                self.define(n, DefKind::ShapeVar, Some(&Type::Scalar(Scalar::I32)), detail);
            }
        }
        // Every name in an extent expression is a shape variable (a plain extent of some axis)
        // or an integer scalar parameter.
        for (e, span) in &extent_exprs {
            for v in e.vars() {
                match kinds.iter().find(|kp| kp.name == v).and_then(|kp| kp.kind.scalar_type()) {
                    Some(s) if !s.is_int() => {
                        self.error(errors::extent_not_int(*span, v, s));
                        ok = false;
                    }
                    None if !shape_syms.contains(v) => {
                        self.error(errors::extent_var(*span, &e.to_string(), v));
                        ok = false;
                    }
                    _ => {}
                }
            }
        }
        if !ok {
            return None;
        }
        // Shape variables: bound from the first required array that mentions each; one that
        // only optional arrays mention is the largest of their extents (the given ones agree,
        // the runtime checks; an omitted one's is 0), as the runtime binds it.
        let arrays: Vec<(Value, &Vec<Dim>, bool)> = values
            .iter()
            .zip(&kinds)
            .filter_map(|(v, kp)| match &kp.kind {
                ParamKind::Array { dims, optional, .. } => Some((*v, dims, *optional)),
                ParamKind::Scalar(_) => None,
            })
            .collect();
        for &(v, dims, _) in arrays.iter().filter(|a| !a.2) {
            for (axis, d) in dims.iter().enumerate() {
                if let Dim::Var(n) = d {
                    if self.lookup(n).is_none() {
                        let dv = self.emit1(OpKind::Dim(axis as u8), vec![v], Type::Scalar(Scalar::I32), k.header_span);
                        self.declare(n, Binding::Var(dv));
                    }
                }
            }
        }
        let mut extents: Vec<(&String, Value)> = Vec::new();
        for &(v, dims, _) in arrays.iter().filter(|a| a.2) {
            for (axis, d) in dims.iter().enumerate() {
                let Dim::Var(n) = d else { continue };
                if self.lookup(n).is_some() {
                    continue;
                }
                let dv = self.emit1(OpKind::Dim(axis as u8), vec![v], Type::Scalar(Scalar::I32), k.header_span);
                match extents.iter().position(|(m, _)| *m == n) {
                    Some(at) => {
                        let max = OpKind::Bin(tilec_midend::BinOp::Max);
                        extents[at].1 =
                            self.emit1(max, vec![extents[at].1, dv], Type::Scalar(Scalar::I32), k.header_span);
                    }
                    None => extents.push((n, dv)),
                }
            }
        }
        for (n, dv) in extents {
            self.declare(n, Binding::Var(dv));
        }
        Some((values, kinds))
    }
}

impl FnBuilder<'_, '_> {
    /// An array extent that is not a constant as an expression of shape variables, scalar
    /// parameters and constants (`Z * H`, `cdiv(N, BM)`), or `None` when it uses anything
    /// else (E0303 then).
    fn dim_expr(&mut self, e: &tilec_grammar::ast::Expr) -> Option<DimExpr> {
        use tilec_grammar::ast::BinOp;
        let bin = |op, a, b| Some(DimExpr::Bin(op, Box::new(a), Box::new(b)));
        match &e.kind {
            ExprKind::Int(v) => Some(DimExpr::Const(i64::try_from(*v).ok()?)),
            ExprKind::Name(n) => match self.generics.get(&n.name) {
                Some(GenericVal::Const(c)) => Some(DimExpr::Const(c.as_i64())),
                Some(GenericVal::Type(_)) => None,
                None => match self.cx.const_item(&n.name) {
                    Some(Const::Int(v, _)) => Some(DimExpr::Const(v)),
                    Some(_) => None,
                    None => {
                        self.resolve_use(n, false);
                        Some(DimExpr::Var(n.name.clone()))
                    }
                },
            },
            ExprKind::Binary(op, a, b) => {
                let op = match op {
                    BinOp::Add => DimOp::Add,
                    BinOp::Sub => DimOp::Sub,
                    BinOp::Mul => DimOp::Mul,
                    BinOp::Div => DimOp::Div,
                    BinOp::Rem => DimOp::Rem,
                    _ => return None,
                };
                let (a, b) = (self.dim_expr(a)?, self.dim_expr(b)?);
                bin(op, a, b)
            }
            ExprKind::Call(f, args) if args.len() == 2 => {
                let op = match f.name.as_str() {
                    "cdiv" => DimOp::CDiv,
                    "min" => DimOp::Min,
                    "max" => DimOp::Max,
                    _ => return None,
                };
                let (a, b) = (self.dim_expr(&args[0])?, self.dim_expr(&args[1])?);
                bin(op, a, b)
            }
            _ => None,
        }
    }
}

/// Lowers one kernel instance: its body function and its launch function.
fn lower_kernel(
    cx: &mut Checker<'_>,
    k: From<'_, KernelItem>,
    g: &HashMap<String, GenericArg>,
    limits: &crate::TargetLimits,
) {
    let item = k.item;
    let source = k.source.map(str::to_string);
    let mut generics: HashMap<String, GenericVal> = HashMap::new();
    for p in &item.generics {
        let Some(arg) = g.get(&p.name().name) else {
            continue;
        };
        let v = match (p, arg) {
            (GenericParam::Type { .. }, GenericArg::Type(s)) => GenericVal::Type(*s),
            (GenericParam::Const { ty, .. }, GenericArg::Const(_) | GenericArg::Float(_)) if is_float_param(p) => {
                let s = const_param_scalar(ty).expect("a float type");
                let x = match arg {
                    GenericArg::Float(b) => f64::from_bits(*b),
                    _ => arg_i64(arg) as f64,
                };
                GenericVal::Const(Const::Float(s.round(x), s))
            }
            (GenericParam::Const { ty, name, .. }, GenericArg::Const(v)) => {
                let s = const_param_scalar(ty).unwrap_or(Scalar::I32);
                if s.wrap(*v) != *v {
                    let mut d = errors::generic_value_range(&item.name.name, name, *v, s);
                    d.source = source.clone();
                    cx.diags.push(d);
                    return;
                }
                GenericVal::Const(Const::Int(*v, s))
            }
            (p, _) => {
                let mut d = errors::generic_kind(
                    &item.name.name,
                    p.name(),
                    match p {
                        GenericParam::Type { .. } => "type",
                        _ if is_float_param(p) => "float",
                        _ => "integer",
                    },
                );
                d.source = source.clone();
                cx.diags.push(d);
                return;
            }
        };
        generics.insert(p.name().name.clone(), v);
    }
    for p in &item.generics {
        if !g.contains_key(&p.name().name) {
            let mut d = errors::cannot_infer(item.name.span, &item.name.name, &p.name().name);
            d.source = source.clone();
            cx.diags.push(d);
            return;
        }
    }
    let rank = item.grid.len();
    // A bad grid rank is reported, and the body is still checked (with the rank clamped).
    let bad_rank = rank == 0 || rank > 3;
    if bad_rank {
        let span = match (item.grid.first(), item.grid.last()) {
            (Some(a), Some(b)) => a.span.to(b.span),
            _ => item.header_span,
        };
        let mut d = errors::grid_rank(span, rank);
        d.source = source.clone();
        cx.diags.push(d);
    }
    let rank = rank.clamp(1, 3);
    let sym = symbol(item, g);

    // The body.
    let mut b = FnBuilder::new(
        cx,
        sym.clone(),
        FuncKind::Kernel,
        BodyKind::Kernel { grid_rank: rank as u8 },
        generics.clone(),
        source.clone(),
    );
    b.define_generics(&item.generics);
    let Some((params, kinds)) = b.kernel_params(item) else {
        return;
    };
    let block = item.block.as_ref().and_then(|e| b.extent_up_to(e, "the `block` size", crate::limits::BLOCK_MAX));
    b.block(&item.body);
    b.emit(OpKind::Return, vec![], vec![], item.body.span);
    let body = b.finish(params);
    crate::limits::check_shared(cx, &body, &item.name.name, source.clone(), limits);
    if bad_rank {
        return;
    }

    // The launch function: grid extents as i64 and the flop count as f64.
    let mut b =
        FnBuilder::new(cx, format!("{sym}__launch"), FuncKind::Launch, BodyKind::Launch, generics, source.clone());
    b.define_generics(&item.generics);
    let Some((params, _)) = b.kernel_params(item) else {
        return;
    };
    let mut outs = Vec::new();
    for e in &item.grid {
        if let Some(v) = b.int_value(e, "a grid extent") {
            outs.push(b.emit1(OpKind::Cast(Scalar::I64), vec![v], Type::Scalar(Scalar::I64), e.span));
        }
    }
    while outs.len() < 3 {
        outs.push(b.constant(Const::Int(1, Scalar::I64), item.header_span));
    }
    let flops = match &item.flops {
        Some(e) => b
            .value(e, Some(Scalar::F64))
            .map(|v| b.emit1(OpKind::Cast(Scalar::F64), vec![v], Type::Scalar(Scalar::F64), e.span)),
        None => Some(b.constant(Const::Float(f64::NAN, Scalar::F64), item.header_span)),
    };
    let Some(flops) = flops else { return };
    if outs.len() != 3 {
        return;
    }
    outs.push(flops);
    b.emit(OpKind::Return, outs, vec![], item.header_span);
    let mut launch = b.finish(params);
    launch.ret = vec![
        Type::Scalar(Scalar::I64),
        Type::Scalar(Scalar::I64),
        Type::Scalar(Scalar::I64),
        Type::Scalar(Scalar::F64),
    ];

    cx.module.funcs.push(body);
    cx.module.funcs.push(launch);
    let n = cx.module.funcs.len() as u32;
    let file = cx.file_id(&source);
    cx.module.kernels.push(Kernel {
        name: item.name.name.clone(),
        symbol: sym,
        params: kinds,
        body: tilec_midend::FuncId(n - 2),
        launch: tilec_midend::FuncId(n - 1),
        grid_rank: rank as u8,
        block,
        has_flops: item.flops.is_some(),
        doc: item.doc.clone(),
        loc: Loc { start: item.name.span.start, end: item.name.span.end, file },
    });
}

/// Infers a kernel's element-type parameters from its array arguments' dtypes.
/// The value of the `const` item `n` (whose value is a literal or names other items, at most
/// 8 deep).
fn const_item(program: &Program<'_>, n: &str, depth: u32) -> Option<Const> {
    let c = program.consts.get(n)?;
    let mut look = |m: &str| if depth < 8 { const_item(program, m, depth + 1) } else { None };
    crate::consteval::eval(&c.item.value, &mut look).ok()
}

/// The tuning space of `kernel`: each const parameter declared with candidates
/// (`const BM: i32 = 64 in [32, 64, 128]`) and their values, in declaration order. Errors:
/// no such kernel (E0107); candidates that are not constants are left out (the program's
/// check reports them, E0308).
pub(crate) fn tuning_space(program: &Program<'_>, kernel: &str) -> Result<Vec<(String, Vec<GenericArg>)>, Diagnostic> {
    let Some(k) = program.kernel(kernel) else {
        return Err(errors::no_kernel(kernel, &program.kernel_names()));
    };
    let mut space = Vec::new();
    for g in &k.item.generics {
        let GenericParam::Const { name, ty, candidates, .. } = g else { continue };
        let Some(s) = const_param_scalar(ty).filter(|_| !candidates.is_empty()) else { continue };
        let values = candidates.iter().filter_map(|e| {
            Some(match crate::consteval::eval(e, &mut |n| const_item(program, n, 0)).ok()? {
                Const::Int(v, _) if s.is_float() => GenericArg::float(s.round(v as f64)),
                Const::Float(x, _) => GenericArg::float(s.round(x)),
                c => generic_arg(c),
            })
        });
        space.push((name.name.clone(), values.collect()));
    }
    Ok(space)
}

pub(crate) fn infer_generics(
    program: &Program<'_>,
    kernel: &str,
    args: &HashMap<String, Scalar>,
    shapes: &HashMap<String, Vec<u64>>,
    fixed: &HashMap<String, GenericArg>,
) -> Result<HashMap<String, GenericArg>, Diagnostic> {
    let Some(k) = program.kernel(kernel) else {
        return Err(errors::no_kernel(kernel, &program.kernel_names()));
    };
    let mut out = HashMap::new();
    for g in &k.item.generics {
        if let Some(v) = fixed.get(&g.name().name) {
            out.insert(g.name().name.clone(), *v);
            continue;
        }
        // A const parameter written as an extent of an array argument takes that extent.
        if let GenericParam::Const { name, .. } = g {
            let mut found: Option<(u64, &str)> = None;
            for (param, axis) in extent_positions(k.item, &name.name) {
                let Some(&x) = shapes.get(param).and_then(|s| s.get(axis)) else {
                    continue;
                };
                match found {
                    Some((v, other)) if v != x => {
                        return Err(errors::const_param_conflict(kernel, &name.name, other, v, param, x));
                    }
                    _ => found = Some((x, param)),
                }
            }
            if let Some((v, _)) = found {
                out.insert(name.name.clone(), GenericArg::Const(v as i64));
                continue;
            }
        }
        let (name, bound) = match g {
            GenericParam::Type { name, bound } => (name, bound),
            GenericParam::Const { name, default: Some(e), .. } => {
                // Defaults may name `const` items (whose values are literals or other items).
                if let Ok(c) = crate::consteval::eval(e, &mut |n| const_item(program, n, 0)) {
                    out.insert(name.name.clone(), generic_arg(c));
                    continue;
                }
                return Err(errors::const_param_value(kernel, name));
            }
            GenericParam::Const { name, .. } => return Err(errors::const_param_value(kernel, name)),
        };
        let cands = accepted(bound.as_ref());
        let mut found: Option<(Scalar, &str)> = None;
        for p in &k.item.params {
            let TypeExpr::Array { elem, .. } = &p.ty else {
                continue;
            };
            let TypeExpr::Named(en) = &**elem else {
                continue;
            };
            if en.name != name.name {
                continue;
            }
            let Some(dt) = args.get(&p.name.name) else {
                continue;
            };
            if !cands.contains(dt) {
                return Err(errors::generic_dtype(kernel, &name.name, &p.name.name, *dt, &cands));
            }
            match found {
                Some((s, other)) if s != *dt => {
                    return Err(errors::generic_conflict(kernel, &name.name, other, s, &p.name.name, *dt));
                }
                _ => found = Some((*dt, &p.name.name)),
            }
        }
        match found {
            Some((s, _)) => {
                out.insert(name.name.clone(), GenericArg::Type(s));
            }
            None => return Err(errors::cannot_infer_launch(kernel, &name.name)),
        }
    }
    Ok(out)
}
