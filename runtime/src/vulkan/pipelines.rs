//! Compute pipelines kept by the device across launches: the descriptor set layout, pipeline
//! layout, shader module and pipeline of a shader are made on its first launch and reused by
//! later launches of the same words with the same descriptor counts, so that a kernel called
//! again (from the Python package or the Rust API) is not compiled again by the driver
//! (lavapipe compiles the shader with LLVM: tens of milliseconds). At most
//! [`MAX_PIPELINES`] are kept; beyond that a launch makes its own, destroyed after it.

use std::collections::HashMap;

use ash::vk;

/// The Vulkan objects of one compute pipeline.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pipeline {
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) pipeline_layout: vk::PipelineLayout,
    pub(super) shader: vk::ShaderModule,
    pub(super) pipeline: vk::Pipeline,
}

/// What identifies a pipeline: the SPIR-V words and the descriptor count of every binding.
pub(super) type PipelineKey = (Vec<u32>, Vec<u32>);

/// Most pipelines a device keeps.
pub(super) const MAX_PIPELINES: usize = 256;

/// The pipelines of a device, by key.
#[derive(Default)]
pub(super) struct Pipelines {
    pub(super) map: HashMap<PipelineKey, Pipeline>,
}

impl Pipelines {
    /// Destroys every pipeline's objects.
    ///
    /// # Safety
    /// The objects were made from `d`, and no submitted work uses them any more.
    pub(super) unsafe fn destroy(&mut self, d: &ash::Device) {
        for (_, p) in self.map.drain() {
            // SAFETY: per the caller; each object is destroyed once (drained).
            unsafe {
                d.destroy_pipeline(p.pipeline, None);
                d.destroy_pipeline_layout(p.pipeline_layout, None);
                d.destroy_shader_module(p.shader, None);
                d.destroy_descriptor_set_layout(p.set_layout, None);
            }
        }
    }
}
