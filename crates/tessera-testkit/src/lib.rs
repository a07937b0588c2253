//! Tessera's test kit: what every backend's tests share, so that one corpus and one
//! differential harness test them all.
//!
//! - [`corpus`]: the test programs of `corpus/` (each with its awkward sizes and steps) and the
//!   repository's benchmarks and examples (at a small awkward size), bound by name;
//! - [`inputs`]: seeded random fields (the one generator, `tessera_runtime::random`), with the
//!   fields a step writes before reading them poisoned so that an unwritten cell shows;
//! - [`compare`]: the first bitwise (or beyond-tolerance) difference of fields and reports;
//! - [`plans`]: the GPU plans every program is tested under;
//! - [`random`]: random programs (one per seed) for differential fuzzing;
//! - [`harness`]: a [`Subject`](harness::Subject) (program, inputs, reference result) run under
//!   any backend (`&dyn Backend`) and plan — the plan goes through its JSON form first, as with
//!   `tessera plan --json` and `tessera run --plan` — and compared with the reference, bitwise
//!   in exact mode; failures are collected and reported together.
//!
//! The CPU and GPU differential matrices (`tessera-cpu/tests/cpu_matrix.rs`,
//! `tessera-gpu-tests/tests/opencl_matrix.rs`) are instances of [`harness`] over [`corpus`].

pub mod compare;
pub mod corpus;
pub mod harness;
pub mod inputs;
pub mod plans;
pub mod random;

pub use corpus::{Case, case, corpus, repository_programs, test_programs};
pub use harness::{Failures, Subject};

/// Defines one `#[test]` per test program of the corpus, named after it, that calls
/// `$matrix(name)`; and a test that fails when the corpus has a program this list lacks. The
/// differential matrices of every backend are instances.
#[macro_export]
macro_rules! test_every_program {
    ($matrix:ident) => {
        $crate::test_every_program!($matrix:
            star1d2r, star1d16r, star1d8r, star2d1r, star2d2r, box2d1r, box2d2r, star3d1r,
            box3d1r, clamp2d, mirror2d, constant3d, periodic2d, strided, rician, tv2d_until,
            j2d5pt, heat2d_periodic, j3d7pt, box3d_constant, fdtd2d, reductions2d, life,
            strided1d, star4d, star1d_r2_constant, box2d_r2_clamp, star3d_r2_periodic, rician2d,
            tv2d, decay_until, box2d_r2_until, terms2d_mirror, terms2d_strided, edges3d_mixed, terms3d_clamp,
            math_all, fdtd_ricker, functions2d, partial_writes2d, unread_output2d, readonly_offsets3d, lbm_d2q9, half_heat2d,
            bf16_periodic,
            half_mixed, normalise2d, acoustic2d, acoustic2d_select, receivers2d,
            scan1d, scan2d, scan3d);
    };
    ($matrix:ident: $($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                $matrix(stringify!($name));
            }
        )*

        #[test]
        fn every_test_program_of_the_corpus_has_a_test() {
            let names = [$(stringify!($name)),*];
            for case in $crate::test_programs() {
                assert!(
                    names.contains(&case.name.as_str()),
                    "`{}` has no test in the list of `test_every_program!`",
                    case.name
                );
            }
        }
    };
}
