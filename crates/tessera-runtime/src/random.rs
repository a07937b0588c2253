//! The one seeded random number generator of Tessera (SplitMix64): benchmark inputs and test
//! data are reproducible from a seed, with no dependency.

/// A SplitMix64 generator (small, fast, good enough for test data and benchmark inputs).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `[0, 1)` with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform integer in `lo..hi` (`hi > lo`).
    pub fn next_in(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next_u64() % (hi - lo) as u64) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64_and_values_stay_in_range() {
        // The first output of SplitMix64 seeded with 0 (Vigna's reference implementation).
        assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
        let mut rng = SplitMix64::new(7);
        for _ in 0..1000 {
            assert!((0.0..1.0).contains(&rng.next_f64()));
            assert!((-3..4).contains(&rng.next_in(-3, 4)));
        }
    }
}
