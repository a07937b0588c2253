//! `tessera cache dir|clear`: the on-disk cache of compiled CPU kernels.

use tessera::Error;

use super::args::CacheAction;
use super::usage;

/// Prints the cache directory, or clears it.
pub fn cache(action: &CacheAction) -> Result<i32, Error> {
    let dir = tessera_jit::cache_dir();
    match action {
        CacheAction::Dir => println!("{}", dir.display()),
        CacheAction::Clear => {
            let removed = tessera_jit::clear_cache()
                .map_err(|e| usage(format!("cannot clear the cache in {}: {e}", dir.display())))?;
            println!("removed {removed} cached kernel(s) from {}", dir.display());
        }
    }
    Ok(0)
}
