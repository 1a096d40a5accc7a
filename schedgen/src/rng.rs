//! Two small generators the reference patterns depend on: glibc's default
//! `rand()` (for `linear_alltoallv`, 3.12) and the Mersenne Twister mt19937
//! (for the `random_bisect*` permutations, 3.11). Both written from their
//! published definitions.

/// glibc `rand()` in its default state (seed 1), the additive feedback
/// generator `r[i] = r[i-31] + r[i-3]` described in docs/model/schedgen.md 3.12.
#[derive(Debug, Clone)]
pub struct GlibcRand {
    r: Vec<u32>,
}

impl GlibcRand {
    pub fn new() -> Self {
        let mut r: Vec<u32> = Vec::with_capacity(400);
        r.push(1);
        for i in 1..31 {
            // 16807 * r[i-1] mod (2^31 - 1), computed in 64 bits.
            let v = (16807u64 * r[i - 1] as u64) % 2147483647;
            r.push(v as u32);
        }
        for i in 31..34 {
            r.push(r[i - 31]);
        }
        let mut g = GlibcRand { r };
        // Discard until index 344, the first output.
        while g.r.len() < 344 {
            g.step();
        }
        g
    }

    fn step(&mut self) -> u32 {
        let i = self.r.len();
        let v = self.r[i - 31].wrapping_add(self.r[i - 3]);
        self.r.push(v);
        // Keep the buffer short: only the last 31 values are ever needed.
        if self.r.len() > 4096 {
            let cut = self.r.len() - 64;
            self.r.drain(..cut);
        }
        v
    }

    /// The next `rand()` value (0..2^31-1).
    pub fn next_rand(&mut self) -> u32 {
        self.step() >> 1
    }
}

impl Default for GlibcRand {
    fn default() -> Self {
        Self::new()
    }
}

/// The 32-bit Mersenne Twister (MT19937).
#[derive(Debug, Clone)]
pub struct Mt19937 {
    mt: [u32; 624],
    idx: usize,
}

impl Mt19937 {
    pub fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = seed;
        for i in 1..624 {
            mt[i] = 1812433253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, idx: 624 }
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % 624] & 0x7fff_ffff);
            let mut v = self.mt[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.mt[i] = v;
        }
        self.idx = 0;
    }

    pub fn next_u32(&mut self) -> u32 {
        if self.idx >= 624 {
            self.twist();
        }
        let mut y = self.mt[self.idx];
        self.idx += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glibc_rand_first_ten() {
        let mut g = GlibcRand::new();
        let got: Vec<u32> = (0..10).map(|_| g.next_rand()).collect();
        assert_eq!(
            got,
            vec![
                1804289383, 846930886, 1681692777, 1714636915, 1957747793, 424238335, 719885386,
                1649760492, 596516649, 1189641421
            ]
        );
    }

    #[test]
    fn mt19937_reference_value() {
        // The C++ standard fixes the 10000th output of a default-seeded
        // (5489) mt19937 at 4123659995.
        let mut m = Mt19937::new(5489);
        let mut v = 0;
        for _ in 0..10000 {
            v = m.next_u32();
        }
        assert_eq!(v, 4123659995);
    }
}
