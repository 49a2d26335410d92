//! The Vulkan objects of one launch, owned by [`LaunchObjects`], which destroys them when
//! dropped (on success and on every error path): mapped host-visible buffers, the descriptor
//! set and its layout and pool, the shader module, the pipeline, the command pool and the
//! fence.

use ash::vk;

use super::device::Limits;
use super::vk_err;
use crate::error::RunError;

/// A storage buffer in host-visible, host-coherent memory, mapped for its whole life.
pub(super) struct MappedBuffer {
    pub(super) buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// Bytes of the buffer (at least what was asked for).
    pub(super) size: u64,
    ptr: *mut u8,
}

impl MappedBuffer {
    /// Copies `data` to the start of the buffer (as much as fits).
    pub(super) fn write(&mut self, data: &[u8]) {
        let n = data.len().min(self.size as usize);
        // SAFETY: the mapping covers `size >= n` bytes, the GPU is not using the buffer
        // (launches write before submitting or after the fence), and `data` cannot overlap it.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, n) };
    }

    /// Copies the start of the buffer to `out` (as much as the buffer holds).
    pub(super) fn read(&self, out: &mut [u8]) {
        let n = out.len().min(self.size as usize);
        // SAFETY: as in `write`; the memory is host-coherent and the shader writes were made
        // available to the host by the command buffer's final barrier and the fence wait.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr, out.as_mut_ptr(), n) };
    }
}

/// Buffers are at least this large (a zero-sized buffer is invalid).
const MIN_BUFFER_BYTES: u64 = 16;

/// The size of the buffer [`LaunchObjects::create_buffer`] makes for `bytes` bytes: at least
/// [`MIN_BUFFER_BYTES`], a multiple of 4.
pub(super) fn buffer_size(bytes: u64) -> u64 {
    bytes.max(MIN_BUFFER_BYTES).next_multiple_of(4)
}

/// Every object of one launch. Handles start null and are filled in as they are created;
/// destroying a null handle is a no-op, so dropping this is right at any point.
pub(super) struct LaunchObjects<'d> {
    device: &'d ash::Device,
    queue: vk::Queue,
    /// Whether work was submitted: then dropping waits for the queue first.
    pub(super) submitted: bool,
    pub(super) buffers: Vec<MappedBuffer>,
    pub(super) set_layout: vk::DescriptorSetLayout,
    pub(super) descriptor_pool: vk::DescriptorPool,
    pub(super) shader: vk::ShaderModule,
    pub(super) pipeline_layout: vk::PipelineLayout,
    pub(super) pipeline: vk::Pipeline,
    pub(super) command_pool: vk::CommandPool,
    pub(super) fence: vk::Fence,
}

impl<'d> LaunchObjects<'d> {
    pub(super) fn new(device: &'d ash::Device, queue: vk::Queue) -> LaunchObjects<'d> {
        LaunchObjects {
            device,
            queue,
            submitted: false,
            buffers: Vec::new(),
            set_layout: vk::DescriptorSetLayout::null(),
            descriptor_pool: vk::DescriptorPool::null(),
            shader: vk::ShaderModule::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            command_pool: vk::CommandPool::null(),
            fence: vk::Fence::null(),
        }
    }

    /// Creates a mapped storage buffer of at least `bytes` bytes (and 16) and returns its
    /// index in `buffers`. Errors: it is larger than `limit` (E0428, naming `what` and
    /// `device_name`); no memory type is host-visible and host-coherent (E0424); a Vulkan call
    /// fails (E0421).
    pub(super) fn create_buffer(
        &mut self,
        limits: &Limits,
        device_name: &str,
        what: &str,
        bytes: u64,
        limit: u64,
    ) -> Result<usize, RunError> {
        let size = buffer_size(bytes);
        if size > limit {
            return Err(RunError::BufferTooLarge {
                device: device_name.to_string(),
                name: what.to_string(),
                bytes,
                limit,
            });
        }
        let d = self.device;
        let info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        // SAFETY: a valid create info; the buffer is recorded at once so it is destroyed.
        let buffer = unsafe { d.create_buffer(&info, None) }.map_err(vk_err("vkCreateBuffer"))?;
        self.buffers.push(MappedBuffer { buffer, memory: vk::DeviceMemory::null(), size, ptr: std::ptr::null_mut() });
        let index = self.buffers.len() - 1;
        // SAFETY: a query of a live buffer.
        let req = unsafe { d.get_buffer_memory_requirements(buffer) };
        let memory = self.allocate(limits, device_name, &req)?;
        self.buffers[index].memory = memory;
        // SAFETY: the memory was allocated for this buffer's requirements and is unbound.
        unsafe { d.bind_buffer_memory(buffer, memory, 0) }.map_err(vk_err("vkBindBufferMemory"))?;
        // SAFETY: host-visible memory, not yet mapped.
        let ptr = unsafe { d.map_memory(memory, 0, vk::WHOLE_SIZE, vk::MemoryMapFlags::empty()) }
            .map_err(vk_err("vkMapMemory"))?;
        self.buffers[index].ptr = ptr as *mut u8;
        Ok(index)
    }

    /// Allocates memory for `req` from a host-visible, host-coherent type, device-local ones
    /// first (falling back when they are full).
    fn allocate(
        &self,
        limits: &Limits,
        device_name: &str,
        req: &vk::MemoryRequirements,
    ) -> Result<vk::DeviceMemory, RunError> {
        let mem = &limits.memory;
        let host = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
        let types = &mem.memory_types[..(mem.memory_type_count as usize).min(mem.memory_types.len())];
        let usable = |i: usize| req.memory_type_bits & (1 << i) != 0 && types[i].property_flags.contains(host);
        let local = |i: usize| types[i].property_flags.contains(vk::MemoryPropertyFlags::DEVICE_LOCAL);
        let mut candidates: Vec<usize> = (0..types.len()).filter(|&i| usable(i) && local(i)).collect();
        candidates.extend((0..types.len()).filter(|&i| usable(i) && !local(i)));
        let mut last = None;
        for i in candidates {
            let info = vk::MemoryAllocateInfo::default().allocation_size(req.size).memory_type_index(i as u32);
            // SAFETY: a valid allocate info for an existing memory type.
            match unsafe { self.device.allocate_memory(&info, None) } {
                Ok(m) => return Ok(m),
                Err(e @ vk::Result::ERROR_OUT_OF_DEVICE_MEMORY) => last = Some(e),
                Err(e) => return Err(vk_err("vkAllocateMemory")(e)),
            }
        }
        match last {
            Some(e) => Err(vk_err("vkAllocateMemory")(e)),
            None => Err(RunError::VulkanUnsupported {
                device: device_name.to_string(),
                reason: "no memory type for storage buffers is host-visible and host-coherent".to_string(),
            }),
        }
    }
}

impl Drop for LaunchObjects<'_> {
    fn drop(&mut self) {
        let d = self.device;
        // SAFETY: after the queue is idle nothing uses these objects; each was created from
        // `d` (or is null, which every destroy call accepts) and is destroyed once. Freeing
        // memory unmaps it; destroying the pools frees the set and the command buffer.
        unsafe {
            if self.submitted {
                let _ = d.queue_wait_idle(self.queue);
            }
            d.destroy_fence(self.fence, None);
            d.destroy_command_pool(self.command_pool, None);
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.pipeline_layout, None);
            d.destroy_shader_module(self.shader, None);
            d.destroy_descriptor_pool(self.descriptor_pool, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            for b in self.buffers.drain(..) {
                d.destroy_buffer(b.buffer, None);
                d.free_memory(b.memory, None);
            }
        }
    }
}
