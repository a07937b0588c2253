//! Whether the tools a suite needs are here: missing tools fail the suite when `CI` is set,
//! and skip it with a `skipped: ...` line otherwise.

/// Whether the `CI` environment variable is set (to anything but `false` or `0`).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// `Ok` when the tool is usable. Otherwise panics under CI (naming what to install) and
/// prints `skipped: ...` and returns `false` elsewhere.
pub fn require(suite: &str, probe: Result<(), String>, install: &str) -> bool {
    match probe {
        Ok(()) => true,
        Err(why) if in_ci() => panic!("{suite}: {why}; CI must run this suite: {install}"),
        Err(why) => {
            eprintln!("skipped: {suite}: {why} ({install})");
            false
        }
    }
}

/// Whether an OpenCL runtime with a device is usable (see [`require`]).
pub fn require_opencl(suite: &str) -> bool {
    let probe = match tessera_opencl::list_devices() {
        Ok(devices) if !devices.is_empty() => Ok(()),
        Ok(_) => Err("the OpenCL runtime lists no device".to_string()),
        Err(e) => Err(e.to_string()),
    };
    require(
        suite,
        probe,
        "install PoCL: `apt-get install pocl-opencl-icd ocl-icd-libopencl1`",
    )
}

/// Whether NVRTC and ptxas are usable (see [`require`]).
pub fn require_nvrtc_and_ptxas(suite: &str) -> bool {
    let probe = tessera_cuda::toolkit::find_nvrtc()
        .and_then(|_| tessera_cuda::nvrtc::nvrtc_version())
        .and_then(|_| tessera_cuda::toolkit::find_ptxas())
        .map(|_| ())
        .map_err(|e| e.to_string());
    require(
        suite,
        probe,
        "`pip install nvidia-cuda-nvrtc nvidia-cuda-nvcc`, or set TESSERA_CUDA_HOME",
    )
}
