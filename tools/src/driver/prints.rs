//! The host side of `print` and `assert` (`tilec_midend::debug`): the debug buffer a launch
//! of a kernel that has them gets, and what is read back from it after the launch: the print
//! lines, in program order, and a failed assert as error E0445.

use super::error::{Error, ErrorKind};
use crate::SourceSet;
use tilec_grammar::diag::Diagnostic;
use tilec_grammar::span::Span;
use tilec_midend::debug::{decode::decode, DebugKind, BUFFER_PARAM, BUFFER_WORDS};
use tilec_midend::{Kernel, Loc, Module, Scalar};
use tilec_runtime::{ArgValue, Bound, HostArray};

/// What the `print`s of a launch wrote.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prints {
    /// One line per `print` run, in program order: by program id, then in the order the
    /// program ran them (`prog.tile:12 potrf_batched[3] step: k = 4, d = [[2.0, 0.0], ..]`).
    pub lines: Vec<String>,
    /// Lines that did not fit in the launch's debug buffer (4 MiB).
    pub dropped: u64,
}

impl Prints {
    /// The warning that `dropped` lines of a launch did not fit (W0106).
    pub fn dropped_warning(dropped: u64) -> Diagnostic {
        Diagnostic::warning("W0106", format!("{dropped} `print` line(s) dropped: the launch's debug buffer is full"))
            .note(format!("a launch keeps {} MiB of print records", (BUFFER_WORDS * 4) >> 20))
            .help("print less (fewer values, or only from some programs: `if program_id(0) == 0 { .. }`)")
    }
}

/// Whether `kernel` takes a debug buffer (it has `print`s or `assert`s left after the
/// compile's options).
pub(crate) fn has_buffer(kernel: &Kernel) -> bool {
    kernel.params.last().is_some_and(|p| p.name == BUFFER_PARAM)
}

/// The zeroed debug buffer of one launch, as its argument.
pub(crate) fn buffer() -> Result<(String, ArgValue), Error> {
    let a = HostArray::zeros(Scalar::U32, &[BUFFER_WORDS]).map_err(Error::run)?;
    Ok((BUFFER_PARAM.to_string(), ArgValue::Array(a)))
}

/// Reads the debug buffer of a launch of `kernel` back from `bound`: the print lines, or
/// E0445 for an `assert` that failed (the first in program order, with the count).
pub(crate) fn read(src: &SourceSet, module: &Module, kernel: &Kernel, bound: &Bound) -> Result<Prints, Error> {
    let Some(words) = bound.array(BUFFER_PARAM).filter(|_| has_buffer(kernel)) else {
        return Ok(Prints::default());
    };
    let words: Vec<u32> = words.bytes().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    let report = decode(&module.debug, &words);
    let program = |p: [u32; 3]| {
        let ids: Vec<String> = p[..kernel.grid_rank as usize].iter().map(u32::to_string).collect();
        format!("{}[{}]", kernel.name, ids.join(", "))
    };
    if report.failed_asserts > 0 {
        let first = report.first_failure(&module.debug);
        let site = first.and_then(|r| module.debug.get(r.site as usize));
        let (Some(r), Some(site)) = (first, site) else {
            let msg = format!(
                "an assertion failed in {} program(s) of kernel `{}` (which: not known, the debug buffer was full)",
                report.failed_asserts, kernel.name
            );
            return Err(Error::bare(ErrorKind::Input, vec![Diagnostic::error("E0445", msg)]));
        };
        let mut d = Diagnostic::error("E0445", format!("assertion failed in {}: {}", program(r.program), site.text))
            .label(Span { start: site.loc.start, end: site.loc.end }, "this assertion is false");
        d.source = module.source_of(site.loc);
        if report.failed_asserts > 1 {
            d = d.note(format!("it failed {} times in all; this is the first in program order", report.failed_asserts));
        }
        d = d.help("`--no-asserts` (Python: `asserts=False`) compiles without assertions");
        return Err(Error::bare(ErrorKind::Input, vec![d]).with_source(src));
    }
    let lines = report
        .records
        .iter()
        .filter_map(|r| {
            let site = module.debug.get(r.site as usize).filter(|s| s.kind == DebugKind::Print)?;
            let values: Vec<String> = site
                .value_locs
                .iter()
                .zip(&r.values)
                .map(|(l, v)| format!("{} = {v}", text(src, module, *l)))
                .collect();
            let (file, line) = position(src, module, site.loc);
            let label = if site.text.is_empty() { String::new() } else { format!(" {}", site.text) };
            Some(format!("{file}:{line} {}{label}: {}", program(r.program), values.join(", ")))
        })
        .collect();
    Ok(Prints { lines, dropped: report.dropped })
}

/// The source text of the file `loc` points into (`None`: the main file).
fn file_text<'s>(src: &'s SourceSet, module: &Module, loc: Loc) -> (String, &'s str) {
    match module.source_of(loc) {
        None => (src.main_name.clone(), src.main_src.as_str()),
        Some(m) => {
            let text = src.modules.iter().find(|(n, _)| *n == m).map_or("", |(_, t)| t.as_str());
            (format!("{m}.tile"), text)
        }
    }
}

/// The text at `loc` (the printed expression), on one line.
fn text(src: &SourceSet, module: &Module, loc: Loc) -> String {
    let (_, t) = file_text(src, module, loc);
    let s = t.get(loc.start as usize..loc.end as usize).unwrap_or("?");
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The file name and 1-based line of `loc`.
fn position(src: &SourceSet, module: &Module, loc: Loc) -> (String, usize) {
    let (name, t) = file_text(src, module, loc);
    let before = t.get(..loc.start as usize).unwrap_or("");
    (name, before.matches('\n').count() + 1)
}
