//! The Vulkan launcher: runs SPIR-V kernels from `tilec-codegen-spirv` on a Vulkan 1.1 device.
//!
//! [`VulkanDevice::open`] loads the system's Vulkan loader at run time (nothing is linked, so
//! the runtime works on machines without Vulkan), picks a physical device and checks what the
//! SPIR-V target needs: Vulkan 1.1 and subgroup shuffles in compute shaders.
//! [`VulkanDevice::launch`] runs one compiled kernel over a grid with the launch ABI of
//! `tilec_codegen_spirv` (descriptor set 0: one storage buffer per array parameter, then the
//! params buffer), splitting grids larger than the device's workgroup-count limits into
//! several dispatches, and copies the `mut` arrays back into the [`Bound`](crate::Bound)
//! arguments. Arrays larger than a storage buffer may be (`maxStorageBufferRange`) are bound
//! as descriptor arrays of chunks: [`VulkanDevice::chunking`] says which, for
//! `tilec_codegen_spirv::compile_with`, whose shaders index the chunks with constants, so no
//! device feature is needed. Every
//! failure is a [`RunError`] (codes `E0420..`); nothing here panics.

mod chunks;
mod device;
mod launch;
mod params;
mod pipelines;
mod resources;
#[cfg(test)]
mod tests;

pub use device::VulkanDevice;

use ash::vk;

use crate::error::RunError;

/// The error of a failed Vulkan call, naming the call and its `VkResult`.
pub(crate) fn vk_err(call: &'static str) -> impl Fn(vk::Result) -> RunError {
    move |r| RunError::VulkanCall { call, result: result_name(r) }
}

/// The name of a `VkResult` as the specification writes it: `VK_ERROR_DEVICE_LOST`.
pub(crate) fn result_name(r: vk::Result) -> String {
    format!("VK_{r:?}")
}
