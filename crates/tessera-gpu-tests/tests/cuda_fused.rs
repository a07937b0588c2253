//! Fused time tiling on CUDA: every program of the test kit's corpus under each fused
//! test plan (overlapped T = 1 to 4, streaming T = 2 to 4), in exact mode, against the
//! reference backend — fields and reductions bitwise equal, through the test kit's harness. Needs an NVIDIA GPU, so it skips on CI (which has none).

use tessera_gpu_tests::suites::{self, Runtime};

/// The fused plans of the corpus program `name`, each at one size.
fn fused(name: &str) {
    suites::fused(Runtime::Cuda, name);
}

tessera_testkit::test_every_program!(fused);
