//! Opening a Vulkan device: the loader, an instance, the choice of a physical device, the
//! checks the SPIR-V target needs, and a logical device with one compute queue.

use std::ffi::{c_char, CStr};
use std::sync::Mutex;

use ash::vk;

use super::vk_err;
use crate::error::RunError;

/// The file name of the Vulkan loader that [`ash::Entry::load`] opens.
#[cfg(windows)]
const LOADER: &str = "vulkan-1.dll";
#[cfg(any(target_os = "macos", target_os = "ios"))]
const LOADER: &str = "libvulkan.dylib";
#[cfg(any(target_os = "android", target_os = "fuchsia"))]
const LOADER: &str = "libvulkan.so";
#[cfg(not(any(windows, target_os = "macos", target_os = "ios", target_os = "android", target_os = "fuchsia")))]
const LOADER: &str = "libvulkan.so.1";

/// The loader and an instance; destroys the instance when dropped (after the device).
struct InstanceOwner {
    instance: ash::Instance,
    /// Keeps the loader library loaded while the instance lives.
    _entry: ash::Entry,
}

impl Drop for InstanceOwner {
    fn drop(&mut self) {
        // SAFETY: every object made from the instance (the logical device) is destroyed
        // before its owner is dropped (`VulkanDevice`'s fields drop after its `drop`).
        unsafe { self.instance.destroy_instance(None) };
    }
}

/// What a launch needs to know about the physical device.
#[derive(Debug, Clone)]
pub(super) struct Limits {
    pub(super) subgroup_size: u32,
    /// Whether pipelines can require `subgroup_size` with full subgroups
    /// (`VK_EXT_subgroup_size_control`, enabled on the device).
    pub(super) size_control: bool,
    pub(super) max_shared_bytes: u32,
    pub(super) max_group_count: [u32; 3],
    pub(super) max_storage_buffer_range: u32,
    pub(super) min_storage_offset_alignment: u64,
    /// Storage buffers one shader may use (arrays, their chunks and the params buffer).
    pub(super) max_storage_buffers: u32,
    pub(super) memory: vk::PhysicalDeviceMemoryProperties,
}

/// A Vulkan device opened for running tilec kernels: a logical device with one compute
/// queue, on a physical device with Vulkan 1.1 and subgroup shuffles in compute shaders.
///
/// Launches on one `VulkanDevice` are serialized (the queue is used by one launch at a time).
/// Everything is destroyed when it is dropped.
pub struct VulkanDevice {
    pub(super) device: ash::Device,
    pub(super) queue: vk::Queue,
    pub(super) queue_family: u32,
    /// Held for the whole of a launch: the queue must not be used by two threads at once.
    pub(super) queue_lock: Mutex<()>,
    pub(super) limits: Limits,
    /// The device's `maxStorageBufferRange` (`limits` may hold a smaller, pretended one).
    real_max_storage_buffer_range: u32,
    name: String,
    driver_info: String,
    f64: bool,
    i64: bool,
    storage16: bool,
    /// Compute pipelines reused across launches (`pipelines.rs`).
    pub(super) pipelines: Mutex<super::pipelines::Pipelines>,
    /// Dropped after `Drop::drop` has destroyed the device.
    _instance: InstanceOwner,
}

impl std::fmt::Debug for VulkanDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VulkanDevice")
            .field("name", &self.name)
            .field("driver_info", &self.driver_info)
            .field("subgroup_size", &self.limits.subgroup_size)
            .field("max_shared_bytes", &self.limits.max_shared_bytes)
            .field("f64", &self.f64)
            .field("i64", &self.i64)
            .field("storage16", &self.storage16)
            .field("max_storage_buffer_range", &self.limits.max_storage_buffer_range)
            .finish()
    }
}

impl Drop for VulkanDevice {
    fn drop(&mut self) {
        // SAFETY: launches free their own objects before returning and the kept pipelines are
        // destroyed here, so after the device is idle nothing made from it is alive; the
        // instance is destroyed afterwards by its owner.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.pipelines.get_mut().unwrap_or_else(|p| p.into_inner()).destroy(&self.device);
            self.device.destroy_device(None);
        }
    }
}

