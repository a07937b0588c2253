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

/// The backend used when none is named, and why it is not `cpu` when it is not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultBackend {
    /// The backend's name.
    pub name: &'static str,
    /// Why the `cpu` backend cannot be the default (no working C compiler), and what falling
    /// back to `reference` costs; `None` when `cpu` is the default.
    pub fallback: Option<String>,
}

/// The backend used when none is named: `cpu` when the system C compiler works, else
/// `reference`, with the reason to show the user (a fallback is never silent).
pub fn default_backend() -> DefaultBackend {
    default_backend_given(tessera_jit::Compiler::discover().map(|_| ()))
}

/// The default backend when discovering the C compiler gave `compiler`.
fn default_backend_given(compiler: Result<(), impl std::fmt::Display>) -> DefaultBackend {
    match compiler {
        Ok(()) => DefaultBackend {
            name: "cpu",
            fallback: None,
        },
        Err(why) => DefaultBackend {
            name: "reference",
            fallback: Some(format!(
                "running on the `reference` interpreter, typically 10-100x slower than `cpu`, \
                 because the `cpu` backend has no working C compiler: {why}; \
                 pass `--backend reference` to choose the interpreter without this warning"
            )),
        },
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

/// How many devices `--device` can name for backend `name` (0 for the host backends, which
/// run on the host itself, and where no device is found).
pub fn device_count(name: &str) -> usize {
    match name {
        #[cfg(feature = "opencl")]
        "opencl" => tessera_opencl::list_devices().map_or(0, |d| d.len()),
        #[cfg(feature = "cuda")]
        "cuda" => (0..1024)
            .take_while(|i| tessera_cuda::select_device(Some(&i.to_string())).is_ok())
            .count(),
        _ => 0,
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
        assert!(backend_names().contains(&default_backend().name));
    }

    #[test]
    fn an_unknown_backend_lists_the_available_ones() {
        let err = backend("refrence").err().unwrap();
        assert!(err.to_string().starts_with("unknown backend `refrence`; did you mean `reference`? this build has reference, cpu"), "{err}");
    }

    #[test]
    fn without_a_compiler_the_default_falls_back_with_the_reason() {
        let choice = default_backend_given(Err("C compiler `/nonexistent/cc` not found"));
        assert_eq!(choice.name, "reference");
        let why = choice.fallback.unwrap();
        assert!(
            why.contains("/nonexistent/cc") && why.contains("slower"),
            "{why}"
        );
        assert_eq!(default_backend_given(Ok::<(), String>(())).fallback, None);
    }
}
