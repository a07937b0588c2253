//! The wavefront's ring buffers without the double mapping (`TESSERA_RING_COPY`): each written
//! row is copied to its twin instead. Exact mode, bitwise against the reference backend, over
//! the configurations of the differential matrix that reach the rings. A binary of its own: the
//! variable is set for the whole process.

mod common;

use common::*;
use tessera_testkit::{Failures, Subject, case};

const STEPS: u64 = 7;

#[test]
fn wavefront_rings_without_the_double_mapping_match_the_reference() {
    // SAFETY: the only test of this binary sets it before any thread reads the environment.
    unsafe { std::env::set_var("TESSERA_RING_COPY", "1") };
    let backend = backend();
    // Bands narrower than the rows, and whole rows (whose ring rows start with a front padding).
    let cases: [(&str, &[usize], Vec<usize>); 7] = [
        ("star1d2r", &[23], vec![5]),
        ("star2d1r", &[17, 20], vec![4, 7]),
        ("star2d1r", &[17, 20], vec![4, 20]),
        ("star2d2r", &[19, 13], vec![4, 7]),
        ("box3d1r", &[7, 5, 6], vec![3, 4, 5]),
        ("box3d1r", &[7, 5, 6], vec![3, 4, 6]),
        ("constant3d", &[5, 4, 7], vec![3, 4, 5]),
    ];
    let mut failures = Failures::new();
    for (n, (name, size, tile)) in cases.into_iter().enumerate() {
        let bound = case(name).bind_extents(size, &[]);
        let subject = Subject::new(format!("{name} {size:?}"), bound, 31 + n as u64, STEPS);
        for (time_tile, threads) in [(2, 3), (3, 2), (STEPS as u32 + 2, 1)] {
            let request = exact("wavefront", Some(tile.clone()), Some(time_tile), threads);
            failures.record(
                subject
                    .plan(&backend, &request)
                    .and_then(|plan| subject.check_exact(&backend, &plan)),
            );
        }
    }
    failures.assert_none("ring copies");
}
