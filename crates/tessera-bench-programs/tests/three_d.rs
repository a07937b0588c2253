//! The 3D benchmarks (j3d7pt, j3d7pt-periodic, j3d27pt, himeno, fdtd3d) against plain-Rust
//! implementations of their BENCHMARKS.md formulas, in the program's element type and
//! operation order, boundary included.

#[macro_use]
mod common;

use common::{At3, Bench, Real, Rng, interior3, points3, sweep3};

const N: usize = 19;
const STEPS: u64 = 3;

fn l<R: Real>(v: f64) -> R {
    R::lit(v)
}

/// `0.4 A + 0.1 (six axis neighbours)`, neighbours read through `at`.
fn seven_point<R: Real>(at: impl Fn(isize, isize, isize) -> R) -> R {
    l::<R>(0.4) * at(0, 0, 0)
        + l::<R>(0.1)
            * (at(-1, 0, 0) + at(1, 0, 0) + at(0, -1, 0) + at(0, 1, 0) + at(0, 0, -1) + at(0, 0, 1))
}

fn j3d7pt<R: Real>() {
    let bench = Bench::real::<R>("j3d7pt", &[("N", N as i64)]);
    let initial: Vec<R> = Rng::new(0x3D7).units(N * N * N);
    let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], STEPS);
    let want = (0..STEPS).fold(initial, |a, _| {
        interior3(&a, N, 1, |p: &At3<R>| seven_point(|z, y, x| p.at(z, y, x)))
    });
    outcome.assert_field("A", &want);
}
f32_and_f64!(j3d7pt, j3d7pt);

fn j3d7pt_periodic<R: Real>() {
    // An uneven box: 19 x 23 x 17 would need three parameters; the program has one, N.
    let n = 17;
    let bench = Bench::real::<R>("j3d7pt-periodic", &[("N", n as i64)]);
    let initial: Vec<R> = Rng::new(0x7041).units(n * n * n);
    let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], STEPS);
    let wrap = |c: usize, d: isize| (c as isize + d).rem_euclid(n as isize) as usize;
    let mut a = initial;
    for _ in 0..STEPS {
        let old = a.clone();
        for [z, y, x] in points3([0; 3], [n; 3]) {
            let at = |dz, dy, dx| old[(wrap(z, dz) * n + wrap(y, dy)) * n + wrap(x, dx)];
            a[(z * n + y) * n + x] = seven_point(at);
        }
    }
    outcome.assert_field("A", &a);
}
f32_and_f64!(j3d7pt_periodic, j3d7pt_periodic);

#[test]
fn periodic_diffusion_conserves_the_sum() {
    // The weights sum to 1 (0.4 + 6 x 0.1) and nothing leaves the torus.
    let n = 15;
    let bench = Bench::real::<f64>("j3d7pt-periodic", &[("N", n as i64)]);
    let initial: Vec<f64> = Rng::new(0xC0).units(n * n * n);
    let outcome = bench.run(vec![("A", f64::buffer(initial.clone()))], 10);
    let after: f64 = f64::slice(outcome.buffer("A")).iter().sum();
    let before: f64 = initial.iter().sum();
    assert!(
        (after - before).abs() <= 1e-12 * before,
        "sum {before} became {after}"
    );
}

fn j3d27pt<R: Real>() {
    let bench = Bench::real::<R>("j3d27pt", &[("N", N as i64)]);
    let initial: Vec<R> = Rng::new(0x3D27).units(N * N * N);
    let outcome = bench.run(vec![("A", R::buffer(initial.clone()))], STEPS);
    // Weights in hundredths, so that `h / 100.0` is the f64 the decimal literal reads as.
    let mut terms = Vec::new();
    for dz in -1..=1isize {
        for dy in -1..=1isize {
            for dx in -1..=1isize {
                let hundredths = if dy == 0 && dx == 0 {
                    150 + (dz + 1)
                } else {
                    50 + 5 * (3 * (dy + 1) + (dx + 1)) + (dz + 1)
                };
                terms.push((hundredths as f64 / 100.0, dz, dy, dx));
            }
        }
    }
    assert_eq!(
        terms
            .iter()
            .map(|t| (t.0 * 100.0).round() as i64)
            .sum::<i64>(),
        2157,
        "the weights sum to 21.57"
    );
    let want = (0..STEPS).fold(initial, |a, _| {
        interior3(&a, N, 1, |p: &At3<R>| {
            let mut sum = l::<R>(terms[0].0) * p.at(terms[0].1, terms[0].2, terms[0].3);
            for &(w, dz, dy, dx) in &terms[1..] {
                sum = sum + l::<R>(w) * p.at(dz, dy, dx);
            }
            sum / l(21.57)
        })
    });
    outcome.assert_field("A", &want);
}
f32_and_f64!(j3d27pt, j3d27pt);