/// A fixed-size C string from a Vulkan structure, lossily as UTF-8.
fn c_text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn version_text(v: u32) -> String {
    format!("{}.{}.{}", vk::api_version_major(v), vk::api_version_minor(v), vk::api_version_patch(v))
}

fn has_extension(exts: &[vk::ExtensionProperties], name: &CStr) -> bool {
    exts.iter().any(|e| e.extension_name_as_c_str().is_ok_and(|n| n == name))
}

/// The device's name and its type, as listed in errors: `llvmpipe (LLVM 15.0.6) (cpu)`.
fn device_label(p: &vk::PhysicalDeviceProperties) -> String {
    let ty = match p.device_type {
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
        vk::PhysicalDeviceType::CPU => "CPU",
        _ => "other",
    };
    format!("{} ({ty})", c_text(&p.device_name))
}

impl VulkanDevice {
    /// Opens Vulkan device `index` (in the loader's order), or by default the first discrete
    /// GPU, else the first device. Enables `shaderFloat64` and `shaderInt64` where the device
    /// supports them.
    ///
    /// Errors: the loader library is missing (E0420, saying how to install one); a Vulkan
    /// call fails (E0421); there is no device or driver (E0422); `index` is out of range
    /// (E0423, listing the devices); the device lacks Vulkan 1.1, subgroup shuffles in
    /// compute shaders or a compute queue (E0424).
    pub fn open(index: Option<usize>) -> Result<VulkanDevice, RunError> {
        // SAFETY: loads the system's Vulkan loader; its initialisers are trusted like any
        // system library's.
        let entry = unsafe { ash::Entry::load() }
            .map_err(|e| RunError::VulkanLoader { library: LOADER, detail: e.to_string() })?;
        // SAFETY: plain queries of the loader.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(vk_err("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_1 {
            return Err(RunError::VulkanUnsupported {
                device: format!("the Vulkan loader {LOADER}"),
                reason: format!("it supports Vulkan {}, 1.1 is needed", version_text(version)),
            });
        }
        // SAFETY: as above.
        let instance_exts = unsafe { entry.enumerate_instance_extension_properties(None) }
            .map_err(vk_err("vkEnumerateInstanceExtensionProperties"))?;
        let portability = ash::khr::portability_enumeration::NAME;
        let mut ext_names: Vec<*const c_char> = Vec::new();
        let mut flags = vk::InstanceCreateFlags::empty();
        if has_extension(&instance_exts, portability) {
            ext_names.push(portability.as_ptr());
            flags |= vk::InstanceCreateFlags::ENUMERATE_PORTABILITY_KHR;
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"tilec")
            .engine_name(c"tilec")
            .api_version(vk::API_VERSION_1_1);
        let create =
            vk::InstanceCreateInfo::default().application_info(&app).enabled_extension_names(&ext_names).flags(flags);
        // SAFETY: the create info and what it points to are valid for the call. No driver
        // (ICD) at all is the loader's way of saying that there is no device.
        let instance = unsafe { entry.create_instance(&create, None) }.map_err(|e| match e {
            vk::Result::ERROR_INCOMPATIBLE_DRIVER => RunError::NoVulkanDevice,
            e => vk_err("vkCreateInstance")(e),
        })?;
        let owner = InstanceOwner { instance, _entry: entry };
        let inst = &owner.instance;
        // SAFETY: queries of a live instance.
        let pdevs = unsafe { inst.enumerate_physical_devices() }.map_err(vk_err("vkEnumeratePhysicalDevices"))?;
        if pdevs.is_empty() {
            return Err(RunError::NoVulkanDevice);
        }
        // SAFETY: as above, with handles it returned.
        let props: Vec<vk::PhysicalDeviceProperties> =
            pdevs.iter().map(|&p| unsafe { inst.get_physical_device_properties(p) }).collect();
        let chosen = match index {
            Some(i) if i < pdevs.len() => i,
            Some(i) => {
                return Err(RunError::VulkanDeviceIndex { index: i, devices: props.iter().map(device_label).collect() })
            }
            None => props.iter().position(|p| p.device_type == vk::PhysicalDeviceType::DISCRETE_GPU).unwrap_or(0),
        };
        open_physical(owner, pdevs[chosen], &props[chosen])
    }

    /// The device's name (`llvmpipe (LLVM 15.0.6, 256 bits)`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The driver and the Vulkan version of the device:
    /// `llvmpipe (Mesa 22.3.6 (LLVM 15.0.6)), Vulkan 1.3.230`; without
    /// `VK_KHR_driver_properties`, the raw driver version number instead of the names.
    pub fn driver_info(&self) -> &str {
        &self.driver_info
    }

    /// Lanes per subgroup: kernels must be compiled for this many lanes.
    pub fn subgroup_size(&self) -> u32 {
        self.limits.subgroup_size
    }

    /// Shared (workgroup) memory per program in bytes (`maxComputeSharedMemorySize`).
    pub fn max_shared_bytes(&self) -> u32 {
        self.limits.max_shared_bytes
    }

    /// Whether shaders may use `f64` (`shaderFloat64`, enabled when supported).
    pub fn supports_f64(&self) -> bool {
        self.f64
    }

    /// Whether shaders may use `i64` (`shaderInt64`, enabled when supported).
    pub fn supports_i64(&self) -> bool {
        self.i64
    }

    /// Whether shaders may read and write arrays of `f16` and `bf16`
    /// (`storageBuffer16BitAccess`, enabled when supported).
    pub fn supports_storage16(&self) -> bool {
        self.storage16
    }

    /// The largest storage buffer a shader may bind, in bytes (`maxStorageBufferRange`):
    /// larger arrays are split into chunks (see [`VulkanDevice::chunking`]).
    pub fn max_storage_buffer_range(&self) -> u32 {
        self.limits.max_storage_buffer_range
    }

    /// Makes launches and [`VulkanDevice::chunking`] act as if storage buffers could hold at
    /// most `bytes` bytes (at least 16, at most the device's limit): a way to test chunked
    /// arrays with small ones.
    #[doc(hidden)]
    pub fn pretend_max_storage_buffer_range(&mut self, bytes: u32) {
        let real = self.real_max_storage_buffer_range;
        self.limits.max_storage_buffer_range = bytes.clamp(16.min(real), real);
    }
}

