//! The driver: the one way from a `.tile` source to a launched kernel, which the command line
//! (`check`, `build`, `run`), the Rust API ([`crate::Program`]), the Python extension, the
//! language server (its analysis: [`Session::analyze`]) and the tests share. [`Target`] says where an instance runs and what it is checked against; [`Error`] is
//! every failure, with a kind that the command line maps to its exit code.

mod cpu;
pub(crate) mod cuda;
mod error;
mod session;
mod signature;
mod target;
pub(crate) mod vulkan;

pub use cpu::{dtypes_of, shapes_of, CpuRunner, RunOutcome};
pub use cuda::{cuda_launch, find_ptxas, find_ptxas_13, ptxas, PtxasReport};
pub use error::{Error, ErrorKind};
pub use session::{Instance, InstanceRequest, Launch, Session, SessionOptions};
pub use signature::{GenericSig, KernelSig, ParamSig};
pub use target::Target;
pub use vulkan::vulkan_launch;
