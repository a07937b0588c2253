//! The image benchmarks (blur, blur-clamp, canny) against plain-Rust implementations of their
//! BENCHMARKS.md formulas, computed in f32 as the programs do, on a random 8-bit image of an odd
//! size. Every output and temporary is poisoned before the run: each pixel must be written.

mod common;

use common::{Bench, Rng};
use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

const N: usize = 67;
const G: [f32; 5] = [1.0, 4.0, 6.0, 4.0, 1.0];

/// How an out-of-grid pixel is read.
#[derive(Clone, Copy)]
enum Edge {
    Zero,
    Clamp,
}

/// The pixel at `(i + di, j + dj)` of an `N x N` image, with `edge` outside.
fn pixel<T: Copy + Default>(img: &[T], edge: Edge, i: usize, j: usize, di: isize, dj: isize) -> T {
    let (y, x) = (i as isize + di, j as isize + dj);
    let inside = |c: isize| (0..N as isize).contains(&c);
    match edge {
        Edge::Zero if !(inside(y) && inside(x)) => T::default(),
        _ => img[y.clamp(0, N as isize - 1) as usize * N + x.clamp(0, N as isize - 1) as usize],
    }
}

/// The 5x5 Gaussian of `img` at every pixel, in f32: `(Σ g_i g_j img) / 256`, row by row.
fn gaussian(img: &[u8], edge: Edge) -> Vec<f32> {
    let mut out = vec![0.0f32; N * N];
    for i in 0..N {
        for j in 0..N {
            let mut sum: Option<f32> = None;
            for (a, ga) in G.iter().enumerate() {
                for (b, gb) in G.iter().enumerate() {
                    let v = f32::from(pixel(img, edge, i, j, a as isize - 2, b as isize - 2));
                    let term = if ga * gb == 1.0 { v } else { ga * gb * v };
                    sum = Some(sum.map_or(term, |s| s + term));
                }
            }
            out[i * N + j] = sum.expect("25 terms") / 256.0;
        }
    }
    out
}

fn poisoned_outputs(names: &[(&'static str, ScalarType)]) -> Vec<(&'static str, Buffer)> {
    names
        .iter()
        .map(|(n, t)| (*n, Buffer::poisoned(*t, N * N)))
        .collect()
}

fn check_blur(name: &str, edge: Edge) {
    let bench = Bench::plain(name, &[("N", N as i64)]);
    let img = Rng::new(0xB1B).bytes(N * N);
    let mut given = poisoned_outputs(&[("out", ScalarType::U8)]);
    given.push(("img", Buffer::U8(img.clone().into())));
    let outcome = bench.run(given, 1);
    let want: Vec<u8> = gaussian(&img, edge)
        .iter()
        .map(|x| (x + 0.5).floor() as u8)
        .collect();
    outcome.assert_bytes("out", &want);
    outcome.assert_bytes("img", &img);
}

#[test]
fn blur_reads_zero_outside() {
    check_blur("blur", Edge::Zero);
}

#[test]
fn blur_clamp_reads_the_nearest_pixel_outside() {
    check_blur("blur-clamp", Edge::Clamp);
}

#[allow(clippy::manual_range_contains)] // the program's comparisons, exactly (NaN included)
/// The direction bin of a gradient (BENCHMARKS.md): θ in degrees mod 180, then 0/45/90/135.
fn direction(gx: f32, gy: f32) -> u8 {
    let theta = (gy.atan2(gx) * 180.0 / std::f64::consts::PI as f32 + 180.0) % 180.0;
    if theta < 22.5 || theta >= 157.5 {
        0
    } else if theta < 67.5 {
        45
    } else if theta < 112.5 {
        90
    } else {
        135
    }
}

#[test]
fn canny_matches_skelcl_sequence() {
    let bench = Bench::plain("canny", &[("N", N as i64)]);
    // Smooth blobs plus noise, so that edges of every direction and flat areas both occur.
    let mut rng = Rng::new(0xCA77);
    let img: Vec<u8> = (0..N * N)
        .map(|k| {
            let (i, j) = ((k / N) as i64, (k % N) as i64);
            let disc = (i - 30) * (i - 30) + (j - 25) * (j - 25) < 300;
            let band = (i + 2 * j) % 40 < 12;
            let base = if disc {
                200
            } else if band {
                120
            } else {
                30
            };
            base + (rng.next_u64() >> 59) as u8
        })
        .collect();
    let mut given = poisoned_outputs(&[
        ("out", ScalarType::U8),
        ("b", ScalarType::F32),
        ("m", ScalarType::F32),
        ("d", ScalarType::U8),
        ("n", ScalarType::F32),
    ]);
    given.push(("img", Buffer::U8(img.clone().into())));
    let outcome = bench.run(given, 1);

    let b = gaussian(&img, Edge::Clamp);
    let mut m = vec![0.0f32; N * N];
    let mut d = vec![0u8; N * N];
    for i in 0..N {
        for j in 0..N {
            let at = |di, dj| pixel(&b, Edge::Clamp, i, j, di, dj);
            let gx = (at(-1, 1) + 2.0 * at(0, 1) + at(1, 1))
                - (at(-1, -1) + 2.0 * at(0, -1) + at(1, -1));
            let gy = (at(1, -1) + 2.0 * at(1, 0) + at(1, 1))
                - (at(-1, -1) + 2.0 * at(-1, 0) + at(-1, 1));
            m[i * N + j] = (gx * gx + gy * gy).sqrt();
            d[i * N + j] = direction(gx, gy);
        }
    }
    let mut n = vec![0.0f32; N * N];
    for i in 0..N {
        for j in 0..N {
            let at = |di, dj| pixel(&m, Edge::Clamp, i, j, di, dj);
            let ((bi, bj), (ai, aj)) = match d[i * N + j] {
                0 => ((0, -1), (0, 1)),
                45 => ((1, 1), (-1, -1)),
                90 => ((1, 0), (-1, 0)),
                _ => ((1, -1), (-1, 1)),
            };
            let c = m[i * N + j];
            n[i * N + j] = if c >= at(bi, bj) && c >= at(ai, aj) {
                c
            } else {
                0.0
            };
        }
    }
    let out: Vec<u8> = n.iter().map(|&v| if v > 60.0 { 255 } else { 0 }).collect();

    outcome.assert_field("b", &b);
    outcome.assert_field("m", &m);
    outcome.assert_bytes("d", &d);
    outcome.assert_field("n", &n);
    outcome.assert_bytes("out", &out);
    for bin in [0, 45, 90, 135] {
        assert!(
            d.contains(&bin),
            "the test image has gradients in direction {bin}"
        );
    }
    assert!(
        out.contains(&255) && out.contains(&0),
        "the test image has edges and flat areas"
    );
}
