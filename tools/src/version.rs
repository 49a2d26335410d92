//! What this build of tilec is: its version, the commit it was built from, its code
//! generators and targets, and the LLVM linked in. `tilec --version` prints it, Python's
//! `tilec.__version__` and `tilec.build_info()` give it.

use crate::driver::CodeGenerator;
use crate::CpuBackend;
use std::fmt;

/// A description of this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// tilec's version (`"0.1.0"`).
    pub version: &'static str,
    /// The commit it was built from (`git describe`, or `TILEC_COMMIT` at build time;
    /// `"unknown"` without either).
    pub commit: &'static str,
    /// The CPU code generators built in, the default first.
    pub cpu_backends: Vec<CpuBackend>,
    /// The targets that can run kernels: `"cpu"`, `"vulkan"` (where a Vulkan loader and
    /// device exist), and `"cuda"` in builds with LLVM (where an NVIDIA driver exists).
    pub targets: Vec<&'static str>,
    /// The version of the LLVM linked in, if any (`"16.0.6"`).
    pub llvm: Option<String>,
}

impl BuildInfo {
    /// This build.
    pub fn get() -> BuildInfo {
        let mut cpu_backends = vec![CpuBackend::BEST];
        cpu_backends.extend(
            [CpuBackend::Llvm, CpuBackend::Cranelift].into_iter().filter(|b| *b != CpuBackend::BEST && b.available()),
        );
        let mut targets = vec!["cpu", "vulkan"];
        if CodeGenerator::LlvmPtx.available() {
            targets.push("cuda");
        }
        BuildInfo {
            version: env!("CARGO_PKG_VERSION"),
            commit: env!("TILEC_COMMIT"),
            cpu_backends,
            targets,
            llvm: tilec_codegen_cpu::llvm_version(),
        }
    }
}

impl fmt::Display for BuildInfo {
    /// Three lines: `tilec 0.1.0 (commit ...)`, the CPU code generators with the default
    /// named, the targets and LLVM's version.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "tilec {} (commit {})", self.version, self.commit)?;
        let backends: Vec<String> = self.cpu_backends.iter().map(|b| b.to_string()).collect();
        write!(f, "CPU code generators: {} (default)", backends[0])?;
        for b in &backends[1..] {
            write!(f, ", {b}")?;
        }
        if !CpuBackend::Llvm.available() {
            write!(f, "; built without LLVM")?;
        }
        writeln!(f)?;
        write!(f, "targets: {}", self.targets.join(", "))?;
        match &self.llvm {
            Some(v) => write!(f, "; LLVM {v}"),
            None => Ok(()),
        }
    }
}
