//! PTX per (source, architecture, exactness), cached for the process: NVRTC runs once per
//! distinct kernel source.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::CudaError;
use crate::nvrtc::compile_ptx;

/// The PTX of `source` for `arch`, compiled now or taken from the cache; the flag says whether
/// it was compiled now.
pub fn cached_ptx(source: &str, arch: &str, exact: bool) -> Result<(Arc<str>, bool), CudaError> {
    type Cache = Mutex<HashMap<(String, String, bool), Arc<str>>>;
    static PTX: OnceLock<Cache> = OnceLock::new();
    let cache = PTX.get_or_init(Default::default);
    let key = (source.to_string(), arch.to_string(), exact);
    if let Some(ptx) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok((ptx.clone(), false));
    }
    let ptx: Arc<str> = compile_ptx(source, arch, exact)?.into();
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, ptx.clone());
    Ok((ptx, true))
}
