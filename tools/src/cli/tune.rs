//! `tilec tune`: the `.npy` inputs read as `tilec run` reads them, then the driver's tuner
//! ([`crate::driver::Session::tune`]) over the kernel's tuning candidates; prints one line per
//! configuration (its median time, or why it was not timed) and where the winner is recorded.

use super::run::{add_scalars, read_args};
use crate::driver::{config_text, InstanceRequest, Session, SessionOptions, TuneOptions, Verdict};
use crate::{Error, SourceSet};
use std::collections::HashMap;
use std::io::Write;
use tilec_frontend::GenericArg;

/// Tunes `kernel` of `src` on `target` with the `--arg` values `flags`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tune(
    src: &SourceSet,
    kernel: &str,
    flags: &[String],
    fixed: &HashMap<String, GenericArg>,
    target: crate::Target,
    repeat: u32,
    out: &mut dyn Write,
    lints: &mut super::Lints,
) -> Result<(), Error> {
    let (mut args, scalars) = read_args(flags)?;
    let opts = SessionOptions {
        deny_warnings: lints.deny,
        cache_dir: lints.cache_dir.clone(),
        debug: lints.debug,
        ..Default::default()
    };
    let session = Session::new(src.clone(), opts);
    // The scalars' types are their parameters', the same in every configuration.
    let inst = session.instance(kernel, target, &InstanceRequest::of_args(&args, fixed));
    lints.found.append(&mut session.take_warnings());
    add_scalars(inst?.kernel(), scalars, &mut args)?;
    // One line per configuration as soon as it is decided (tuning on a slow device, such as
    // lavapipe compiling large shaders, takes minutes).
    let space: Vec<_> = session.tuning_space(kernel)?.into_iter().filter(|(n, _)| !fixed.contains_key(n)).collect();
    let count: usize = space.iter().map(|(_, v)| v.len()).product();
    let width: usize = space
        .iter()
        .map(|(n, v)| n.len() + 1 + v.iter().map(|g| crate::driver::arg_text(g).len()).max().unwrap_or(0))
        .sum::<usize>()
        + 2 * space.len().saturating_sub(1);
    if !space.is_empty() {
        let _ = writeln!(out, "{kernel}: {count} configurations on {}", target.device_name()?);
    }
    let ms = |d: Option<std::time::Duration>| d.map_or(String::new(), |d| format!("{:.3} ms", d.as_secs_f64() * 1e3));
    let mut line = |i: usize, t: &crate::driver::Trial| {
        let what = match &t.verdict {
            Verdict::Timed => ms(t.median),
            Verdict::Slower => format!("{}  (stopped: over twice the best)", ms(t.median)),
            Verdict::Pruned(why) => format!("pruned: {why}"),
            Verdict::Failed(why) => format!("failed: {why}"),
            Verdict::Disagrees(why) => format!("DISAGREES with the default (a bug; never chosen): {why}"),
        };
        let default = if i == 0 { "  (default)" } else { "" };
        let _ = writeln!(out, "  {:width$}  {what}{default}", config_text(&t.config));
        let _ = out.flush();
    };
    let tuning = session.tune(kernel, target, &args, fixed, &TuneOptions { repeat }, &mut line)?;
    if let Some(b) = tuning.best {
        let _ = writeln!(out, "best: {} ({})", config_text(&tuning.trials[b].config), ms(tuning.trials[b].median));
    }
    match (&tuning.record, tuning.best) {
        (Some(p), Some(_)) => {
            let _ = writeln!(out, "recorded in {}", p.display());
        }
        (None, Some(_)) => {
            let _ = writeln!(out, "not recorded: no cache folder (set TILEC_CACHE_DIR or --cache-dir)");
        }
        _ => {}
    }
    Ok(())
}
