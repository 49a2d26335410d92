//! [`VulkanDevice::launch`]: buffers for the arguments, the params buffer with one region per
//! dispatch, the descriptor set, the compute pipeline, and the timed submissions.

use std::time::{Duration, Instant};

use ash::vk;
use tilec_codegen_spirv::SpirvKernel;
use tilec_midend::{Kernel, ParamKind};

use super::chunks::ArrayPlan;
use super::device::VulkanDevice;
use super::params::{check_bound, module_uses, pack_params, params_words, plan_grid, Chunk, GridPlan};
use super::pipelines::{Pipeline, MAX_PIPELINES};
use super::resources::LaunchObjects;
use super::vk_err;
use crate::bind::{ArgValue, Bound};
use crate::error::RunError;

/// The descriptor type of binding `b` with `arrays` array bindings before the params buffer.
fn binding_type(b: u32, arrays: u32) -> vk::DescriptorType {
    if b < arrays {
        vk::DescriptorType::STORAGE_BUFFER
    } else {
        vk::DescriptorType::STORAGE_BUFFER_DYNAMIC
    }
}

impl VulkanDevice {
    /// Runs every program of `grid` with the compiled shader `k` of `kernel` on the bound
    /// arguments, `repeat` times (0 counts as 1), and returns the wall time of each run
    /// (submission to completion: the GPU work, without buffer setup or copies). Every run
    /// starts from the arguments as bound (an in-place kernel does not see its own output);
    /// after the last one the `mut` arrays in `bound` hold the results. A grid with an extent
    /// of zero or below runs nothing (the times are then zero).
    ///
    /// Grids larger than the device's workgroup-count limits are split into several
    /// dispatches, each with its program-id offsets in the params buffer.
    ///
    /// Arrays the shader binds in chunks (`k.chunks`, from [`VulkanDevice::chunking`]) get one
    /// buffer per chunk, written from and (`mut` ones) copied back to their part of the array.
    ///
    /// Errors: `k`, `kernel` and `bound` do not belong together (E0417), also when `k` binds
    /// as one buffer an array larger than a storage buffer may be, or its chunks are larger
    /// than that or too few for the array; `k` was compiled for another subgroup size (E0425)
    /// or needs more shared memory than the device has (E0426); it uses `f64` or `i64` and the
    /// device does not support them (E0427), or chunks and the device lacks descriptor
    /// indexing, or it needs more storage buffers (arrays and chunks) than a shader may bind
    /// (E0424); an extent of the grid is above `i32::MAX` (E0416); the params buffer is too
    /// large (E0428); a Vulkan call fails (E0421); an array is in CUDA device memory (E0442).
    /// These checks come before the grid's: a
    /// launch over an empty grid runs nothing but fails like any other. Every object of the
    /// launch is destroyed before it returns, also on errors.
    pub fn launch(
        &self,
        k: &SpirvKernel,
        kernel: &Kernel,
        bound: &mut Bound,
        grid: [i64; 3],
        repeat: u32,
    ) -> Result<Vec<Duration>, RunError> {
        self.launch_split(k, kernel, bound, grid, repeat, self.limits.max_group_count)
    }