/// Himeno's coefficient fields, in the order of the program.
const HIMENO_COEFFICIENTS: [&str; 12] = [
    "a0", "a1", "a2", "a3", "b0", "b1", "b2", "c0", "c1", "c2", "wrk1", "bnd",
];

/// Runs the Himeno Jacobi for `steps` on `shape` (z, y, x): returns p, wrk2 and gosa per step,
/// gosa summed in the runtime's fixed order (per-row f64 partials, rows in order).
fn himeno_formula<R: Real>(
    shape: [usize; 3],
    mut p: Vec<R>,
    k: &[Vec<R>],
    steps: u64,
) -> (Vec<R>, Vec<R>, Vec<f64>) {
    let [a0, a1, a2, a3, b0, b1, b2, c0, c1, c2, wrk1, bnd] = std::array::from_fn(|i| &k[i]);
    let mut wrk2: Vec<R> = vec![l(0.0); p.len()];
    let mut gosa = Vec::new();
    let (lo, hi) = ([1; 3], [shape[0] - 1, shape[1] - 1, shape[2] - 1]);
    for _ in 0..steps {
        let ss_at = |q: &At3<R>| {
            let i = q.index();
            let s0 = a0[i] * q.at(1, 0, 0)
                + a1[i] * q.at(0, 1, 0)
                + a2[i] * q.at(0, 0, 1)
                + b0[i] * (q.at(1, 1, 0) - q.at(1, -1, 0) - q.at(-1, 1, 0) + q.at(-1, -1, 0))
                + b1[i] * (q.at(0, 1, 1) - q.at(0, -1, 1) - q.at(0, 1, -1) + q.at(0, -1, -1))
                + b2[i] * (q.at(1, 0, 1) - q.at(-1, 0, 1) - q.at(1, 0, -1) + q.at(-1, 0, -1))
                + c0[i] * q.at(-1, 0, 0)
                + c1[i] * q.at(0, -1, 0)
                + c2[i] * q.at(0, 0, -1)
                + wrk1[i];
            (s0 * a3[i] - q.at(0, 0, 0)) * bnd[i]
        };
        let ss = sweep3(&p, shape, lo, hi, ss_at);
        wrk2 = sweep3(&wrk2, shape, lo, hi, |q: &At3<R>| {
            p[q.index()] + l::<R>(0.8) * ss[q.index()]
        });
        let mut total = 0.0f64;
        for z in lo[0]..hi[0] {
            for y in lo[1]..hi[1] {
                let mut row = 0.0f64;
                for x in lo[2]..hi[2] {
                    let s = ss[(z * shape[1] + y) * shape[2] + x];
                    row += (s * s).to_f64();
                }
                total += row;
            }
        }
        gosa.push(total);
        p = sweep3(&p, shape, lo, hi, |q: &At3<R>| wrk2[q.index()]);
    }
    (p, wrk2, gosa)
}

const HIMENO_SHAPE: [usize; 3] = [19, 23, 17];

fn himeno_sizes() -> Vec<(&'static str, i64)> {
    vec![
        ("NZ", HIMENO_SHAPE[0] as i64),
        ("NY", HIMENO_SHAPE[1] as i64),
        ("NX", HIMENO_SHAPE[2] as i64),
    ]
}

/// Every coefficient given as a random input (b and wrk1 non-zero, so every term counts).
fn himeno_random_coefficients<R: Real>() {
    let bench = Bench::real::<R>("himeno", &himeno_sizes());
    let cells: usize = HIMENO_SHAPE.iter().product();
    let mut rng = Rng::new(0x4133);
    let p: Vec<R> = rng.units(cells);
    // Scaled so that the iteration stays bounded: a3 in [0, 0.1), the rest in [0, 1).
    let coefficients: Vec<Vec<R>> = HIMENO_COEFFICIENTS
        .iter()
        .map(|name| {
            let v: Vec<R> = rng.units(cells);
            if *name == "a3" {
                v.into_iter().map(|x| x * l(0.1)).collect()
            } else {
                v
            }
        })
        .collect();
    let mut given = vec![("p", R::buffer(p.clone()))];
    given.extend(
        HIMENO_COEFFICIENTS
            .iter()
            .zip(&coefficients)
            .map(|(n, v)| (*n, R::buffer(v.clone()))),
    );
    let outcome = bench.run(given, STEPS);
    let (p, wrk2, gosa) = himeno_formula(HIMENO_SHAPE, p, &coefficients, STEPS);
    outcome.assert_field("p", &p);
    outcome.assert_field("wrk2", &wrk2);
    assert_eq!(
        outcome.reduction("gosa"),
        gosa,
        "gosa per step, summed in the fixed order"
    );
}
f32_and_f64!(himeno_random_coefficients, himeno_random_coefficients);

