//! The viridis colour map (perceptually uniform, readable in grey and by colour-blind readers),
//! computed from the polynomial fit of Matt Zucker's public-domain `viridis` approximation
//! (within about 1% of the matplotlib table).

/// Coefficients of the degree-6 polynomial in `t` per channel (r, g, b), constant term first.
const COEFFICIENTS: [[f64; 3]; 7] = [
    [
        0.277_727_327_223_417_7,
        0.005_407_344_544_966_578,
        0.334_099_805_335_306_1,
    ],
    [
        0.105_093_043_108_577_4,
        1.404_613_529_898_575,
        1.384_590_162_594_685,
    ],
    [
        -0.330_861_828_725_556_3,
        0.214_847_559_468_213,
        0.095_095_163_028_236_59,
    ],
    [
        -4.634_230_498_983_486,
        -5.799_100_973_351_585,
        -19.332_440_956_279_87,
    ],
    [
        6.228_269_936_347_081,
        14.179_933_366_805_09,
        56.690_552_600_681_05,
    ],
    [
        4.776_384_997_670_288,
        -13.745_145_377_746_01,
        -65.353_032_633_372_34,
    ],
    [
        -5.435_455_855_934_631,
        4.645_852_612_178_535,
        26.312_435_249_583_2,
    ],
];

/// The colour of `t` in `[0, 1]` (clamped), as 8-bit RGB.
pub fn viridis(t: f64) -> [u8; 3] {
    let t = t.clamp(0.0, 1.0);
    let mut rgb = [0u8; 3];
    for (channel, out) in rgb.iter_mut().enumerate() {
        let value = COEFFICIENTS
            .iter()
            .rev()
            .fold(0.0, |acc, c| acc * t + c[channel]);
        *out = (value.clamp(0.0, 1.0) * 255.0).round() as u8;
    }
    rgb
}

/// The 256-entry viridis table: entry `i` is the colour of `i / 255`.
pub fn viridis_table() -> [[u8; 3]; 256] {
    std::array::from_fn(|i| viridis(i as f64 / 255.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [u8; 3], b: [u8; 3]) -> bool {
        a.iter().zip(b).all(|(&x, y)| x.abs_diff(y) <= 4)
    }

    #[test]
    fn matches_matplotlib_viridis_at_the_ends_and_middle() {
        // matplotlib's viridis: 0.0 -> #440154, 0.5 -> #21918c, 1.0 -> #fde725.
        assert!(
            close(viridis(0.0), [0x44, 0x01, 0x54]),
            "{:?}",
            viridis(0.0)
        );
        assert!(
            close(viridis(0.5), [0x21, 0x91, 0x8c]),
            "{:?}",
            viridis(0.5)
        );
        assert!(
            close(viridis(1.0), [0xfd, 0xe7, 0x25]),
            "{:?}",
            viridis(1.0)
        );
        assert_eq!(viridis(-3.0), viridis(0.0));
    }

    #[test]
    fn lightness_increases_along_the_table() {
        let luma =
            |[r, g, b]: [u8; 3]| 0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b);
        let table = viridis_table();
        assert!(table.windows(2).all(|w| luma(w[1]) >= luma(w[0]) - 0.5));
    }
}