    /// [`VulkanDevice::launch`] with dispatches of at most `max_groups` workgroups per axis
    /// (the device's limits, or smaller ones to test the split).
    pub(super) fn launch_split(
        &self,
        k: &SpirvKernel,
        kernel: &Kernel,
        bound: &mut Bound,
        grid: [i64; 3],
        repeat: u32,
        max_groups: [u32; 3],
    ) -> Result<Vec<Duration>, RunError> {
        self.check(k, kernel, bound)?;
        let plans = self.plan_arrays(k, kernel, bound)?;
        let runs = repeat.max(1) as usize;
        let Some(GridPlan { grid: grid32, chunks }) = plan_grid(grid, max_groups)? else {
            return Ok(vec![Duration::ZERO; runs]);
        };
        let words = params_words(&k.params, bound, grid32);
        let region = (words.len() * 4) as u64;
        let (params, stride) = pack_params(&words, &chunks, self.limits.min_storage_offset_alignment as usize);

        // The queue is used by one launch at a time; `objects` (declared later, dropped
        // earlier) waits for it while this is held.
        let _queue = self.queue_lock.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut objects = LaunchObjects::new(&self.device, self.queue);
        let o = &mut objects;

        // Storage buffers: the arrays (or their chunks) in parameter order, then the params
        // buffer.
        let limit = self.limits.max_storage_buffer_range as u64;
        let mut arrays: Vec<(ArrayPlan, Vec<usize>)> = Vec::with_capacity(plans.len());
        for plan in plans {
            let (name, arg) = &bound.args()[plan.param];
            let ArgValue::Array(a) = arg else {
                continue;
            };
            let data = a.bytes();
            let mut buffers = Vec::with_capacity(plan.count);
            for j in 0..plan.count {
                let what =
                    if plan.chunked { format!("chunk {j} of array `{name}`") } else { format!("array `{name}`") };
                let part = &data[plan.range(j, data.len())];
                let b = o.create_buffer(&self.limits, self.name(), &what, part.len() as u64, limit)?;
                o.buffers[b].write(part);
                buffers.push(b);
            }
            arrays.push((plan, buffers));
        }
        // Dynamic offsets are 32-bit.
        let pb =
            o.create_buffer(&self.limits, self.name(), "the params buffer", params.len() as u64, u32::MAX as u64)?;
        o.buffers[pb].write(&params);

        let counts: Vec<u32> = arrays.iter().map(|(_, b)| b.len() as u32).chain([1]).collect();
        let pipeline = self.pipeline(o, k, &counts)?;
        let set = self.descriptor_set(o, pipeline.set_layout, &arrays, pb, region)?;
        let cmd = self.record(o, set, &pipeline, &chunks, stride as u64)?;

        let d = &self.device;
        // SAFETY: a valid create info.
        o.fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }.map_err(vk_err("vkCreateFence"))?;
        let cmds = [cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        let mut times = Vec::with_capacity(runs);
        for run in 0..runs {
            if run > 0 {
                // Start again from the bound arguments (only `mut` arrays were written).
                for (plan, buffers) in &arrays {
                    let i = plan.param;
                    if let (true, ArgValue::Array(a)) = (is_mut(kernel, i), &bound.args()[i].1) {
                        let data = a.bytes();
                        for (j, &b) in buffers.iter().enumerate() {
                            o.buffers[b].write(&data[plan.range(j, data.len())]);
                        }
                    }
                }
                // SAFETY: the fence is signaled and no longer in use (waited for below).
                unsafe { d.reset_fences(&[o.fence]) }.map_err(vk_err("vkResetFences"))?;
            }
            let t0 = Instant::now();
            // SAFETY: the command buffer is recorded and not pending (the previous run was
            // waited for); the queue is held through `_queue`; every object it uses lives in
            // `objects`, which waits for the queue before destroying them.
            unsafe { d.queue_submit(self.queue, &submit, o.fence) }.map_err(vk_err("vkQueueSubmit"))?;
            o.submitted = true;
            // SAFETY: a fence of this device.
            unsafe { d.wait_for_fences(&[o.fence], true, u64::MAX) }.map_err(vk_err("vkWaitForFences"))?;
            times.push(t0.elapsed());
        }

        let args = bound.args_mut();
        for (plan, buffers) in &arrays {
            let i = plan.param;
            if let (true, ArgValue::Array(a)) = (is_mut(kernel, i), &mut args[i].1) {
                let data = a.bytes_mut();
                let len = data.len();
                for (j, &b) in buffers.iter().enumerate() {
                    o.buffers[b].read(&mut data[plan.range(j, len)]);
                }
            }
        }
        Ok(times)
    }

    /// The checks of a launch that do not depend on the grid.
    fn check(&self, k: &SpirvKernel, kernel: &Kernel, bound: &Bound) -> Result<(), RunError> {
        check_bound(kernel, &k.params, bound)?;
        bound.check_host_memory("vulkan")?;
        let arrays = kernel.params.iter().filter(|p| matches!(p.kind, ParamKind::Array { .. })).count();
        if k.arrays as usize != arrays {
            return Err(RunError::Mismatch {
                detail: format!(
                    "the SPIR-V shader has {} array bindings, kernel `{}` has {arrays} arrays",
                    k.arrays, kernel.symbol
                ),
            });
        }
        if k.lanes != self.limits.subgroup_size {
            return Err(RunError::SubgroupSize {
                device: self.name().to_string(),
                lanes: k.lanes,
                subgroup: self.limits.subgroup_size,
            });
        }
        if k.shared_bytes > self.limits.max_shared_bytes {
            return Err(RunError::SharedMemory {
                device: self.name().to_string(),
                needed: k.shared_bytes,
                available: self.limits.max_shared_bytes,
            });
        }
        let uses = module_uses(&k.words)?;
        let missing = if uses.f64 && !self.supports_f64() {
            Some("f64 (shaderFloat64)")
        } else if uses.i64 && !self.supports_i64() {
            Some("i64 (shaderInt64)")
        } else if uses.storage16 && !self.supports_storage16() {
            Some("f16 and bf16 arrays (storageBuffer16BitAccess)")
        } else {
            None
        };
        if let Some(feature) = missing {
            return Err(RunError::DeviceFeature { device: self.name().to_string(), feature });
        }
        Ok(())
    }

