//! Contexts and built programs, cached per process: a program is built once per (source,
//! device, options), since building (LLVM on PoCL) dominates the cost of small runs.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use opencl3::context::Context;
use opencl3::device::Device;
use opencl3::program::Program;

use crate::device::DeviceInfo;
use crate::error::OpenClError;

/// The context of a device, shared by every executable on it.
pub fn context_for(device: &Device) -> Result<Arc<Context>, OpenClError> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<Context>>>> = OnceLock::new();
    let mut contexts = CONTEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let key = device.id() as usize;
    if let Some(context) = contexts.get(&key) {
        return Ok(context.clone());
    }
    let context = Arc::new(
        Context::from_device(device).map_err(|e| OpenClError::call("creating a context", e))?,
    );
    contexts.insert(key, context.clone());
    Ok(context)
}

/// The build options for a program: exact mode turns contraction off (the source also says
/// `FP_CONTRACT OFF`) and asks for correctly rounded f32 division and square root. Warnings
/// are off (`-w`): they would be about the user's program (a value compared with itself), and
/// some drivers print them on stderr; a failed build still reports its log.
pub fn build_options(exact: bool) -> &'static str {
    if exact {
        "-w -cl-fp32-correctly-rounded-divide-sqrt"
    } else {
        "-w -cl-mad-enable"
    }
}

/// A built program for `source` on `device` with `options`, from the per-process cache or
/// built now. The second value says whether it was built now. A failed build saves the
/// source to a temporary file and reports its path with the build log.
pub fn build_program(
    context: &Arc<Context>,
    info: &DeviceInfo,
    source: &str,
    options: &str,
) -> Result<(Arc<Program>, bool), OpenClError> {
    type Cache = Mutex<HashMap<(usize, String, String), Arc<Program>>>;
    static PROGRAMS: OnceLock<Cache> = OnceLock::new();
    let device = context
        .devices()
        .first()
        .copied()
        .unwrap_or(std::ptr::null_mut()) as usize;
    let key = (device, options.to_string(), source.to_string());
    let cache = PROGRAMS.get_or_init(Default::default);
    if let Some(program) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok((program.clone(), false));
    }
    // Built outside the lock so that tests building different programs overlap.
    let program =
        Program::create_and_build_from_source(context, source, options).map_err(|log| {
            OpenClError::Build {
                device: info.name.clone(),
                source_path: save_source(source),
                options: options.to_string(),
                log,
            }
        })?;
    let program = Arc::new(program);
    let mut programs = cache.lock().unwrap_or_else(|e| e.into_inner());
    Ok((programs.entry(key).or_insert(program).clone(), true))
}

/// Writes a failed program's source to a kept temporary file; returns its path.
fn save_source(source: &str) -> std::path::PathBuf {
    tempfile::Builder::new()
        .prefix("tessera-")
        .suffix(".cl")
        .tempfile()
        .and_then(|mut file| {
            file.write_all(source.as_bytes())?;
            file.keep().map_err(|e| e.error)
        })
        .map(|(_, path)| path)
        .unwrap_or_default()
}
