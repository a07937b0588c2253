//! The one-stage 1D and 2D benchmarks against plain-Rust implementations of their
//! BENCHMARKS.md formulas, evaluated in the program's element type in the same operation order
//! (so the comparison is bitwise), on seeded random inputs, boundary included.

#[macro_use]
mod common;

use common::{At2, Bench, Real, Rng, interior2};

const N: usize = 67;
const STEPS: u64 = 4;

/// Runs `name` at `N x N` for `STEPS` steps from random `A` and compares with `sweep` applied
/// `STEPS` times.
fn check_a<R: Real>(name: &str, sweep: impl Fn(&[R]) -> Vec<R>) {
    let bench = Bench::real::<R>(name, &[("N", N as i64)]);
    let initial: Vec<R> = Rng::new(0x5EED).units(N * N);
    let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], STEPS);
    let want = (0..STEPS).fold(initial, |a, _| sweep(&a));
    outcome.assert_field("A", &want);
}

fn l<R: Real>(v: f64) -> R {
    R::lit(v)
}

fn j1d<R: Real>(name: &str, r: usize, c: f64) {
    const N1: usize = 1001;
    let bench = Bench::real::<R>(name, &[("N", N1 as i64)]);
    let initial: Vec<R> = Rng::new(0x1D).units(N1);
    let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], 7);
    let mut a = initial;
    for _ in 0..7 {
        let old = a.clone();
        for i in r..N1 - r {
            // (A[-r] + ... + A[r]) from left to right.
            let sum = old[i - r + 1..=i + r]
                .iter()
                .fold(old[i - r], |s, &v| s + v);
            a[i] = l::<R>(c) * sum;
        }
    }
    outcome.assert_field("A", &a);
}

fn j1d3pt<R: Real>() {
    j1d::<R>("j1d3pt", 1, 0.333);
}
f32_and_f64!(j1d3pt, j1d3pt);

fn j1d5pt<R: Real>() {
    j1d::<R>("j1d5pt", 2, 0.2);
}
f32_and_f64!(j1d5pt, j1d5pt);

fn j1d7pt<R: Real>() {
    j1d::<R>("j1d7pt", 3, 0.142857);
}
f32_and_f64!(j1d7pt, j1d7pt);

fn j2d5pt<R: Real>() {
    check_a::<R>("j2d5pt", |a| {
        interior2(a, N, 1, |p: &At2<R>| {
            (l::<R>(5.1) * p.at(-1, 0)
                + l::<R>(12.1) * p.at(0, -1)
                + l::<R>(15.0) * p.at(0, 0)
                + l::<R>(12.2) * p.at(0, 1)
                + l::<R>(5.2) * p.at(1, 0))
                / l(49.6)
        })
    });
}
f32_and_f64!(j2d5pt, j2d5pt);

/// `(Σ w A[o]) / divisor` over `terms` in order.
fn weighted<R: Real>(p: &At2<R>, terms: &[(f64, isize, isize)], divisor: f64) -> R {
    let mut sum = l::<R>(terms[0].0) * p.at(terms[0].1, terms[0].2);
    for &(w, di, dj) in &terms[1..] {
        sum = sum + l::<R>(w) * p.at(di, dj);
    }
    sum / l(divisor)
}

fn j2d9pt<R: Real>() {
    let terms = [
        (7.1, -2, 0),
        (5.1, -1, 0),
        (9.2, 0, -2),
        (12.1, 0, -1),
        (15.0, 0, 0),
        (12.2, 0, 1),
        (9.1, 0, 2),
        (5.2, 1, 0),
        (7.2, 2, 0),
    ];
    check_a::<R>("j2d9pt", |a| {
        interior2(a, N, 2, |p: &At2<R>| weighted(p, &terms, 82.2))
    });
}
f32_and_f64!(j2d9pt, j2d9pt);

