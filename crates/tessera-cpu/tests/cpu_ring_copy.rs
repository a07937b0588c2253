//! The wavefront's ring buffers without the double mapping (`TESSERA_RING_COPY`): each written
//! row is copied to its twin instead. Exact mode, bitwise against the reference backend, over
//! the configurations of the differential matrix that reach the rings. A binary of its own: the
//! variable is set for the whole process.

mod common;

use common::*;

const STEPS: u64 = 7;

#[test]
fn wavefront_rings_without_the_double_mapping_match_the_reference() {
    // SAFETY: the only test of this binary sets it before any thread reads the environment.
    unsafe { std::env::set_var("TESSERA_RING_COPY", "1") };
    let backend = backend();
    // Bands narrower than the rows, and whole rows (whose ring rows start with a front padding).
    let cases: [(tessera_ir::Program, &[usize], Vec<usize>); 7] = [
        (star1d2(), &[23], vec![5]),
        (star2d_r1_f32(), &[17, 20], vec![4, 7]),
        (star2d_r1_f32(), &[17, 20], vec![4, 20]),
        (star2d_r2_f64(), &[19, 13], vec![4, 7]),
        (box3d_r1_f32(), &[7, 5, 6], vec![3, 4, 5]),
        (box3d_r1_f32(), &[7, 5, 6], vec![3, 4, 6]),
        (constant3d(), &[5, 4, 7], vec![3, 4, 5]),
    ];
    for (n, (program, size, tile)) in cases.into_iter().enumerate() {
        let bound = bind_sizes(&program, size);
        let fields = inputs(&bound, 31 + n as u64);
        let expected = reference(&bound, &fields, STEPS);
        for (time_tile, threads) in [(2, 3), (3, 2), (STEPS as usize + 2, 1)] {
            let options = exact("wavefront", Some(tile.clone()), Some(time_tile), threads);
            let actual = run_cpu(&backend, &bound, &fields, STEPS, &options);
            let what = format!("{} {size:?} {}", program.name, actual.1.plan);
            assert_same(&what, &bound, &expected, &actual);
        }
    }
}
