//! The random draws of a run: the generator and how a draw becomes a number in a range.
//!
//! `--seed N` promises the same delays in every release with the same minor version (the same
//! major version from 1.0), so both are written here rather than taken from a dependency,
//! which may change its algorithm or its range conversion in any release. The generator is SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014): one 64-bit word of state, a fixed increment and a fixed
//! finaliser, statistically sound for spreading waits (it is not for secrets). Pure: no
//! clock, no entropy; the seed comes from the caller.

/// A seeded stream of draws. The same seed gives the same draws, in every release with the
/// same minor version.
#[derive(Clone, Debug)]
pub struct Draws {
    state: u64,
}

impl Draws {
    pub fn seeded(seed: u64) -> Draws {
        Draws { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, top]. Up to 2^64 by the multiply-shift of one draw (Lemire's,
    /// without rejection: a bias below 2^-64 per value, and one draw however large the
    /// range); above, two draws make 128 bits taken modulo the range (durations of more than
    /// 584 years, which only a run that never waits them draws).
    pub fn up_to(&mut self, top: u128) -> u128 {
        match u64::try_from(top) {
            Ok(top) => {
                let span = u128::from(top) + 1;
                (u128::from(self.next_u64()) * span) >> 64
            }
            Err(_) => {
                let bits = (u128::from(self.next_u64()) << 64) | u128::from(self.next_u64());
                match top.checked_add(1) {
                    Some(span) => bits % span,
                    None => bits,
                }
            }
        }
    }

    /// A uniform number in [-1, 1], from the top 53 bits of one draw.
    pub fn signed_unit(&mut self) -> f64 {
        const STEPS: f64 = ((1u64 << 53) - 1) as f64;
        (self.next_u64() >> 11) as f64 / STEPS * 2.0 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64's published first outputs for seed 0 (the reference C code of its authors,
    /// as in Vigna's `splitmix64.c`): the generator is the named one.
    #[test]
    fn the_generator_is_splitmix64() {
        let mut draws = Draws::seeded(0);
        let first: Vec<u64> = (0..3).map(|_| draws.next_u64()).collect();
        assert_eq!(
            first,
            [
                0xE220_A839_7B1D_CDAF,
                0x6E78_9E6A_A1B9_65F4,
                0x06C4_5D18_8009_454F
            ]
        );
    }

    #[test]
    fn a_range_holds_every_draw() {
        let mut draws = Draws::seeded(7);
        for top in [
            0u128,
            1,
            2,
            9,
            1000,
            u128::from(u64::MAX),
            1 << 70,
            u128::MAX,
        ] {
            for _ in 0..1000 {
                assert!(draws.up_to(top) <= top, "{top}");
            }
        }
        for _ in 0..10_000 {
            let x = draws.signed_unit();
            assert!((-1.0..=1.0).contains(&x), "{x}");
        }
    }

    #[test]
    fn small_ranges_are_spread_evenly() {
        let mut draws = Draws::seeded(42);
        let mut counts = [0u32; 10];
        for _ in 0..100_000 {
            counts[draws.up_to(9) as usize] += 1;
        }
        // 10,000 expected each; a fair die stays well within 5% in 100,000 throws.
        assert!(
            counts.iter().all(|&c| (9_500..=10_500).contains(&c)),
            "{counts:?}"
        );
        let both_ends = (0..1000).map(|_| draws.up_to(1)).collect::<Vec<_>>();
        assert!(both_ends.contains(&0) && both_ends.contains(&1));
    }
}
