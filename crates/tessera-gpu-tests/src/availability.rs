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

/// Whether a CUDA device is usable. CI machines have no GPU, so a missing device skips the
/// suite (with a `skipped: ...` line) even under `CI`; with `TESSERA_REQUIRE_CUDA=1`, as on a
/// GPU machine, it fails instead.
pub fn require_cuda_device(suite: &str) -> bool {
    let probe = tessera_cuda::select_device(None)
        .map(|_| ())
        .map_err(|e| e.to_string());
    match probe {
        Ok(()) => true,
        Err(why) if std::env::var("TESSERA_REQUIRE_CUDA").is_ok_and(|v| v == "1") => {
            panic!("{suite}: {why}; TESSERA_REQUIRE_CUDA=1 demands a CUDA device")
        }
        Err(why) => {
            eprintln!("skipped: {suite}: {why} (needs an NVIDIA GPU and its driver)");
            false
        }
    }
}
