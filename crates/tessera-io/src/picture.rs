//! PNG pictures of fields, and `u8` fields from PNG images.
//!
//! Orientation: image row `r` is grid row `y = r` (the first row of the grid is the top of the
//! picture, as NumPy and matplotlib's `imshow` show arrays), column `c` is `x = c`.
//!
//! - One numeric component (`f32`, `f64`, `i32`, `i64`) is drawn with the viridis colour map,
//!   scaled from the smallest to the largest finite value drawn; NaN is magenta, `+inf` and
//!   `-inf` take the ends of the scale.
//! - One `u8` component is drawn as grey, value for value; three or four `u8` components (a
//!   `u8x3`/`u8x4` field) as RGB or RGBA.
//! - A 1D grid is drawn as a strip [`STRIP_HEIGHT`] pixels high; a 3D (or 4D) grid as its middle
//!   slice along every axis but the last two (the summary says which).
//! - Reading: an 8- or 16-bit grey, grey+alpha, RGB, RGBA or palette PNG becomes grey `u8`
//!   values; colour is converted with the Rec. 601 luma weights
//!   `round(0.299 R + 0.587 G + 0.114 B)`, alpha is ignored, 16-bit samples keep their high byte.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::Path;

use tessera_ir::ScalarType;
use tessera_runtime::Buffer;

use crate::atomic::write_atomic;
use crate::colormap::viridis_table;
use crate::describe::grid;
use crate::error::IoError;

/// Height in pixels of the picture of a 1D field.
pub const STRIP_HEIGHT: usize = 16;

/// Colour of NaN values in colour-mapped pictures.
pub const NAN_COLOUR: [u8; 3] = [255, 0, 255];

/// The values a picture shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ValueRange {
    /// Smallest finite value (NaN when none is finite).
    pub min: f64,
    /// Largest finite value (NaN when none is finite).
    pub max: f64,
    /// Number of NaN values.
    pub nan_count: usize,
    /// Number of infinite values.
    pub inf_count: usize,
}

/// What [`write_png`] drew.
#[derive(Clone, Debug, PartialEq)]
pub struct PngSummary {
    /// Picture width in pixels.
    pub width: usize,
    /// Picture height in pixels.
    pub height: usize,
    /// The range of the values drawn (of the first component for RGB(A) pictures).
    pub range: ValueRange,
    /// For grids of more than two dimensions: which slice was drawn (`z = 8`).
    pub slice: Option<String>,
}

/// The 2D plane of a grid that a picture shows.
struct Plane {
    width: usize,
    height: usize,
    /// Index of the plane's first point in the field.
    offset: usize,
    /// How often each row of values is repeated (a 1D strip).
    repeat: usize,
    slice: Option<String>,
}

impl Plane {
    fn of(shape: &[usize]) -> Plane {
        let dims = shape.len();
        if dims == 1 {
            return Plane {
                width: shape[0],
                height: 1,
                offset: 0,
                repeat: STRIP_HEIGHT,
                slice: None,
            };
        }
        let axes = tessera_ir::axis_names(dims);
        let mut offset = 0;
        let mut stride = shape[dims - 2] * shape[dims - 1];
        let mut slice = Vec::new();
        for axis in (0..dims - 2).rev() {
            let middle = shape[axis] / 2;
            offset += middle * stride;
            stride *= shape[axis];
            slice.insert(0, format!("{} = {middle}", axes[axis]));
        }
        let slice = (!slice.is_empty()).then(|| slice.join(", "));
        Plane {
            width: shape[dims - 1],
            height: shape[dims - 2],
            offset,
            repeat: 1,
            slice,
        }
    }

    /// Field indices of the plane's points, row by row (rows repeated for strips).
    fn indices(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.height)
            .flat_map(move |r| std::iter::repeat_n(r, self.repeat))
            .flat_map(move |r| (0..self.width).map(move |c| self.offset + r * self.width + c))
    }
}

/// How a field is drawn: its PNG colour type and the plane of the grid shown.
struct PngLayout {
    colour: png::ColorType,
    plane: Plane,
    width: u32,
    height: u32,
}

/// Checks, before any computation, that a field `field` with components of `types` on a grid
/// of `shape` can be drawn into the PNG `path`.
pub fn check_png(
    path: &Path,
    field: &str,
    types: &[ScalarType],
    shape: &[usize],
) -> Result<(), IoError> {
    png_layout(path, field, types, shape).map(|_| ())
}

