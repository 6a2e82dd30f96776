//! Small deterministic random streams: every random choice in ginex is a
//! pure function of (seed, purpose, index), so results do not depend on
//! thread counts or scheduling.

/// SplitMix64's finalizer: a bijective 64-bit mix.
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The seed of stream `index` for `purpose` under `seed`.
pub fn stream_seed(seed: u64, purpose: u64, index: u64) -> u64 {
    stream_seed_keyed(purpose_key(seed, purpose), index)
}

/// The part of [`stream_seed`] that does not depend on the index: a hot
/// loop over many indices computes it once.
pub fn purpose_key(seed: u64, purpose: u64) -> u64 {
    mix64(seed ^ purpose.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// [`stream_seed`] from its [`purpose_key`].
pub fn stream_seed_keyed(key: u64, index: u64) -> u64 {
    mix64(key ^ index)
}

/// wyrand: small, fast, statistically good enough for sampling.
#[derive(Debug, Clone)]
pub struct Wyrand(pub u64);

impl Wyrand {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) ^ t) as u64
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `0..n` (multiply-shift; bias below n / 2^64).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Approximately N(0, 1): the sum of four 16-bit uniforms, rescaled.
    pub fn gaussian(&mut self) -> f32 {
        let r = self.next_u64();
        let sum = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
        (sum as f32 / 65536.0 - 2.0) * 3f32.sqrt()
    }
}
