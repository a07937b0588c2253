//! Overlapped time tiling on CUDA: every program of the test kit's corpus under each
//! overlapped test plan (T = 1 to 4), in exact mode, against the reference backend, fields and
//! reductions bitwise equal. Needs an NVIDIA GPU, so it skips on CI (which has none).

use tessera_gpu_tests::suites::{self, Runtime};

/// The overlapped plans of the corpus program `name`, each at one size.
fn overlapped(name: &str) {
    suites::overlapped(Runtime::Cuda, name);
}

tessera_testkit::test_every_program!(overlapped);