    /// The descriptor pool and set of layout `set_layout`: binding `j` is the `j`-th array's
    /// buffer (or the descriptor array of its chunks), the last binding the params buffer
    /// (dynamic: its offset is chosen per dispatch).
    fn descriptor_set(
        &self,
        o: &mut LaunchObjects<'_>,
        set_layout: vk::DescriptorSetLayout,
        arrays: &[(ArrayPlan, Vec<usize>)],
        params: usize,
        region: u64,
    ) -> Result<vk::DescriptorSet, RunError> {
        let d = &self.device;
        let n = arrays.len() as u32;
        let kind = |b: u32| binding_type(b, n);
        // The buffers of every binding.
        let bound: Vec<Vec<(usize, u64)>> = arrays
            .iter()
            .map(|(_, buffers)| buffers.iter().map(|&b| (b, vk::WHOLE_SIZE)).collect())
            .chain([vec![(params, region)]])
            .collect();
        let mut sizes =
            vec![vk::DescriptorPoolSize { ty: vk::DescriptorType::STORAGE_BUFFER_DYNAMIC, descriptor_count: 1 }];
        let storage: usize = arrays.iter().map(|(_, buffers)| buffers.len()).sum();
        if storage > 0 {
            sizes.push(vk::DescriptorPoolSize {
                ty: vk::DescriptorType::STORAGE_BUFFER,
                descriptor_count: storage as u32,
            });
        }
        let info = vk::DescriptorPoolCreateInfo::default().max_sets(1).pool_sizes(&sizes);
        // SAFETY: as above.
        o.descriptor_pool =
            unsafe { d.create_descriptor_pool(&info, None) }.map_err(vk_err("vkCreateDescriptorPool"))?;
        let layouts = [set_layout];
        let info = vk::DescriptorSetAllocateInfo::default().descriptor_pool(o.descriptor_pool).set_layouts(&layouts);
        // SAFETY: the pool has room for this one set; it is freed with the pool.
        let sets = unsafe { d.allocate_descriptor_sets(&info) }.map_err(vk_err("vkAllocateDescriptorSets"))?;
        let Some(&set) = sets.first() else {
            return Err(vk_err("vkAllocateDescriptorSets")(vk::Result::ERROR_UNKNOWN));
        };
        let infos: Vec<Vec<vk::DescriptorBufferInfo>> = bound
            .iter()
            .map(|buffers| {
                buffers
                    .iter()
                    .map(|&(b, range)| vk::DescriptorBufferInfo { buffer: o.buffers[b].buffer, offset: 0, range })
                    .collect()
            })
            .collect();
        let writes: Vec<vk::WriteDescriptorSet> = infos
            .iter()
            .enumerate()
            .map(|(b, infos)| {
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(b as u32)
                    .dst_array_element(0)
                    .descriptor_type(kind(b as u32))
                    .buffer_info(infos)
            })
            .collect();
        // SAFETY: the writes name live buffers of matching descriptor types; the set is not
        // in use.
        unsafe { d.update_descriptor_sets(&writes, &[]) };
        Ok(set)
    }

    /// The pipeline of `k` with `counts[j]` descriptors at binding `j` (the arrays, then the
    /// params buffer): kept from an earlier launch (`pipelines.rs`), or made now (requiring
    /// full subgroups of `k.lanes` where the device can) and kept, or, when the device keeps
    /// enough already, owned by `o`.
    fn pipeline(&self, o: &mut LaunchObjects<'_>, k: &SpirvKernel, counts: &[u32]) -> Result<Pipeline, RunError> {
        let key = (k.words.clone(), counts.to_vec());
        let kept = |s: &Self| s.pipelines.lock().unwrap_or_else(|p| p.into_inner()).map.get(&key).copied();
        if let Some(p) = kept(self) {
            return Ok(p);
        }
        self.make_pipeline(o, k, counts)?;
        let p = Pipeline {
            set_layout: o.set_layout,
            pipeline_layout: o.pipeline_layout,
            shader: o.shader,
            pipeline: o.pipeline,
        };
        let mut kept = self.pipelines.lock().unwrap_or_else(|p| p.into_inner());
        if kept.map.len() < MAX_PIPELINES && !kept.map.contains_key(&key) {
            // The device owns them now (destroyed when it is dropped).
            kept.map.insert(key, p);
            o.set_layout = vk::DescriptorSetLayout::null();
            o.pipeline_layout = vk::PipelineLayout::null();
            o.shader = vk::ShaderModule::null();
            o.pipeline = vk::Pipeline::null();
        }
        Ok(p)
    }

