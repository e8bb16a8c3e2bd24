//! A small deterministic random number generator for the fuzzers.
/// xorshift64*: a deterministic source of arbitrary input for property tests, without a
/// dependency.
pub struct Rng(u64);

impl Rng {
    /// A generated test's seed (`KARDWT_SEED`, else the clock) and case count (`KARDWT_CASES`,
    /// else `default`).
    pub fn seed_and_cases(default: u64) -> (u64, u64) {
        let env = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
        let seed = env("KARDWT_SEED").unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
        (seed, env("KARDWT_CASES").unwrap_or(default))
    }

    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}
