//! CUDA driver discovery (never panicking without a driver), device selection and limits.

use std::sync::Arc;

use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use tessera_codegen::kernel::DeviceLimits;

use crate::error::CudaError;

/// Whether the CUDA driver library loads and reports at least one device. Never panics.
pub fn cuda_available() -> bool {
    driver_present().is_ok() && CudaContext::device_count().is_ok_and(|n| n > 0)
}

/// `Ok` when `libcuda` can be loaded; must precede every other driver call, which would
/// otherwise panic inside the bindings.
pub fn driver_present() -> Result<(), CudaError> {
    // SAFETY: only probes whether the library can be opened.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        Ok(())
    } else {
        Err(CudaError::NoDriver)
    }
}

/// A selected device: its context, name, architecture and limits.
#[derive(Clone, Debug)]
pub struct CudaDevice {
    /// The primary context of the device.
    pub context: Arc<CudaContext>,
    /// The device's name.
    pub name: String,
    /// The NVRTC architecture of its compute capability (`sm_90`).
    pub arch: String,
    /// Its limits, for planning.
    pub limits: DeviceLimits,
    /// Peak memory bandwidth, GB/s, from the memory clock and bus width the driver reports
    /// (none where it reports neither).
    pub peak_gb_s: Option<f64>,
}

/// Picks a device: `selection` is an ordinal or a case-insensitive substring of the name;
/// without one, device 0.
pub fn select_device(selection: Option<&str>) -> Result<CudaDevice, CudaError> {
    driver_present()?;
    let count =
        CudaContext::device_count().map_err(|e| CudaError::driver("counting devices", e))?;
    if count < 1 {
        return Err(CudaError::NoDevice(
            "the CUDA driver reports no device; use `--backend opencl` or `--backend cpu`".into(),
        ));
    }
    let mut names = Vec::new();
    for ordinal in 0..count as usize {
        let context = CudaContext::new(ordinal)
            .map_err(|e| CudaError::driver(format!("opening device {ordinal}"), e))?;
        let name = context
            .name()
            .map_err(|e| CudaError::driver("reading the device name", e))?;
        let wanted = match selection.map(str::trim).filter(|s| !s.is_empty()) {
            None => ordinal == 0,
            Some(text) => match text.parse::<usize>() {
                Ok(index) => index == ordinal,
                Err(_) => name.to_lowercase().contains(&text.to_lowercase()),
            },
        };
        if wanted {
            return describe(context, name);
        }
        names.push(format!("  {ordinal} {name}"));
    }
    Err(CudaError::NoDevice(format!(
        "no CUDA device matches `{}`; give an ordinal or part of a name, one of:\n{}",
        selection.unwrap_or_default(),
        names.join("\n")
    )))
}

fn describe(context: Arc<CudaContext>, name: String) -> Result<CudaDevice, CudaError> {
    let attribute = |a: Attr| -> Result<u32, CudaError> {
        let value = context
            .attribute(a)
            .map_err(|e| CudaError::driver(format!("reading {a:?}"), e))?;
        Ok(u32::try_from(value).unwrap_or(0))
    };
    let (major, minor) = context
        .compute_capability()
        .map_err(|e| CudaError::driver("reading the compute capability", e))?;
    let global_bytes = context
        .total_mem()
        .map_err(|e| CudaError::driver("reading the memory size", e))?
        as u64;
    let limits = DeviceLimits {
        name: name.clone(),
        max_threads_per_block: attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dims: [
            attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dims: [
            u64::from(attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?),
            u64::from(attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?),
            u64::from(attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?),
        ],
        // What a block may opt into: kernels past the static 48 KiB use dynamic shared memory.
        shared_bytes_per_block: attribute(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )? as usize,
        shared_bytes_per_sm: attribute(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        )? as usize,
        max_threads_per_sm: attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
        max_blocks_per_sm: attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
        registers_per_sm: attribute(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
        max_registers_per_thread: 255,
        warp_size: attribute(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
        multiprocessors: attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        global_bytes,
    };
    // Double data rate: two transfers per clock (kHz) over the bus (bits).
    let peak_gb_s = match (
        attribute(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        attribute(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    ) {
        (Ok(khz), Ok(bits)) if khz > 0 && bits > 0 => {
            Some(2.0 * f64::from(khz) * 1e3 * f64::from(bits) / 8.0 / 1e9)
        }
        _ => None,
    };
    Ok(CudaDevice {
        context,
        name,
        arch: format!("sm_{major}{minor}"),
        limits,
        peak_gb_s,
    })
}
