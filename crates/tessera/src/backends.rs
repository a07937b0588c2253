//! The backends compiled into this build, by name, and the default choice.

use tessera_plan::DeviceSelection;
use tessera_runtime::{Backend, BackendError};

use crate::error::Error;

/// Names of the backends this build can run: `reference`, `cpu`, and `opencl` / `cuda` with
/// the cargo features of those names.
pub fn backend_names() -> Vec<&'static str> {
    let mut names = vec!["reference", "cpu"];
    if cfg!(feature = "opencl") {
        names.push("opencl");
    }
    if cfg!(feature = "cuda") {
        names.push("cuda");
    }
    names
}

/// The backend called `name`.
pub fn backend(name: &str) -> Result<Box<dyn Backend>, Error> {
    match name {
        "reference" => Ok(Box::new(tessera_reference::ReferenceBackend)),
        "cpu" => Ok(Box::new(tessera_cpu::CpuBackend::default())),
        #[cfg(feature = "opencl")]
        "opencl" => Ok(Box::new(tessera_opencl::OpenClBackend::default())),
        #[cfg(feature = "cuda")]
        "cuda" => Ok(Box::new(tessera_cuda::CudaBackend::default())),
        _ => {
            let names = backend_names();
            let mut message = format!("unknown backend `{name}`; ");
            if let Some(close) = tessera_ir::diagnostic::did_you_mean(name, names.iter().copied()) {
                message.push_str(&format!("did you mean `{close}`? "));
            }
            message.push_str(&format!("this build has {}", names.join(", ")));
            if matches!(name, "opencl" | "cuda") {
                message.push_str(&format!(" (rebuild with `--features {name}` for {name})"));
            }
            Err(Error::Usage(message))
        }
    }
}

/// The backend used when none is named: `cpu` when the system C compiler works, else
/// `reference`.
pub fn default_backend_name() -> &'static str {
    if tessera_jit::Compiler::discover().is_ok() {
        "cpu"
    } else {
        "reference"
    }
}

/// What identifies the machine `name`'s plans run on, for the tuning database: the host CPU's
/// model and core count for `cpu` and `reference`; for the device `device` selects, the GPU's
/// name, compute units and memory (and, for OpenCL, its platform and driver version; for CUDA,
/// its architecture).
pub fn device_identity(name: &str, device: &DeviceSelection) -> Result<String, Error> {
    if *device == DeviceSelection::Typical {
        return Ok("a typical device".into());
    }
    match name {
        "reference" | "cpu" => {
            let info = tessera_jit::cpu_info();
            Ok(format!(
                "{} ({} cores, {} threads usable)",
                info.model_name, info.physical_cores, info.available_threads
            ))
        }
        #[cfg(feature = "opencl")]
        "opencl" => {
            let (info, device) = tessera_opencl::select_device(device.name())
                .map_err(|e| BackendError::Unavailable(e.to_string()))?;
            Ok(format!(
                "{} on {} ({} compute units, {} bytes, driver {})",
                info.name,
                info.platform_name,
                info.compute_units,
                info.global_mem_bytes,
                device.driver_version().unwrap_or_else(|_| "unknown".into())
            ))
        }
        #[cfg(feature = "cuda")]
        "cuda" => {
            let gpu = tessera_cuda::select_device(device.name())
                .map_err(|e| BackendError::Unavailable(e.to_string()))?;
            Ok(format!(
                "{} {} ({} multiprocessors, {} bytes)",
                gpu.name, gpu.arch, gpu.limits.multiprocessors, gpu.limits.global_bytes
            ))
        }
        other => Err(backend(other).err().unwrap_or_else(|| {
            BackendError::Unsupported(format!("no device identity for the {other} backend")).into()
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_backend_exists_under_its_name() {
        for name in backend_names() {
            assert_eq!(backend(name).unwrap().name(), name);
        }
        assert!(backend_names().contains(&default_backend_name()));
    }

    #[test]
    fn an_unknown_backend_lists_the_available_ones() {
        let err = backend("refrence").err().unwrap();
        assert!(err.to_string().starts_with("unknown backend `refrence`; did you mean `reference`? this build has reference, cpu"), "{err}");
    }
}
