//! The test picture shipped as `examples/data/shapes.png` for the blur and Canny examples: a
//! 256 x 192 8-bit grayscale image with a diagonal gradient, a disc, a rectangle, a triangle, a
//! ring and a little deterministic noise (edges of every direction, flat and sloped areas).

/// Image width in pixels (the fastest axis, `x`).
pub const WIDTH: usize = 256;
/// Image height in pixels (`y`).
pub const HEIGHT: usize = 192;

/// The pixels, row-major (`y` slowest).
pub fn pixels() -> Vec<u8> {
    let mut noise = Noise(0x5EED_1234_ABCD);
    (0..HEIGHT)
        .flat_map(|y| (0..WIDTH).map(move |x| (x as i64, y as i64)))
        .map(|(x, y)| {
            let value = shape_value(x, y);
            let jitter = (noise.next() % 13) as i64 - 6;
            (value + jitter).clamp(0, 255) as u8
        })
        .collect()
}

/// The noiseless picture at `(x, y)`: the topmost shape covering the pixel, or the gradient.
fn shape_value(x: i64, y: i64) -> i64 {
    let in_disc = (x - 70).pow(2) + (y - 75).pow(2) <= 40 * 40;
    let ring = (x - 60).pow(2) + (y - 158).pow(2);
    let in_ring = (20 * 20..=27 * 27).contains(&ring);
    let in_rectangle = (140..220).contains(&x) && (25..85).contains(&y);
    // Triangle with apex (190, 105) and base y = 175 from x = 145 to 235.
    let in_triangle = (105..=175).contains(&y) && (x - 190).abs() * 70 <= (y - 105) * 45;
    if in_ring {
        250
    } else if in_disc {
        215
    } else if in_rectangle {
        25
    } else if in_triangle {
        175
    } else {
        40 + (x + y) * 100 / (WIDTH + HEIGHT) as i64
    }
}

/// A small deterministic generator (xorshift64) for the noise.
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}
