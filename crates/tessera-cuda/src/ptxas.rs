//! Running `ptxas -v` on PTX and reading its per-kernel resource report.

use std::process::Command;

use crate::error::CudaError;
use crate::toolkit::find_ptxas;

/// The resources `ptxas` assigns to one kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's (entry function's) name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, in bytes.
    pub shared_bytes: u64,
    /// Stack frame per thread, in bytes.
    pub stack_bytes: u64,
    /// Bytes stored to local memory because registers ran out.
    pub spill_stores: u64,
    /// Bytes loaded back from local memory because registers ran out.
    pub spill_loads: u64,
}

/// Assembles `ptx` for `arch` (`"sm_90"`) with `ptxas -v` and returns each kernel's resources,
/// in the order ptxas reports them.
pub fn ptxas_report(ptx: &str, arch: &str) -> Result<Vec<KernelResources>, CudaError> {
    let ptxas = find_ptxas()?;
    let dir = tempfile::tempdir()
        .map_err(|e| CudaError::Ptxas(format!("cannot create a temporary folder: {e}")))?;
    // Removed by the command-line tool's SIGINT/SIGTERM handler too (dropping `dir` removes it
    // otherwise).
    let _registered = tessera_cleanup::register(dir.path());
    let input = dir.path().join("kernels.ptx");
    let output = dir.path().join("kernels.cubin");
    std::fs::write(&input, ptx)
        .map_err(|e| CudaError::Ptxas(format!("cannot write {}: {e}", input.display())))?;
    let result = Command::new(&ptxas)
        .arg(format!("-arch={arch}"))
        .arg("-v")
        .arg(&input)
        .arg("-o")
        .arg(&output)
        .output()
        .map_err(|e| CudaError::Ptxas(format!("cannot run {}: {e}", ptxas.display())))?;
    let log = String::from_utf8_lossy(&result.stderr).into_owned()
        + &String::from_utf8_lossy(&result.stdout);
    if !result.status.success() {
        let saved = crate::nvrtc::save_source(ptx, "ptx");
        return Err(CudaError::Ptxas(format!(
            "failed on {} ({}):\n{log}",
            saved.display(),
            result.status
        )));
    }
    parse_report(&log)
}

/// Parses the `ptxas -v` log: a `Compiling entry function 'NAME'` line opens a kernel; the
/// `bytes stack frame, N bytes spill stores, M bytes spill loads` and `Used R registers, ...
/// S bytes smem` lines that follow fill it in.
pub fn parse_report(log: &str) -> Result<Vec<KernelResources>, CudaError> {
    let mut kernels: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            kernels.push(KernelResources {
                name: name.to_string(),
                ..Default::default()
            });
            continue;
        }
        let Some(current) = kernels.last_mut() else {
            continue;
        };
        if line.contains("stack frame") {
            current.stack_bytes = number_before(line, "bytes stack frame")?;
            current.spill_stores = number_before(line, "bytes spill stores")?;
            current.spill_loads = number_before(line, "bytes spill loads")?;
        } else if line.contains("Used") && line.contains("registers") {
            current.registers = u32::try_from(number_before(line, "registers")?).map_err(|_| {
                CudaError::Ptxas(format!("register count out of range in `{line}`"))
            })?;
            if line.contains("bytes smem") {
                current.shared_bytes = number_before(line, "bytes smem")?;
            }
        }
    }
    Ok(kernels)
}

/// The integer just before `unit` in `line` (`"12 bytes spill stores"` -> 12).
fn number_before(line: &str, unit: &str) -> Result<u64, CudaError> {
    let unparsable = || CudaError::Ptxas(format!("cannot read `{unit}` in `{}`", line.trim()));
    let before = line
        .split(unit)
        .next()
        .filter(|b| b.len() < line.len())
        .ok_or_else(unparsable)?;
    let word = before
        .trim_end()
        .rsplit([' ', ',', ':'])
        .next()
        .ok_or_else(unparsable)?;
    word.parse().map_err(|_| unparsable())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_registers_shared_memory_and_spills_per_kernel() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'tiled' for 'sm_90'\n\
ptxas info    : Function properties for tiled\n\
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
ptxas info    : Used 40 registers, used 1 barriers, 2312 bytes smem, 400 bytes cmem[0]\n\
ptxas info    : Compiling entry function 'naive' for 'sm_90'\n\
ptxas info    : Function properties for naive\n\
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
ptxas info    : Used 18 registers, used 0 barriers, 392 bytes cmem[0]\n";
        let kernels = parse_report(log).unwrap();
        assert_eq!(
            kernels,
            vec![
                KernelResources {
                    name: "tiled".into(),
                    registers: 40,
                    shared_bytes: 2312,
                    stack_bytes: 8,
                    spill_stores: 4,
                    spill_loads: 12
                },
                KernelResources {
                    name: "naive".into(),
                    registers: 18,
                    shared_bytes: 0,
                    stack_bytes: 0,
                    spill_stores: 0,
                    spill_loads: 0
                },
            ]
        );
    }
}
