//! The programs of `examples/` run on the reference backend and do what their comments say; the
//! example picture is what its generator draws.

mod common;

use common::{Bench, load_file, root};
use tessera_bench_programs::example_image::{HEIGHT, WIDTH, pixels};
use tessera_runtime::Buffer;

fn example(name: &str, params: &[(&str, i64)]) -> Bench {
    Bench {
        bound: load_file(
            &root().join("examples").join(format!("{name}.tess")),
            &[],
            params,
        ),
    }
}

/// The committed picture, decoded.
fn shapes_png() -> Vec<u8> {
    let file = std::fs::File::open(root().join("examples/data/shapes.png"))
        .expect("examples/data/shapes.png exists");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("a PNG");
    let mut data = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut data).expect("one frame");
    assert_eq!((info.width as usize, info.height as usize), (WIDTH, HEIGHT));
    assert_eq!(
        (info.color_type, info.bit_depth),
        (png::ColorType::Grayscale, png::BitDepth::Eight)
    );
    data.truncate(info.buffer_size());
    data
}

#[test]
fn the_committed_picture_is_what_the_generator_draws() {
    assert_eq!(
        shapes_png(),
        pixels(),
        "run `cargo run -p tessera-bench-programs --example make_example_image`"
    );
}

#[test]
fn heat_diffuses_within_the_initial_range() {
    let bench = example("heat", &[("N", 96)]);
    let initial = bench.run(Vec::new(), 0);
    let Buffer::F32(u0) = initial.buffer("u").clone() else {
        panic!("u is f32")
    };
    let outcome = bench.run(Vec::new(), 200);
    let Buffer::F32(u) = outcome.buffer("u") else {
        panic!("u is f32")
    };
    let (lo, hi) = u0
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    assert!(
        hi - lo > 0.5,
        "a non-trivial initial condition ({lo}..{hi})"
    );
    // Maximum principle (alpha = 0.2 <= 1/4): every value stays within the initial range.
    assert!(u.iter().all(|&v| v >= lo - 1e-5 && v <= hi + 1e-5));
    // Dirichlet boundary: the ring keeps its initial values; the interior changed.
    let n = 96;
    for k in 0..n * n {
        let (i, j) = (k / n, k % n);
        if i == 0 || j == 0 || i == n - 1 || j == n - 1 {
            assert_eq!(u[k].to_bits(), u0[k].to_bits(), "boundary point ({i}, {j})");
        }
    }
    assert!(
        u.iter().zip(&u0).filter(|(a, b)| a != b).count() > n * n / 2,
        "the interior diffuses"
    );
    assert_eq!(
        outcome.reduction("heat").len(),
        2,
        "the total is reported every 100 steps"
    );
}

#[test]
fn life_pattern_lives() {
    let bench = example("life", &[]);
    let initial = bench.run(Vec::new(), 0);
    let outcome = bench.run(Vec::new(), 50);
    let count = |b: &Buffer| match b {
        Buffer::U8(v) => v.iter().map(|&c| usize::from(c)).sum::<usize>(),
        _ => panic!("A is u8"),
    };
    let (before, after) = (count(initial.buffer("A")), count(outcome.buffer("A")));
    assert!(before > 500, "the initial pattern has {before} live cells");
    assert!(
        after > 100 && initial.buffer("A") != outcome.buffer("A"),
        "the pattern evolves ({before} -> {after})"
    );
    assert_eq!(
        outcome.reduction("population"),
        vec![after as f64],
        "population after step 49"
    );
    let (Buffer::U8(cells), Buffer::U8(a)) = (outcome.buffer("cells"), outcome.buffer("A")) else {
        panic!("A and cells are u8")
    };
    assert!(
        cells.iter().zip(a).all(|(c, a)| *c == a * 255),
        "cells shows A as 0/255"
    );
}

#[test]
fn blur_smooths_the_picture() {
    let img = shapes_png();
    let outcome = example("blur", &[]).run(vec![("img", Buffer::U8(img.clone().into()))], 1);
    let Buffer::U8(out) = outcome.buffer("out") else {
        panic!("out is u8")
    };
    let total_variation = |v: &[u8]| -> u64 {
        (0..v.len() - 1)
            .filter(|k| (k + 1) % WIDTH != 0)
            .map(|k| u64::from(v[k].abs_diff(v[k + 1])))
            .sum()
    };
    assert!(
        total_variation(out) * 2 < total_variation(&img),
        "the noise is smoothed away"
    );
    let mean_difference = img
        .iter()
        .zip(out)
        .map(|(a, b)| u64::from(a.abs_diff(*b)))
        .sum::<u64>()
        / img.len() as u64;
    assert!(
        mean_difference < 8,
        "the picture is kept ({mean_difference})"
    );
}

#[test]
fn canny_finds_the_outlines() {
    let img = shapes_png();
    let outcome = example("canny", &[]).run(vec![("img", Buffer::U8(img.into()))], 1);
    let Buffer::U8(out) = outcome.buffer("out") else {
        panic!("out is u8")
    };
    let edges = out.iter().filter(|&&v| v == 255).count();
    assert!(out.iter().all(|&v| v == 0 || v == 255));
    // The outlines of five shapes (about 1100 pixels around), thin after suppression.
    assert!((500..6000).contains(&edges), "{edges} edge pixels");
    // The disc's centre and the flat background are not edges; its rim is.
    assert_eq!(out[75 * WIDTH + 70], 0);
    // The disc is centred at (70, 75) with radius 40: its right rim crosses row 75 at x = 110.
    assert!(
        (106..=114).any(|x| out[75 * WIDTH + x] == 255),
        "the disc's right rim is an edge"
    );
}

#[test]
fn integral_box_is_the_mean_of_each_box() {
    const R: usize = 4;
    let img = shapes_png();
    let outcome =
        example("integral_box", &[]).run(vec![("img", Buffer::U8(img.clone().into()))], 1);
    let Buffer::U8(out) = outcome.buffer("out") else {
        panic!("out is u8")
    };
    for y in 0..HEIGHT {
        for x in 0..WIDTH {
            let inside = (R + 1..HEIGHT - R).contains(&y) && (R + 1..WIDTH - R).contains(&x);
            let expected = if inside {
                let row = |j: usize| -> u64 {
                    (x - R..=x + R).map(|i| u64::from(img[j * WIDTH + i])).sum()
                };
                let total: u64 = (y - R..=y + R).map(row).sum();
                (total as f64 / ((2 * R + 1) * (2 * R + 1)) as f64 + 0.5).floor() as u8
            } else {
                img[y * WIDTH + x]
            };
            assert_eq!(out[y * WIDTH + x], expected, "pixel ({y}, {x})");
        }
    }
}