/// The layout of a field with components of `types` on a grid of `shape`, or why a PNG cannot
/// show it.
fn png_layout(
    path: &Path,
    field: &str,
    types: &[ScalarType],
    shape: &[usize],
) -> Result<PngLayout, IoError> {
    let unsupported = |reason: String| IoError::Unsupported {
        path: path.to_path_buf(),
        field: field.to_string(),
        reason,
    };
    let all_u8 = types.iter().all(|&t| t == ScalarType::U8);
    let colour = match (types.len(), all_u8) {
        (1, true) => png::ColorType::Grayscale,
        (1, false) => png::ColorType::Rgb,
        (3, true) => png::ColorType::Rgb,
        (4, true) => png::ColorType::Rgba,
        (n, _) => {
            return Err(unsupported(format!(
                "a PNG shows one component, or 3 or 4 `u8` components as RGB(A), and `{field}` has {n} components of types {}; draw one component (e.g. `{field}.x`) or write .npy instead",
                types
                    .iter()
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    };
    let plane = Plane::of(shape);
    let (Ok(width), Ok(height)) = (
        u32::try_from(plane.width),
        u32::try_from(plane.height * plane.repeat),
    ) else {
        return Err(unsupported(format!(
            "a {} grid is too large for a PNG",
            grid(shape)
        )));
    };
    Ok(PngLayout {
        colour,
        plane,
        width,
        height,
    })
}

/// Draws a field with `components` (one buffer each) on a grid of `shape` into the PNG `path`
/// (atomically), and says what it drew.
pub fn write_png(
    path: &Path,
    field: &str,
    components: &[&Buffer],
    shape: &[usize],
) -> Result<PngSummary, IoError> {
    let types: Vec<ScalarType> = components.iter().map(|b| b.ty()).collect();
    let PngLayout {
        colour,
        plane,
        width,
        height,
    } = png_layout(path, field, &types, shape)?;
    let range = value_range(components[0], &plane);
    let pixels = match colour {
        png::ColorType::Rgb if components.len() == 1 => {
            colour_mapped(components[0], &plane, &range)
        }
        _ => interleaved(components, &plane),
    };
    write_atomic(path, |out| encode(out, width, height, colour, &pixels))?;
    Ok(PngSummary {
        width: plane.width,
        height: height as usize,
        range,
        slice: plane.slice,
    })
}

/// Reads a PNG image as the values of the `u8` field `field` on a grid of `shape` (a 2D grid,
/// or a 1D grid and an image one pixel high), converting colour to grey.
pub fn read_png(
    path: &Path,
    field: &str,
    ty: ScalarType,
    shape: &[usize],
) -> Result<Buffer, IoError> {
    let file = File::open(path).map_err(|source| IoError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let malformed = |e: png::DecodingError| match e {
        png::DecodingError::IoError(source) => IoError::Read {
            path: path.to_path_buf(),
            source,
        },
        other => IoError::Malformed {
            path: path.to_path_buf(),
            format: "PNG",
            reason: other.to_string(),
        },
    };
    let mut decoder = png::Decoder::new(BufReader::new(file));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(malformed)?;
    let (width, height) = (reader.info().width as usize, reader.info().height as usize);
    let expected_shape = match shape {
        [n] => vec![1, *n],
        _ => shape.to_vec(),
    };
    if ty != ScalarType::U8 || expected_shape != [height, width] {
        let hint = if ty != ScalarType::U8 {
            "; PNG input fills `u8` fields only (give other types as .npy)".to_string()
        } else if shape.len() > 2 {
            "; PNG input needs a 1D or 2D grid".to_string()
        } else {
            format!(
                "; resize the image to {} pixels wide and {} high, or set the grid's size to match",
                expected_shape[1], expected_shape[0]
            )
        };
        return Err(IoError::Mismatch {
            path: path.to_path_buf(),
            found: format!("{height} rows of {width} pixels"),
            target: format!("field `{field}`"),
            expected: format!("is {ty} on a {} grid", grid(shape)),
            hint,
        });
    }
    let mut data = vec![0; reader.output_buffer_size().unwrap_or(0)];
    let info = reader.next_frame(&mut data).map_err(malformed)?;
    let channels = info.color_type.samples();
    let mut grey = Vec::with_capacity(width * height);
    for row in data.chunks(info.line_size).take(height) {
        grey.extend(row[..width * channels].chunks(channels).map(|p| match p {
            [v] | [v, _] => *v,
            [r, g, b, ..] => luma(*r, *g, *b),
            _ => 0,
        }));
    }
    Ok(Buffer::U8(grey.into()))
}

/// Rec. 601 luma of an 8-bit RGB colour.
fn luma(r: u8, g: u8, b: u8) -> u8 {
    (0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b)).round() as u8
}

fn value_range(buffer: &Buffer, plane: &Plane) -> ValueRange {
    let mut range = ValueRange {
        min: f64::INFINITY,
        max: f64::NEG_INFINITY,
        nan_count: 0,
        inf_count: 0,
    };
    for r in 0..plane.height {
        for c in 0..plane.width {
            let v = buffer.get_f64(plane.offset + r * plane.width + c);
            if v.is_nan() {
                range.nan_count += 1;
            } else if v.is_infinite() {
                range.inf_count += 1;
            } else {
                range.min = range.min.min(v);
                range.max = range.max.max(v);
            }
        }
    }
    if range.min > range.max {
        (range.min, range.max) = (f64::NAN, f64::NAN);
    }
    range
}

fn colour_mapped(buffer: &Buffer, plane: &Plane, range: &ValueRange) -> Vec<u8> {
    let table = viridis_table();
    let span = range.max - range.min;
    plane
        .indices()
        .flat_map(|i| {
            let v = buffer.get_f64(i);
            if v.is_nan() {
                return NAN_COLOUR;
            }
            let t = if span > 0.0 {
                (v - range.min) / span
            } else if v == f64::INFINITY {
                1.0
            } else if v == f64::NEG_INFINITY {
                0.0
            } else {
                0.5
            };
            table[(t.clamp(0.0, 1.0) * 255.0).round() as usize]
        })
        .collect()
}

fn interleaved(components: &[&Buffer], plane: &Plane) -> Vec<u8> {
    let bytes: Vec<&[u8]> = components.iter().map(|b| b.as_bytes()).collect();
    plane
        .indices()
        .flat_map(|i| bytes.iter().map(move |b| b[i]))
        .collect()
}

fn encode(
    out: &mut dyn Write,
    width: u32,
    height: u32,
    colour: png::ColorType,
    pixels: &[u8],
) -> io::Result<()> {
    let mut encoder = png::Encoder::new(out, width, height);
    encoder.set_color(colour);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(pixels)?;
    writer.finish()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a PNG written by the tests: (width, height, colour type, pixel bytes).
    fn decode(path: &Path) -> (u32, u32, png::ColorType, Vec<u8>) {
        let mut reader = png::Decoder::new(BufReader::new(File::open(path).unwrap()))
            .read_info()
            .unwrap();
        let mut data = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut data).unwrap();
        data.truncate(info.buffer_size());
        (info.width, info.height, info.color_type, data)
    }

    /// Writes a PNG with the `png` encoder directly (an image from elsewhere).
    fn encode_file(
        path: &Path,
        width: u32,
        height: u32,
        colour: png::ColorType,
        depth: png::BitDepth,
        data: &[u8],
    ) {
        let mut encoder = png::Encoder::new(File::create(path).unwrap(), width, height);
        encoder.set_color(colour);
        encoder.set_depth(depth);
        let mut writer = encoder.write_header().unwrap();
        writer.write_image_data(data).unwrap();
        writer.finish().unwrap();
    }

    #[test]
    fn floats_are_colour_mapped_from_min_to_max_with_nan_magenta() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.png");
        let values = Buffer::F32(vec![-1.0, 0.0, 3.0, f32::NAN, f32::INFINITY, 1.0].into());
        let summary = write_png(&path, "u", &[&values], &[2, 3]).unwrap();
        assert_eq!(
            summary.range,
            ValueRange {
                min: -1.0,
                max: 3.0,
                nan_count: 1,
                inf_count: 1
            }
        );
        assert_eq!(
            (summary.width, summary.height, summary.slice.as_deref()),
            (3, 2, None)
        );
        let (w, h, colour, data) = decode(&path);
        assert_eq!((w, h, colour), (3, 2, png::ColorType::Rgb));
        let table = viridis_table();
        let pixel = |i: usize| [data[3 * i], data[3 * i + 1], data[3 * i + 2]];
        assert_eq!(pixel(0), table[0]);
        assert_eq!(pixel(1), table[64]);
        assert_eq!(pixel(2), table[255]);
        assert_eq!(pixel(3), NAN_COLOUR);
        assert_eq!(pixel(4), table[255]);
        assert_eq!(pixel(5), table[128]);
    }

    #[test]
    fn constant_and_integer_fields_are_drawn_too() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.png");
        let summary = write_png(&path, "k", &[&Buffer::I64(vec![7; 4].into())], &[2, 2]).unwrap();
        assert_eq!((summary.range.min, summary.range.max), (7.0, 7.0));
        let (_, _, _, data) = decode(&path);
        assert!(data.chunks(3).all(|p| p == viridis_table()[128]));
    }

    #[test]
    fn u8_fields_are_grey_and_u8_triples_rgb() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.png");
        let grey = Buffer::U8(vec![0, 50, 100, 255].into());
        write_png(&path, "img", &[&grey], &[2, 2]).unwrap();
        assert_eq!(
            decode(&path),
            (2, 2, png::ColorType::Grayscale, vec![0, 50, 100, 255])
        );
        let (r, g, b) = (
            Buffer::U8(vec![1, 2].into()),
            Buffer::U8(vec![3, 4].into()),
            Buffer::U8(vec![5, 6].into()),
        );
        write_png(&path, "img", &[&r, &g, &b], &[1, 2]).unwrap();
        assert_eq!(
            decode(&path),
            (2, 1, png::ColorType::Rgb, vec![1, 3, 5, 2, 4, 6])
        );
    }

    #[test]
    fn a_1d_field_is_a_strip_and_a_3d_field_its_middle_slice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.png");
        let summary = write_png(&path, "a", &[&Buffer::U8(vec![9, 8, 7].into())], &[3]).unwrap();
        let (w, h, _, data) = decode(&path);
        assert_eq!(
            (w, h as usize, summary.height),
            (3, STRIP_HEIGHT, STRIP_HEIGHT)
        );
        assert!(data.chunks(3).all(|row| row == [9, 8, 7]));
        let cube = Buffer::U8((0..3 * 2 * 2).map(|i| i as u8).collect::<Vec<_>>().into());
        let summary = write_png(&path, "a", &[&cube], &[3, 2, 2]).unwrap();
        assert_eq!(summary.slice.as_deref(), Some("z = 1"));
        assert_eq!(decode(&path).3, vec![4, 5, 6, 7]);
    }

    #[test]
    fn pictures_of_two_components_or_float_triples_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.png");
        let f = Buffer::F32(vec![0.0; 4].into());
        let err = write_png(&path, "E", &[&f, &f], &[2, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cannot write `E` to {}: a PNG shows one component, or 3 or 4 `u8` components as RGB(A), and `E` has 2 components of types f32, f32; draw one component (e.g. `E.x`) or write .npy instead",
                path.display()
            )
        );
        assert!(!path.exists());
    }

    #[test]
    fn grey_pictures_round_trip_and_colour_becomes_luma() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img.png");
        let grey = Buffer::U8((0..15).map(|i| (i * 17) as u8).collect::<Vec<_>>().into());
        write_png(&path, "img", &[&grey], &[3, 5]).unwrap();
        assert_eq!(
            read_png(&path, "img", ScalarType::U8, &[3, 5]).unwrap(),
            grey
        );

        let rgba = dir.path().join("rgba.png");
        encode_file(
            &rgba,
            2,
            1,
            png::ColorType::Rgba,
            png::BitDepth::Eight,
            &[255, 0, 0, 10, 10, 200, 30, 255],
        );
        assert_eq!(
            read_png(&rgba, "img", ScalarType::U8, &[1, 2]).unwrap(),
            Buffer::U8(vec![76, 124].into())
        );

        let deep = dir.path().join("deep.png");
        encode_file(
            &deep,
            1,
            1,
            png::ColorType::Grayscale,
            png::BitDepth::Sixteen,
            &[0xAB, 0xCD],
        );
        assert_eq!(
            read_png(&deep, "img", ScalarType::U8, &[1]).unwrap(),
            Buffer::U8(vec![0xAB].into())
        );
    }

    #[test]
    fn reading_a_picture_of_the_wrong_size_or_into_a_float_field_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img.png");
        write_png(&path, "img", &[&Buffer::U8(vec![0; 6].into())], &[2, 3]).unwrap();
        let err = read_png(&path, "img", ScalarType::U8, &[3, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} has 2 rows of 3 pixels, but field `img` is u8 on a 3x2 grid; resize the image to 2 pixels wide and 3 high, or set the grid's size to match",
                path.display()
            )
        );
        let err = read_png(&path, "u", ScalarType::F32, &[2, 3]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "{} has 2 rows of 3 pixels, but field `u` is f32 on a 2x3 grid; PNG input fills `u8` fields only (give other types as .npy)",
                path.display()
            )
        );
        let text = dir.path().join("text.png");
        std::fs::write(&text, "not a picture").unwrap();
        let err = read_png(&text, "img", ScalarType::U8, &[2, 3]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with(&format!("{} is not a valid PNG file: ", text.display())),
            "{err}"
        );
    }
}
