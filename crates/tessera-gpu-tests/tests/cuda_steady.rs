//! Steady trips of streaming time tiles on CUDA: interior blocks' sweep iterations without
//! plane tests, against the reference (see [`suites::steady`]). Needs an NVIDIA GPU, so it
//! skips on CI (which has none).

use tessera_gpu_tests::suites::{self, Runtime};

#[test]
fn steady_trips_match_the_reference() {
    suites::steady(Runtime::Cuda);
}