/// Checks the physical device and creates the logical device with one compute queue.
fn open_physical(
    owner: InstanceOwner,
    pdev: vk::PhysicalDevice,
    props: &vk::PhysicalDeviceProperties,
) -> Result<VulkanDevice, RunError> {
    let inst = &owner.instance;
    let name = c_text(&props.device_name);
    let unsupported = |reason: String| RunError::VulkanUnsupported { device: name.clone(), reason };
    if props.api_version < vk::API_VERSION_1_1 {
        return Err(unsupported(format!("it supports Vulkan {}, 1.1 is needed", version_text(props.api_version))));
    }
    // SAFETY: queries of a live physical device.
    let exts = unsafe { inst.enumerate_device_extension_properties(pdev) }
        .map_err(vk_err("vkEnumerateDeviceExtensionProperties"))?;
    // Only through the extension: the instance asks for Vulkan 1.1, so 1.2 core structures are
    // off limits even on newer devices.
    let has_driver_props = has_extension(&exts, ash::khr::driver_properties::NAME);
    let has_size_control = has_extension(&exts, ash::ext::subgroup_size_control::NAME);

    let mut subgroup = vk::PhysicalDeviceSubgroupProperties::default();
    let mut driver = vk::PhysicalDeviceDriverProperties::default();
    let mut size_props = vk::PhysicalDeviceSubgroupSizeControlProperties::default();
    {
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut subgroup);
        if has_driver_props {
            p2 = p2.push_next(&mut driver);
        }
        if has_size_control {
            p2 = p2.push_next(&mut size_props);
        }
        // SAFETY: the chain holds structures of a core version or extension the device has.
        unsafe { inst.get_physical_device_properties2(pdev, &mut p2) };
    }
    let lanes = subgroup.subgroup_size;
    if !subgroup.supported_stages.contains(vk::ShaderStageFlags::COMPUTE)
        || !subgroup.supported_operations.contains(vk::SubgroupFeatureFlags::BASIC | vk::SubgroupFeatureFlags::SHUFFLE)
        || lanes == 0
    {
        return Err(unsupported("it has no subgroup shuffles in compute shaders".to_string()));
    }

    let mut size_features = vk::PhysicalDeviceSubgroupSizeControlFeatures::default();
    let mut storage16_features = vk::PhysicalDevice16BitStorageFeatures::default();
    let features = {
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut storage16_features);
        if has_size_control {
            f2 = f2.push_next(&mut size_features);
        }
        // SAFETY: as above.
        unsafe { inst.get_physical_device_features2(pdev, &mut f2) };
        f2.features
    };
    // Pipelines then run exactly one full subgroup of `lanes` per workgroup, even where the
    // compiler could pick another width (Intel, AMD).
    let size_control = has_size_control
        && size_features.subgroup_size_control == vk::TRUE
        && size_features.compute_full_subgroups == vk::TRUE
        && size_props.required_subgroup_size_stages.contains(vk::ShaderStageFlags::COMPUTE)
        && (size_props.min_subgroup_size..=size_props.max_subgroup_size).contains(&lanes);

    // SAFETY: as above.
    let families = unsafe { inst.get_physical_device_queue_family_properties(pdev) };
    let Some(family) =
        families.iter().position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE) && q.queue_count > 0)
    else {
        return Err(unsupported("it has no compute queue".to_string()));
    };
    let family = family as u32;

    let f64 = features.shader_float64 == vk::TRUE;
    let i64 = features.shader_int64 == vk::TRUE;
    let storage16 = storage16_features.storage_buffer16_bit_access == vk::TRUE;
    let enabled = vk::PhysicalDeviceFeatures::default().shader_float64(f64).shader_int64(i64);
    let priorities = [1.0f32];
    let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
    let mut dev_exts: Vec<*const c_char> = Vec::new();
    if size_control {
        dev_exts.push(ash::ext::subgroup_size_control::NAME.as_ptr());
    }
    // Required by the specification wherever it is offered (MoltenVK).
    let portability_subset = c"VK_KHR_portability_subset";
    if has_extension(&exts, portability_subset) {
        dev_exts.push(portability_subset.as_ptr());
    }
    let mut enable_size = vk::PhysicalDeviceSubgroupSizeControlFeatures::default()
        .subgroup_size_control(true)
        .compute_full_subgroups(true);
    let mut create = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&dev_exts)
        .enabled_features(&enabled);
    let mut enable_storage16 = vk::PhysicalDevice16BitStorageFeatures::default().storage_buffer16_bit_access(true);
    if size_control {
        create = create.push_next(&mut enable_size);
    }
    if storage16 {
        create = create.push_next(&mut enable_storage16);
    }
    // SAFETY: the create info and everything it points to are valid for the call; the
    // features and extensions enabled are supported (checked above).
    let device = unsafe { inst.create_device(pdev, &create, None) }.map_err(vk_err("vkCreateDevice"))?;
    // SAFETY: the device was created with one queue of this family.
    let queue = unsafe { device.get_device_queue(family, 0) };
    // SAFETY: a query of a live physical device.
    let memory = unsafe { inst.get_physical_device_memory_properties(pdev) };

    let driver_info = if has_driver_props {
        format!(
            "{} ({}), Vulkan {}",
            c_text(&driver.driver_name),
            c_text(&driver.driver_info),
            version_text(props.api_version)
        )
    } else {
        format!("driver version {:#x}, Vulkan {}", props.driver_version, version_text(props.api_version))
    };
    let l = &props.limits;
    Ok(VulkanDevice {
        device,
        queue,
        queue_family: family,
        queue_lock: Mutex::new(()),
        limits: Limits {
            subgroup_size: lanes,
            size_control,
            max_shared_bytes: l.max_compute_shared_memory_size,
            max_group_count: l.max_compute_work_group_count,
            max_storage_buffer_range: l.max_storage_buffer_range,
            min_storage_offset_alignment: l.min_storage_buffer_offset_alignment.max(4),
            max_storage_buffers: l.max_per_stage_descriptor_storage_buffers.min(l.max_descriptor_set_storage_buffers),
            memory,
        },
        real_max_storage_buffer_range: l.max_storage_buffer_range,
        name,
        driver_info,
        f64,
        i64,
        storage16,
        pipelines: Mutex::new(Default::default()),
        _instance: owner,
    })
}
