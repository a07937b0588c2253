//! The differential matrix on OpenCL (PoCL on CI): every program of the test kit's corpus x
//! plan x awkward size, in exact mode, against the reference backend — fields and reductions
//! bitwise equal (through `tessera_testkit`'s harness, which also replays every plan from its
//! JSON form). By default each plan runs once, at sizes rotating so that every size and every
//! plan of a program is covered; `TESSERA_GPU_MATRIX=full` runs every plan at every size.

use tessera_gpu_tests::suites::{self, Runtime};

/// The matrix of the corpus program `name`.
fn matrix(name: &str) {
    suites::matrix(Runtime::Opencl, name);
}

tessera_testkit::test_every_program!(matrix);

/// The repository's benchmarks and examples at a small size, two plans each (rotating).
#[test]
fn every_benchmark_and_example() {
    suites::benchmarks_and_examples(Runtime::Opencl);
}
