//! Random programs on OpenCL (PoCL on CI), exact, bitwise against the reference: single-step
//! and fused plans (see `suites::random`).

use tessera_gpu_tests::suites::{self, Runtime};

#[test]
fn random_programs() {
    suites::random(Runtime::Opencl);
}
