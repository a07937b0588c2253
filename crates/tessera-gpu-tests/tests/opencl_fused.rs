//! Fused time tiling on OpenCL (PoCL on CI): every program of the test kit's corpus under each fused
//! test plan (overlapped T = 1 to 4, streaming T = 2 to 4), in exact mode, against the
//! reference backend — fields and reductions bitwise equal, through the test kit's harness.

use tessera_gpu_tests::suites::{self, Runtime};

/// The fused plans of the corpus program `name`, each at one size.
fn fused(name: &str) {
    suites::fused(Runtime::Opencl, name);
}

tessera_testkit::test_every_program!(fused);
