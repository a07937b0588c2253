//! Bounded-time fuzzing of the `.npy` and PNG readers (`TESSERA_FUZZ_SECONDS` each, default
//! 10; see `tessera-fuzzkit`): mutated valid files of every element type, colour type and
//! depth are read as every field type and grid shape without a panic or a hang (an error is
//! fine).

use std::path::Path;

use tessera_fuzzkit::{Budget, Target, fuzz};
use tessera_io::{read_npy, read_png, write_npy};
use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

/// The grid of every corpus file: 3 rows of 5.
const SHAPE: [usize; 2] = [3, 5];
/// The shapes inputs are read as: the file's own, flat, transposed, and 3D.
const READ_SHAPES: [&[usize]; 4] = [&[3, 5], &[15], &[5, 3], &[1, 3, 5]];
/// Every field type.
const TYPES: [ScalarType; 6] = [
    ScalarType::U8,
    ScalarType::I32,
    ScalarType::I64,
    ScalarType::F32,
    ScalarType::F64,
    ScalarType::Bool,
];

/// A `.npy` file of every storable type (and a Fortran-order one of the descriptor's bytes).
fn npy_corpus(dir: &Path) -> Vec<Vec<u8>> {
    let buffers = [
        Buffer::U8((0..15).collect::<Vec<_>>().into()),
        Buffer::I32((0..15).map(|i| i * -7919).collect::<Vec<_>>().into()),
        Buffer::I64(
            (0..15)
                .map(|i| i * 1_000_000_007)
                .collect::<Vec<_>>()
                .into(),
        ),
        Buffer::F32((0..15).map(|i| i as f32 / 3.0).collect::<Vec<_>>().into()),
        Buffer::F64(
            (0..15)
                .map(|i| f64::from(i).sin())
                .collect::<Vec<_>>()
                .into(),
        ),
    ];
    let path = dir.join("corpus.npy");
    (buffers.iter())
        .map(|buffer| {
            write_npy(&path, buffer, &SHAPE).expect("writing the corpus");
            std::fs::read(&path).expect("reading the corpus")
        })
        .collect()
}

/// A 5x3 PNG of every colour type at 8 bits, and grey and RGB at 16 bits and grey at 1 bit.
fn png_corpus() -> Vec<Vec<u8>> {
    use png::{BitDepth, ColorType};
    let kinds = [
        (ColorType::Grayscale, BitDepth::Eight),
        (ColorType::GrayscaleAlpha, BitDepth::Eight),
        (ColorType::Rgb, BitDepth::Eight),
        (ColorType::Rgba, BitDepth::Eight),
        (ColorType::Indexed, BitDepth::Eight),
        (ColorType::Grayscale, BitDepth::Sixteen),
        (ColorType::Rgb, BitDepth::Sixteen),
        (ColorType::Grayscale, BitDepth::One),
    ];
    (kinds.iter())
        .map(|&(colour, depth)| {
            let mut bytes = Vec::new();
            let mut encoder = png::Encoder::new(&mut bytes, 5, 3);
            encoder.set_color(colour);
            encoder.set_depth(depth);
            if colour == ColorType::Indexed {
                encoder.set_palette(
                    (0..=255)
                        .flat_map(|i| [i, 255 - i, i / 2])
                        .collect::<Vec<u8>>(),
                );
            }
            let row_bits = 5 * colour.samples() * depth as usize;
            let pixels: Vec<u8> = (0..3 * row_bits.div_ceil(8))
                .map(|i| (i * 37) as u8)
                .collect();
            let mut writer = encoder.write_header().expect("a PNG header");
            writer.write_image_data(&pixels).expect("PNG pixels");
            writer.finish().expect("a PNG");
            bytes
        })
        .collect()
}

/// Fuzzes `read` on inputs written to a file, starting from `corpus`.
fn fuzz_reader(name: &'static str, corpus: Vec<Vec<u8>>, dictionary: &[&[u8]], read: fn(&Path)) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join(name);
    let target = Target {
        name,
        corpus,
        dictionary,
    };
    let outcome = fuzz(target, Budget::from_env(), move |input| {
        std::fs::write(&path, input).expect("writing the input");
        read(&path);
    });
    println!(
        "{name}: {} inputs in {:.1} s",
        outcome.inputs, outcome.seconds
    );
    assert!(outcome.inputs > 0);
}

/// Reads `path` as a `.npy` field of every type and shape.
fn read_npy_every_way(path: &Path) {
    for ty in TYPES {
        for shape in READ_SHAPES {
            let _ = read_npy(path, "f", ty, shape);
        }
    }
}

/// Reads `path` as a PNG field of every type and shape.
fn read_png_every_way(path: &Path) {
    for ty in TYPES {
        for shape in READ_SHAPES {
            let _ = read_png(path, "img", ty, shape);
        }
    }
}

#[test]
fn mutated_npy_files_never_panic_or_hang() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let dictionary: &[&[u8]] = &[
        b"\x93NUMPY",
        b"'descr': '<f8'",
        b"'descr': '>i4'",
        b"'descr': '|u1'",
        b"'descr': '|b1'",
        b"'fortran_order': True",
        b"'shape': (3, 5)",
        b"'shape': (99999999999, 99999999999)",
        b"'shape': ()",
        b"(",
        b")",
        b"{",
        b"}",
    ];
    fuzz_reader(
        "npy",
        npy_corpus(dir.path()),
        dictionary,
        read_npy_every_way,
    );
}

#[test]
fn mutated_png_files_never_panic_or_hang() {
    let dictionary: &[&[u8]] = &[
        b"\x89PNG\r\n\x1a\n",
        b"IHDR",
        b"IDAT",
        b"IEND",
        b"PLTE",
        b"tRNS",
        b"\x00\x00\xff\xff",
        b"\x7f\xff\xff\xff",
    ];
    fuzz_reader("png", png_corpus(), dictionary, read_png_every_way);
}
