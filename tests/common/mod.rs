//! What the native test files share. Each test file is its own crate and
//! uses only part of this, hence the allowance.
#![allow(dead_code)]

/// A tiny deterministic PRNG (SplitMix64): no dependency, the same on every
/// platform, so a seed reproduces a run exactly.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True `pct` times in a hundred.
    pub fn percent(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// D1 on SQLite, for the serial queue's tests.
pub mod d1;

/// What a simulation's per-seed figures need for [`simulate`]: the steps
/// they took, and adding another seed's figures to a total.
pub trait SimStats: Default + std::fmt::Debug {
    fn steps(&self) -> u64;
    fn add(&mut self, other: &Self);
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.parse().expect(name))
}

/// The seeded-simulation driver every `*_sim.rs` shares.
///
/// With `BATON_SIM_SEED` set it replays that one seed (traced when
/// `BATON_SIM_TRACE` is set) and returns `None`. Otherwise it runs seeds
/// from `first_seed` up until `BATON_SIM_STEPS` steps (default
/// `default_steps`) are done and returns their total, when the full default
/// budget ran: the run a caller checks its coverage on (a shorter one may
/// not reach every path).
pub fn simulate<S: SimStats>(
    name: &str,
    first_seed: u64,
    default_steps: u64,
    run_seed: impl Fn(u64, bool) -> S,
) -> Option<S> {
    if let Some(seed) = env_u64("BATON_SIM_SEED") {
        let stats = run_seed(seed, std::env::var_os("BATON_SIM_TRACE").is_some());
        eprintln!("{name}, seed {seed}: {stats:?}");
        return None;
    }
    let budget = env_u64("BATON_SIM_STEPS").unwrap_or(default_steps);
    let mut total = S::default();
    let mut seed = first_seed;
    while total.steps() < budget {
        total.add(&run_seed(seed, false));
        seed += 1;
    }
    eprintln!("{name}, {} seeds: {total:?}", seed - first_seed);
    (budget >= default_steps).then_some(total)
}

/// Asserts that a simulation reached each named path at least once: a
/// change that stops it from reaching one would let it pass without
/// testing that path.
pub fn assert_reached(reached: &[(&str, u64)]) {
    for (what, n) in reached {
        assert!(*n > 0, "the simulation never reached {what}");
    }
}
