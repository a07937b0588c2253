//! The sixteen generated programs (`star{2,3}d{1..4}r`, `box{2,3}d{1..4}r`): the committed files
//! are exactly what the generator writes, and each program matches a formula written here from
//! BENCHMARKS.md alone: offsets enumerated in lexicographic order, and the weights in closed
//! form, `w_k = (1 + k/(10 n)) / S = (20 n + 2 k) / (n (21 n - 1))`.

mod common;

use common::{Bench, Real, Rng, benchmark_path};
use tessera_bench_programs::families::Family;

/// The offsets of a family, slowest axis first, ascending lexicographically.
fn offsets(star: bool, dims: usize, r: isize) -> Vec<Vec<isize>> {
    let box_offsets: Vec<Vec<isize>> = match dims {
        2 => (-r..=r)
            .flat_map(|y| (-r..=r).map(move |x| vec![y, x]))
            .collect(),
        _ => (-r..=r)
            .flat_map(|z| (-r..=r).flat_map(move |y| (-r..=r).map(move |x| vec![z, y, x])))
            .collect(),
    };
    box_offsets
        .into_iter()
        .filter(|o| !star || o.iter().filter(|c| **c != 0).count() <= 1)
        .collect()
}

/// The closed-form weight of the k-th of n points.
fn weight(k: usize, n: usize) -> f64 {
    (20 * n + 2 * k) as f64 / (n * (21 * n - 1)) as f64
}

/// `steps` sweeps of `A = Σ_k w_k A[o_k]` over the interior `r..N-r` of an `N^dims` grid.
fn formula<R: Real>(
    a: Vec<R>,
    n: usize,
    dims: usize,
    r: usize,
    offsets: &[Vec<isize>],
    steps: u64,
) -> Vec<R> {
    let weights: Vec<R> = (0..offsets.len())
        .map(|k| R::lit(weight(k, offsets.len())))
        .collect();
    let strides: Vec<isize> = (0..dims)
        .map(|axis| n.pow((dims - 1 - axis) as u32) as isize)
        .collect();
    let linear: Vec<isize> = offsets
        .iter()
        .map(|o| o.iter().zip(&strides).map(|(c, s)| c * s).sum())
        .collect();
    let mut a = a;
    for _ in 0..steps {
        let old = a.clone();
        for (index, value) in a.iter_mut().enumerate() {
            let interior =
                (0..dims).all(|axis| (r..n - r).contains(&(index / strides[axis] as usize % n)));
            if interior {
                let read = |k: usize| old[(index as isize + linear[k]) as usize];
                let mut sum = weights[0] * read(0);
                for (k, weight) in weights.iter().enumerate().skip(1) {
                    sum = sum + *weight * read(k);
                }
                *value = sum;
            }
        }
    }
    a
}

fn check_family<R: Real>(name: &str, star: bool, dims: usize, r: usize) {
    let offsets = offsets(star, dims, r as isize);
    let weights: f64 = (0..offsets.len()).map(|k| weight(k, offsets.len())).sum();
    assert!(
        (weights - 1.0).abs() < 1e-12,
        "{name}: the weights sum to 1 ({weights})"
    );
    // A grid of exactly 2r + 1 (one interior point), and an odd size with a real interior.
    let sizes = if dims == 2 {
        [2 * r + 1, 37]
    } else {
        [2 * r + 1, 13]
    };
    for (seed, n) in sizes.into_iter().enumerate() {
        let bench = Bench::real::<R>(name, &[("N", n as i64)]);
        let initial: Vec<R> = Rng::new(seed as u64 + 0xFA).units(n.pow(dims as u32));
        let steps = 2;
        let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], steps);
        outcome.assert_field("A", &formula(initial, n, dims, r, &offsets, steps));
    }
}

macro_rules! family {
    ($name:ident, $star:expr, $dims:expr, $r:expr) => {
        #[test]
        fn $name() {
            check_family::<f32>(stringify!($name), $star, $dims, $r);
            check_family::<f64>(stringify!($name), $star, $dims, $r);
        }
    };
}

family!(star2d1r, true, 2, 1);
family!(star2d2r, true, 2, 2);
family!(star2d3r, true, 2, 3);
family!(star2d4r, true, 2, 4);
family!(star3d1r, true, 3, 1);
family!(star3d2r, true, 3, 2);
family!(star3d3r, true, 3, 3);
family!(star3d4r, true, 3, 4);
family!(box2d1r, false, 2, 1);
family!(box2d2r, false, 2, 2);
family!(box2d3r, false, 2, 3);
family!(box2d4r, false, 2, 4);
family!(box3d1r, false, 3, 1);
family!(box3d2r, false, 3, 2);
family!(box3d3r, false, 3, 3);
family!(box3d4r, false, 3, 4);

#[test]
fn committed_files_are_what_the_generator_writes() {
    let families = Family::all();
    assert_eq!(families.len(), 16);
    for family in families {
        let path = benchmark_path(&family.name());
        let committed =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            committed,
            family.source(),
            "{} is stale: run `cargo run -p tessera-bench-programs --example gen_families`",
            path.display()
        );
    }
}

#[test]
fn weights_are_written_with_at_least_nine_significant_digits() {
    for family in Family::all() {
        let source = family.source();
        let literals: Vec<&str> = source
            .lines()
            .filter_map(|line| {
                line.split_once(" * A")
                    .map(|(head, _)| head.rsplit(' ').next().unwrap_or(head))
            })
            .collect();
        assert_eq!(
            literals.len(),
            family.offsets().len(),
            "{}: one weight per point",
            family.name()
        );
        for literal in literals {
            let digits = literal.trim_start_matches(['0', '.']).len();
            assert!(
                digits >= 9,
                "{}: `{literal}` has {digits} significant digits",
                family.name()
            );
        }
    }
}
