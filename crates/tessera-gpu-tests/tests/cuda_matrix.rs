//! The differential matrix on CUDA: every program of the test kit's corpus x plan x awkward
//! size, in exact mode, against the reference backend, fields and reductions bitwise equal.
//! Needs an NVIDIA GPU, so it skips on CI (which has none); `TESSERA_REQUIRE_CUDA=1` makes a
//! missing device fail. `TESSERA_GPU_MATRIX=full` runs every plan at every size.

use tessera_gpu_tests::suites::{self, Runtime};

/// The matrix of the corpus program `name`.
fn matrix(name: &str) {
    suites::matrix(Runtime::Cuda, name);
}

tessera_testkit::test_every_program!(matrix);

/// The repository's benchmarks and examples at a small size, two plans each (rotating).
#[test]
fn every_benchmark_and_example() {
    suites::benchmarks_and_examples(Runtime::Cuda);
}