    /// Makes the set layout, shader module, pipeline layout and pipeline of `k` into `o`.
    fn make_pipeline(&self, o: &mut LaunchObjects<'_>, k: &SpirvKernel, counts: &[u32]) -> Result<(), RunError> {
        let d = &self.device;
        let n = counts.len() as u32 - 1;
        let bindings: Vec<vk::DescriptorSetLayoutBinding> = counts
            .iter()
            .enumerate()
            .map(|(b, &count)| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b as u32)
                    .descriptor_type(binding_type(b as u32, n))
                    .descriptor_count(count)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE)
            })
            .collect();
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: a valid create info; the layout is destroyed by `o` (or the device).
        o.set_layout =
            unsafe { d.create_descriptor_set_layout(&info, None) }.map_err(vk_err("vkCreateDescriptorSetLayout"))?;
        let info = vk::ShaderModuleCreateInfo::default().code(&k.words);
        // SAFETY: the words are a SPIR-V module (magic checked); the module is destroyed by `o`.
        o.shader = unsafe { d.create_shader_module(&info, None) }.map_err(vk_err("vkCreateShaderModule"))?;
        let layouts = [o.set_layout];
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts);
        // SAFETY: as above.
        o.pipeline_layout =
            unsafe { d.create_pipeline_layout(&info, None) }.map_err(vk_err("vkCreatePipelineLayout"))?;
        let mut required =
            vk::PipelineShaderStageRequiredSubgroupSizeCreateInfo::default().required_subgroup_size(k.lanes);
        let mut stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(o.shader)
            .name(c"main");
        if self.limits.size_control {
            stage = stage.flags(vk::PipelineShaderStageCreateFlags::REQUIRE_FULL_SUBGROUPS).push_next(&mut required);
        }
        let infos = [vk::ComputePipelineCreateInfo::default().stage(stage).layout(o.pipeline_layout)];
        // SAFETY: valid create infos (the subgroup-size features are enabled where used).
        let made = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &infos, None) };
        let (pipelines, error) = match made {
            Ok(p) => (p, None),
            Err((p, e)) => (p, Some(e)),
        };
        o.pipeline = pipelines.first().copied().unwrap_or_default();
        match error {
            Some(e) => Err(vk_err("vkCreateComputePipelines")(e)),
            None if o.pipeline == vk::Pipeline::null() => {
                Err(vk_err("vkCreateComputePipelines")(vk::Result::ERROR_UNKNOWN))
            }
            None => Ok(()),
        }
    }

    /// The command pool and buffer: one dispatch per chunk, then a barrier that makes the
    /// shader writes visible to the host.
    fn record(
        &self,
        o: &mut LaunchObjects<'_>,
        set: vk::DescriptorSet,
        pipeline: &Pipeline,
        chunks: &[Chunk],
        stride: u64,
    ) -> Result<vk::CommandBuffer, RunError> {
        let d = &self.device;
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(self.queue_family);
        // SAFETY: a valid create info; the pool is destroyed by `o`.
        o.command_pool = unsafe { d.create_command_pool(&info, None) }.map_err(vk_err("vkCreateCommandPool"))?;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(o.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: as above; the buffer is freed with the pool.
        let cmds = unsafe { d.allocate_command_buffers(&info) }.map_err(vk_err("vkAllocateCommandBuffers"))?;
        let Some(&cmd) = cmds.first() else {
            return Err(vk_err("vkAllocateCommandBuffers")(vk::Result::ERROR_UNKNOWN));
        };
        let sets = [set];
        // SAFETY: recording a fresh command buffer with objects that live in `o`; every
        // dynamic offset is a multiple of `minStorageBufferOffsetAlignment` inside the params
        // buffer (`stride` is).
        unsafe {
            d.begin_command_buffer(cmd, &vk::CommandBufferBeginInfo::default())
                .map_err(vk_err("vkBeginCommandBuffer"))?;
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline.pipeline);
            for (c, chunk) in chunks.iter().enumerate() {
                let offset = [(c as u64 * stride) as u32];
                d.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    pipeline.pipeline_layout,
                    0,
                    &sets,
                    &offset,
                );
                let [x, y, z] = chunk.count;
                d.cmd_dispatch(cmd, x, y, z);
            }
            let barrier = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            d.cmd_pipeline_barrier(
                cmd,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &[barrier],
                &[],
                &[],
            );
            d.end_command_buffer(cmd).map_err(vk_err("vkEndCommandBuffer"))?;
        }
        Ok(cmd)
    }
}

/// Whether parameter `param` of `kernel` is a `mut` array.
fn is_mut(kernel: &Kernel, param: usize) -> bool {
    matches!(kernel.params.get(param).map(|p| &p.kind), Some(ParamKind::Array { mutable: true, .. }))
}
