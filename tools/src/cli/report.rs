//! `tilec build --target cpu --report`: how long each kernel instance takes to compile, so
//! that compile time is watched per instance (the goal is milliseconds, like the kernels).

use crate::Error;
use crate::SourceSet;
use std::collections::HashMap;
use std::io::Write;
use std::time::Instant;
use tilec_frontend::GenericArg;

/// Compiles every instance of `src` (with the `--generic` values in `fixed`) and prints one
/// line per instance with its compile time (Cranelift or LLVM) in milliseconds (JIT, as `tilec run`
/// compiles it), then the time of the front end and the passes for all of them together.
/// Errors: the program's diagnostics, or E0901 when code generation fails.
pub(crate) fn cpu_compile_times(
    src: &SourceSet,
    fixed: &HashMap<String, GenericArg>,
    backend: tilec_codegen_cpu::CpuBackend,
    out: &mut dyn Write,
    lints: &mut super::Lints,
) -> Result<(), Error> {
    let t0 = Instant::now();
    let compiled = lints.compile(src, fixed, false, None, crate::Target::CPU)?;
    let front = t0.elapsed();
    let m = &compiled.module;
    for k in &m.kernels {
        let t = Instant::now();
        tilec_codegen_cpu::compile_jit_with(m, k, backend)
            .map_err(|e| crate::Error::codegen("E0901", m, k, e.to_string(), e.loc))?;
        let _ = writeln!(out, "{}: {:.1} ms ({backend})", k.symbol, t.elapsed().as_secs_f64() * 1e3);
    }
    let _ = writeln!(
        out,
        "front end and passes: {:.1} ms for {} instance{}",
        front.as_secs_f64() * 1e3,
        m.kernels.len(),
        if m.kernels.len() == 1 { "" } else { "s" }
    );
    Ok(())
}