/// No inputs: the standard coefficients and Himeno's initial pressure z^2 / (NZ - 1)^2.
fn himeno_standard<R: Real>() {
    let bench = Bench::real::<R>("himeno", &himeno_sizes());
    let [nz, ny, nx] = HIMENO_SHAPE;
    let cells = nz * ny * nx;
    let outcome = bench.run(Vec::new(), STEPS);
    let standard = |name: &str| -> R {
        match name {
            "a0" | "a1" | "a2" | "c0" | "c1" | "c2" | "bnd" => l(1.0),
            "a3" => l::<R>(1.0) / l::<R>(6.0),
            _ => l(0.0),
        }
    };
    let coefficients: Vec<Vec<R>> = HIMENO_COEFFICIENTS
        .iter()
        .map(|n| vec![standard(n); cells])
        .collect();
    // z^2 / (NZ - 1)^2 in f64, stored in the field's type.
    let denominator = ((nz - 1) * (nz - 1)) as f64;
    let p: Vec<R> = (0..cells)
        .map(|i| R::lit(((i / (ny * nx)) * (i / (ny * nx))) as f64 / denominator))
        .collect();
    let (p, _, gosa) = himeno_formula(HIMENO_SHAPE, p, &coefficients, STEPS);
    outcome.assert_field("p", &p);
    assert_eq!(
        outcome.reduction("gosa"),
        gosa,
        "gosa per step, summed in the fixed order"
    );
    assert!(gosa.iter().all(|g| *g > 0.0), "a non-trivial residual");
}
f32_and_f64!(himeno_standard, himeno_standard);

fn fdtd3d<R: Real>() {
    let n = 17;
    let bench = Bench::real::<R>("fdtd3d", &[("N", n as i64)]);
    let mut rng = Rng::new(0xFD3D);
    let names = ["ex", "ey", "ez", "hx", "hy", "hz"];
    let initial: Vec<Vec<R>> = names.iter().map(|_| rng.units(n * n * n)).collect();
    let outcome = bench.run(
        names
            .iter()
            .zip(&initial)
            .map(|(n, v)| (*n, R::buffer(v.clone())))
            .collect(),
        STEPS,
    );
    let [mut ex, mut ey, mut ez, mut hx, mut hy, mut hz] =
        std::array::from_fn(|i| initial[i].clone());
    let shape = [n; 3];
    let half = l::<R>(0.5);
    for _ in 0..STEPS {
        let (e_lo, e_hi) = ([1; 3], [n; 3]);
        let (hx0, hy0, hz0) = (hx.clone(), hy.clone(), hz.clone());
        let h = |v: &[R], q: &At3<R>, dz: isize, dy: isize, dx: isize| {
            At3::view(v, shape, q.coords()).at(dz, dy, dx)
        };
        ex = sweep3(&ex, shape, e_lo, e_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                + half
                    * ((h(&hz0, q, 0, 0, 0) - h(&hz0, q, 0, -1, 0))
                        - (h(&hy0, q, 0, 0, 0) - h(&hy0, q, -1, 0, 0)))
        });
        ey = sweep3(&ey, shape, e_lo, e_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                + half
                    * ((h(&hx0, q, 0, 0, 0) - h(&hx0, q, -1, 0, 0))
                        - (h(&hz0, q, 0, 0, 0) - h(&hz0, q, 0, 0, -1)))
        });
        ez = sweep3(&ez, shape, e_lo, e_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                + half
                    * ((h(&hy0, q, 0, 0, 0) - h(&hy0, q, 0, 0, -1))
                        - (h(&hx0, q, 0, 0, 0) - h(&hx0, q, 0, -1, 0)))
        });
        let (h_lo, h_hi) = ([0; 3], [n - 1; 3]);
        hx = sweep3(&hx, shape, h_lo, h_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                - half
                    * ((h(&ez, q, 0, 1, 0) - h(&ez, q, 0, 0, 0))
                        - (h(&ey, q, 1, 0, 0) - h(&ey, q, 0, 0, 0)))
        });
        hy = sweep3(&hy, shape, h_lo, h_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                - half
                    * ((h(&ex, q, 1, 0, 0) - h(&ex, q, 0, 0, 0))
                        - (h(&ez, q, 0, 0, 1) - h(&ez, q, 0, 0, 0)))
        });
        hz = sweep3(&hz, shape, h_lo, h_hi, |q: &At3<R>| {
            q.at(0, 0, 0)
                - half
                    * ((h(&ey, q, 0, 0, 1) - h(&ey, q, 0, 0, 0))
                        - (h(&ex, q, 0, 1, 0) - h(&ex, q, 0, 0, 0)))
        });
    }
    for (name, want) in names.iter().zip([&ex, &ey, &ez, &hx, &hy, &hz]) {
        outcome.assert_field(name, want);
    }
}
f32_and_f64!(fdtd3d, fdtd3d);
