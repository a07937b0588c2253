//! OpenCL platform and device discovery, selection (`--device`), and the device's limits.

use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_GPU, Device};
use opencl3::platform::get_platforms;
use std::sync::Mutex;

use crate::error::OpenClError;

/// One OpenCL device and the limits Tessera plans with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Index of its platform in the runtime's platform list.
    pub platform_index: usize,
    /// Index of the device within its platform.
    pub device_index: usize,
    /// The platform's name (`Portable Computing Language`).
    pub platform_name: String,
    /// The device's name.
    pub name: String,
    /// Whether the device reports itself as a GPU.
    pub is_gpu: bool,
    /// Maximum work-items per work-group.
    pub max_work_group_size: usize,
    /// Maximum work-items per work-group along each dimension (x first, as OpenCL orders them).
    pub max_work_item_sizes: Vec<usize>,
    /// Local (shared) memory per work-group, in bytes.
    pub local_mem_bytes: u64,
    /// Compute units.
    pub compute_units: u32,
    /// Global memory, in bytes.
    pub global_mem_bytes: u64,
    /// Largest single allocation, in bytes.
    pub max_alloc_bytes: u64,
    /// Whether `double` is supported.
    pub has_fp64: bool,
}

impl DeviceInfo {
    /// `P:D name (platform)`, as `--device` accepts and error messages list.
    pub fn label(&self) -> String {
        format!(
            "{}:{} {} ({})",
            self.platform_index, self.device_index, self.name, self.platform_name
        )
    }
}

/// Every device of every platform, in platform then device order.
pub fn list_devices() -> Result<Vec<(DeviceInfo, Device)>, OpenClError> {
    // Some ICD loaders and drivers (PoCL among them) crash when first initialised from two
    // threads at once: discovery is serialised.
    static DISCOVERY: Mutex<()> = Mutex::new(());
    let _serialised = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    let platforms = get_platforms().map_err(|e| OpenClError::call("listing platforms", e))?;
    if platforms.is_empty() {
        return Err(OpenClError::NoPlatform);
    }
    let mut devices = Vec::new();
    for (platform_index, platform) in platforms.iter().enumerate() {
        let platform_name = platform
            .name()
            .unwrap_or_else(|_| "unnamed platform".into());
        // A platform without devices answers CL_DEVICE_NOT_FOUND: that is just an empty list.
        let ids = platform.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
        for (device_index, id) in ids.into_iter().enumerate() {
            let device = Device::new(id);
            let info = describe(&device, platform_index, device_index, &platform_name)?;
            devices.push((info, device));
        }
    }
    Ok(devices)
}

/// Picks a device: `selection` is `P:D` (platform and device indices), a flat index into
/// [`list_devices`], or a case-insensitive substring of the device's or platform's name; without
/// one, the first GPU, else the first device.
pub fn select_device(selection: Option<&str>) -> Result<(DeviceInfo, Device), OpenClError> {
    let devices = list_devices()?;
    if devices.is_empty() {
        return Err(OpenClError::NoDevice(
            "the OpenCL platforms list no device: install a driver (ICD), e.g. `apt-get install pocl-opencl-icd`".into(),
        ));
    }
    let position = match selection.map(str::trim).filter(|s| !s.is_empty()) {
        None => devices.iter().position(|(info, _)| info.is_gpu).unwrap_or(0),
        Some(wanted) => find(&devices, wanted).ok_or_else(|| {
            let listing: Vec<String> = devices.iter().map(|(info, _)| format!("  {}", info.label())).collect();
            OpenClError::NoDevice(format!(
                "no OpenCL device matches `{wanted}`; give `P:D`, an index or part of a name, one of:\n{}",
                listing.join("\n")
            ))
        })?,
    };
    Ok(devices
        .into_iter()
        .nth(position)
        .expect("position is within the list"))
}

fn find(devices: &[(DeviceInfo, Device)], wanted: &str) -> Option<usize> {
    if let Some((p, d)) = wanted.split_once(':')
        && let (Ok(p), Ok(d)) = (p.trim().parse::<usize>(), d.trim().parse::<usize>())
    {
        return devices
            .iter()
            .position(|(i, _)| i.platform_index == p && i.device_index == d);
    }
    if let Ok(index) = wanted.parse::<usize>() {
        return (index < devices.len()).then_some(index);
    }
    let lower = wanted.to_lowercase();
    devices.iter().position(|(info, _)| {
        info.name.to_lowercase().contains(&lower)
            || info.platform_name.to_lowercase().contains(&lower)
    })
}

fn describe(
    device: &Device,
    platform_index: usize,
    device_index: usize,
    platform_name: &str,
) -> Result<DeviceInfo, OpenClError> {
    let query =
        |what: &'static str| move |e| OpenClError::call(format!("reading the device's {what}"), e);
    Ok(DeviceInfo {
        platform_index,
        device_index,
        platform_name: platform_name.to_string(),
        name: device.name().map_err(query("name"))?.trim().to_string(),
        is_gpu: device.dev_type().map_err(query("type"))? & CL_DEVICE_TYPE_GPU != 0,
        max_work_group_size: device
            .max_work_group_size()
            .map_err(query("max work-group size"))?,
        max_work_item_sizes: device
            .max_work_item_sizes()
            .map_err(query("max work-item sizes"))?,
        local_mem_bytes: device
            .local_mem_size()
            .map_err(query("local memory size"))?,
        compute_units: device.max_compute_units().map_err(query("compute units"))?,
        global_mem_bytes: device
            .global_mem_size()
            .map_err(query("global memory size"))?,
        max_alloc_bytes: device
            .max_mem_alloc_size()
            .map_err(query("max allocation size"))?,
        has_fp64: device
            .double_fp_config()
            .map(|config| config != 0)
            .unwrap_or(false),
    })
}