fn j2d9pt_box<R: Real>() {
    let terms = [
        (7.1, -1, -1),
        (5.1, -1, 0),
        (9.2, -1, 1),
        (12.1, 0, -1),
        (15.0, 0, 0),
        (12.2, 0, 1),
        (9.1, 1, -1),
        (5.2, 1, 0),
        (7.2, 1, 1),
    ];
    check_a::<R>("j2d9pt-box", |a| {
        interior2(a, N, 1, |p: &At2<R>| weighted(p, &terms, 82.2))
    });
}
f32_and_f64!(j2d9pt_box, j2d9pt_box);

fn gaussian2d<R: Real>() {
    let g = [1.0, 4.0, 6.0, 4.0, 1.0];
    let terms: Vec<(f64, isize, isize)> = (0..5)
        .flat_map(|i| (0..5).map(move |j| (g[i] * g[j], i as isize - 2, j as isize - 2)))
        .collect();
    check_a::<R>("gaussian2d", |a| {
        interior2(a, N, 2, |p: &At2<R>| weighted(p, &terms, 256.0))
    });
}
f32_and_f64!(gaussian2d, gaussian2d);

fn gradient2d<R: Real>() {
    check_a::<R>("gradient2d", |a| {
        interior2(a, N, 1, |p: &At2<R>| {
            let c = p.at(0, 0);
            let d: Vec<R> = [(-1, 0), (0, -1), (0, 1), (1, 0)]
                .iter()
                .map(|&(di, dj)| c - p.at(di, dj))
                .collect();
            let sum = l::<R>(0.0001) + d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3];
            c + l::<R>(1.0) / sum.sqrt()
        })
    });
}
f32_and_f64!(gradient2d, gradient2d);

fn poisson2d<R: Real>() {
    let bench = Bench::real::<R>("poisson2d", &[("N", N as i64)]);
    let mut rng = Rng::new(0x9015);
    let u0: Vec<R> = rng.units(N * N);
    let f: Vec<R> = rng.units(N * N);
    let outcome = bench.run(
        vec![("u", R::buffer(u0.clone())), ("f", R::buffer(f.clone()))],
        STEPS,
    );
    // 6 h^2 f with h = 1 / (N - 1), as the program writes it: 6 f / (N - 1)^2.
    let squared_extent = R::from_i64((N as i64 - 1) * (N as i64 - 1));
    let mut u = u0;
    for _ in 0..STEPS {
        u = interior2(&u, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            let axis = p.at(-1, 0) + p.at(1, 0) + p.at(0, -1) + p.at(0, 1);
            let diagonal = p.at(-1, -1) + p.at(-1, 1) + p.at(1, -1) + p.at(1, 1);
            (l::<R>(4.0) * axis + diagonal - l::<R>(6.0) * f[i * N + j] / squared_extent) / l(20.0)
        });
    }
    outcome.assert_field("u", &u);
    outcome.assert_field("f", &f);
}
f32_and_f64!(poisson2d, poisson2d);

#[test]
fn life_on_a_torus() {
    let bench = Bench::plain("life", &[("N", N as i64)]);
    let initial = Rng::new(0x11FE).bits(N * N);
    let outcome = bench.run(
        vec![("A", tessera_runtime::Buffer::from(initial.clone()))],
        9,
    );
    let wrap = |i: usize, d: isize| (i as isize + d).rem_euclid(N as isize) as usize;
    let mut a = initial;
    for _ in 0..9 {
        let old = a.clone();
        for i in 0..N {
            for j in 0..N {
                let mut n = 0u8;
                for (di, dj) in [
                    (-1, -1),
                    (-1, 0),
                    (-1, 1),
                    (0, -1),
                    (0, 1),
                    (1, -1),
                    (1, 0),
                    (1, 1),
                ] {
                    n += old[wrap(i, di) * N + wrap(j, dj)];
                }
                let alive = old[i * N + j] == 1;
                a[i * N + j] = u8::from(n == 3 || (alive && n == 2));
            }
        }
    }
    assert!(
        a.contains(&1),
        "the soup must not die out in 9 steps (a test of nothing)"
    );
    outcome.assert_bytes("A", &a);
}
