//! The driver: the one way from a `.tile` source to a launched kernel, which the command line
//! (`check`, `build`, `run`), the Rust API ([`crate::Program`]), the Python extension, the
//! language server (its analysis: [`Session::analyze`]) and the tests share. A [`Session`]
//! parses a program once, checks it, builds its artifacts ([`Session::build`]), compiles
//! instances for given arguments ([`Session::instance`]), binds arguments and launches them
//! ([`Session::run`]). [`Target`] says where an instance runs, what it is checked against, its
//! lanes, code generator and launcher; [`Error`] is every failure, with a kind that the command
//! line maps to its exit code.

mod build;
pub mod cache;
mod cpu;
pub(crate) mod cuda;
mod error;
mod gpucode;
mod header;
mod launcher;
mod objects;
mod prints;
mod session;
mod signature;
mod target;
mod tiered;
mod tune;
pub(crate) mod vulkan;

pub use build::{Artifact, Build, BuildOptions, Emit};
pub use cpu::{dtypes_of, shapes_of, CpuRunner, RunOutcome};
pub use cuda::{cuda_launch, find_ptxas, find_ptxas_13, ptxas, PtxasReport};
pub use error::{Error, ErrorKind};
pub use prints::Prints;
pub use session::{Instance, InstanceRequest, Launch, Session, SessionOptions};
pub use signature::{GenericSig, KernelSig, ParamSig};
pub use target::{CodeGenerator, Lanes, Target};
pub use tune::{arg_text, config_text, Space, Trial, TuneOptions, Tuning, Verdict};
pub use vulkan::vulkan_launch;
