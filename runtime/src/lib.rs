//! The launch API of tilec, shared by all targets: `.npy` input and output ([`read_npy`],
//! [`write_npy_atomic`]), host arrays ([`HostArray`]), binding arguments to a kernel's
//! parameters with shape checks ([`bind`]), evaluating the launch grid ([`launch_values`]) and
//! the parallel CPU launcher ([`launch_cpu`], [`run_cpu`]), the Vulkan launcher
//! ([`VulkanDevice`]), the CUDA launcher ([`CudaDevice`]) with arrays in the caller's CUDA
//! memory ([`DeviceArray`], described by the exchange protocols of [`interop`]), plus
//! deterministic test inputs ([`random_spd`], [`random_uniform`]).
//!
//! A CPU run is: read the arrays, [`parse_scalar`] the scalars, [`bind`] them to the kernel,
//! then [`run_cpu`] with the compiled kernel's function pointer (or [`launch_values`],
//! [`pack_args`] and [`launch_cpu`] separately), and write the outputs
//! ([`Bound::output`], [`write_npy_atomic`]). Every failure is a [`RunError`] with a stable
//! code; nothing here panics on bad input.

mod array;
mod bind;
mod cuda;
mod error;
mod gen;
pub mod interop;
mod launch;
mod npy;
mod params;
mod vulkan;

pub use array::{DeviceArray, HostArray};
pub use bind::{bind, convert_scalar, declared_shape, output_shape, param_type_text, parse_scalar, ArgValue, Bound};
pub use cuda::CudaDevice;
pub use error::RunError;
pub use gen::{random_spd, random_uniform};
pub use launch::{launch_cpu, launch_values, pack_args, run_cpu, CpuKernelFn};
pub use npy::{check_output_path, read_npy, write_npy_atomic, write_npys_atomic};
pub use tilec_midend::eval::LaunchValues;
pub use vulkan::VulkanDevice;
