//! The multi-stage 2D benchmarks (fdtd2d, rician2d, tv2d) against plain-Rust implementations
//! of their BENCHMARKS.md formulas, in the program's element type and operation order.

#[macro_use]
mod common;

use common::{At2, Bench, Real, Rng, interior2, sweep2};

const N: usize = 67;
const STEPS: u64 = 5;

fn l<R: Real>(v: f64) -> R {
    R::lit(v)
}

fn fdtd2d<R: Real>() {
    let bench = Bench::real::<R>("fdtd2d", &[("N", N as i64)]);
    let mut rng = Rng::new(0xFD7D);
    let (mut ex, mut ey, mut hz): (Vec<R>, Vec<R>, Vec<R>) =
        (rng.units(N * N), rng.units(N * N), rng.units(N * N));
    let given = vec![
        ("ex", R::buffer(ex.clone())),
        ("ey", R::buffer(ey.clone())),
        ("hz", R::buffer(hz.clone())),
    ];
    let outcome = bench.run(given, STEPS);
    for t in 0..STEPS {
        ey = sweep2(&ey, N, [0, 0], [1, N], |_| R::from_i64(t as i64));
        ey = sweep2(&ey, N, [1, 0], [N, N], |p: &At2<R>| {
            let (i, j) = p.point();
            p.at(0, 0) - l::<R>(0.5) * (hz[i * N + j] - hz[(i - 1) * N + j])
        });
        ex = sweep2(&ex, N, [0, 1], [N, N], |p: &At2<R>| {
            let (i, j) = p.point();
            p.at(0, 0) - l::<R>(0.5) * (hz[i * N + j] - hz[i * N + j - 1])
        });
        hz = sweep2(&hz, N, [0, 0], [N - 1, N - 1], |p: &At2<R>| {
            let (i, j) = p.point();
            let k = i * N + j;
            p.at(0, 0) - l::<R>(0.7) * (ex[k + 1] - ex[k] + ey[k + N] - ey[k])
        });
    }
    outcome.assert_field("ex", &ex);
    outcome.assert_field("ey", &ey);
    outcome.assert_field("hz", &hz);
}
f32_and_f64!(fdtd2d, fdtd2d);

const AXIS_NEIGHBOURS: [(isize, isize); 4] = [(-1, 0), (0, -1), (0, 1), (1, 0)];

fn rician2d<R: Real>() {
    let bench = Bench::real::<R>("rician2d", &[("N", N as i64)]);
    let mut rng = Rng::new(0x71C1);
    let (mut u, f): (Vec<R>, Vec<R>) = (rng.units(N * N), rng.units(N * N));
    let outcome = bench.run(
        vec![("u", R::buffer(u.clone())), ("f", R::buffer(f.clone()))],
        STEPS,
    );
    // g is a temporary: it starts at 0 and only its interior is ever written.
    let mut g: Vec<R> = vec![l(0.0); N * N];
    let at = |v: &[R], i: usize, j: usize, (di, dj): (isize, isize)| {
        v[(i as isize + di) as usize * N + (j as isize + dj) as usize]
    };
    for _ in 0..STEPS {
        g = interior2(&g, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            let c = u[i * N + j];
            let d: Vec<R> = AXIS_NEIGHBOURS
                .iter()
                .map(|&o| c - at(&u, i, j, o))
                .collect();
            l::<R>(1.0)
                / (l::<R>(1e-6) + d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + d[3] * d[3]).sqrt()
        });
        u = interior2(&u, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            let (c, fc) = (p.at(0, 0), f[i * N + j]);
            let r0 = c * fc / l(0.01);
            let r = r0 * (l::<R>(2.38944) + r0 * (l::<R>(0.950037) + r0))
                / (l::<R>(4.65314) + r0 * (l::<R>(2.57541) + r0 * (l::<R>(1.48937) + r0)));
            let [n0, n1, n2, n3] = AXIS_NEIGHBOURS;
            let num = at(&u, i, j, n0) * at(&g, i, j, n0)
                + at(&u, i, j, n1) * at(&g, i, j, n1)
                + at(&u, i, j, n2) * at(&g, i, j, n2)
                + at(&u, i, j, n3) * at(&g, i, j, n3)
                + l::<R>(0.5) * fc * r;
            let den =
                at(&g, i, j, n0) + at(&g, i, j, n1) + at(&g, i, j, n2) + at(&g, i, j, n3) + l(0.5);
            (c + l::<R>(0.1) * num) / (l::<R>(1.0) + l::<R>(0.1) * den)
        });
    }
    outcome.assert_field("u", &u);
    outcome.assert_field("g", &g);
    outcome.assert_field("f", &f);
}
f32_and_f64!(rician2d, rician2d);

fn tv2d<R: Real>() {
    let bench = Bench::real::<R>("tv2d", &[("N", N as i64)]);
    let mut rng = Rng::new(0x7F2D);
    let (mut u, f): (Vec<R>, Vec<R>) = (rng.units(N * N), rng.units(N * N));
    let outcome = bench.run(
        vec![("u", R::buffer(u.clone())), ("f", R::buffer(f.clone()))],
        STEPS,
    );
    let (mut px, mut py): (Vec<R>, Vec<R>) = (vec![l(0.0); N * N], vec![l(0.0); N * N]);
    for _ in 0..STEPS {
        let dual = |p: &At2<R>| {
            let (gx, gy) = (p.at(0, 1) - p.at(0, 0), p.at(1, 0) - p.at(0, 0));
            let m = l::<R>(1.0) / (l::<R>(1e-4) + gx * gx + gy * gy).sqrt();
            (gx * m, gy * m)
        };
        px = interior2(&px, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            dual(&At2::view(&u, N, i, j)).0
        });
        py = interior2(&py, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            dual(&At2::view(&u, N, i, j)).1
        });
        u = interior2(&u, N, 1, |p: &At2<R>| {
            let (i, j) = p.point();
            let k = i * N + j;
            let c = p.at(0, 0);
            c + l::<R>(0.05)
                * ((px[k] - px[k - 1]) + (py[k] - py[k - N]) - l::<R>(0.1) * (c - f[k]))
        });
    }
    outcome.assert_field("u", &u);
    outcome.assert_field("px", &px);
    outcome.assert_field("py", &py);
}
f32_and_f64!(tv2d, tv2d);
