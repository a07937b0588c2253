//! Overlapped time tiling on OpenCL (PoCL on CI): every program of the test kit's corpus under
//! each overlapped test plan (T = 1 to 4), in exact mode, against the reference backend —
//! fields and reductions bitwise equal, through the test kit's harness.

use tessera_gpu_tests::suites::{self, Runtime};

/// The overlapped plans of the corpus program `name`, each at one size.
fn overlapped(name: &str) {
    suites::overlapped(Runtime::Opencl, name);
}

tessera_testkit::test_every_program!(overlapped);
