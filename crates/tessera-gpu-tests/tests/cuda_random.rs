//! Random programs on CUDA (an NVIDIA GPU; skipped without one, never on CI), exact, bitwise
//! against the reference: single-step and fused plans (see `suites::random`).

use tessera_gpu_tests::suites::{self, Runtime};

#[test]
fn random_programs() {
    suites::random(Runtime::Cuda);
}
