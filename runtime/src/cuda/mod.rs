//! The CUDA launcher: runs PTX kernels from `tilec-codegen-ptx` on an NVIDIA GPU through the
//! CUDA driver API (cudarc).
//!
//! Nothing is linked: [`CudaDevice::open`] first checks that the driver library
//! (`libcuda.so.1`, `nvcuda.dll` on Windows) can be loaded and that it has every function the
//! launcher calls (cudarc would panic otherwise), so the runtime builds and runs on machines
//! without an NVIDIA driver and says so (E0430). It then opens a device (the first by default)
//! and checks its compute capability (7.0 or newer). [`CudaDevice::launch`] JIT-compiles the
//! PTX with the driver, runs one compiled kernel over a grid with the launch ABI of
//! `tilec_codegen_ptx` (one program per block of 32 threads; arguments: the params buffer,
//! then one global pointer per array parameter), splitting grids larger than the device's
//! grid limits into several launches, and copies the `mut` arrays back into the
//! [`Bound`](crate::Bound) arguments. Every failure is a [`RunError`](crate::RunError) (codes
//! `E0430..`, plus the shared `E0416` and `E0417`); every driver call runs under
//! `catch_unwind`, so nothing here panics.

mod device;
mod driver;
mod launch;
#[cfg(test)]
mod tests;

pub use device::CudaDevice;
