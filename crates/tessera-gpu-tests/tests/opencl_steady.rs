//! Steady trips of streaming time tiles on OpenCL (PoCL on CI): interior blocks' sweep
//! iterations without plane tests, against the reference (see [`suites::steady`]).

use tessera_gpu_tests::suites::{self, Runtime};

#[test]
fn steady_trips_match_the_reference() {
    suites::steady(Runtime::Opencl);
}
