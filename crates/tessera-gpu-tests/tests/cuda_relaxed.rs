//! Non-exact mode on CUDA: box and star stencils under streaming time tiles (box sums
//! reordered plane by plane), an overlapped plan and single-step plans, within a tolerance of
//! the reference. Needs an NVIDIA GPU, so it skips on CI (which has none).

use tessera_gpu_tests::suites::{self, Runtime};

#[test]
fn non_exact_mode_is_close_to_the_reference() {
    suites::relaxed(Runtime::Cuda);
}
