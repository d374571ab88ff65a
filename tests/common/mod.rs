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
pub mod faults;
pub mod sqlite;

#[allow(unused_imports)]
pub use faults::{End, Fault, Faults, Injected, Life};

/// What a simulation's per-seed figures need for [`simulate`]: the steps
/// they took, and adding another seed's figures to a total.
pub trait SimStats: Default + std::fmt::Debug {
    fn steps(&self) -> u64;
    fn add(&mut self, other: &Self);
}

/// The variables every seeded test reads, and nothing else: one seed
/// variable for the whole suite.
pub const SEED_VAR: &str = "BATON_SIM_SEED";
pub const STEPS_VAR: &str = "BATON_SIM_STEPS";
pub const TRACE_VAR: &str = "BATON_SIM_TRACE";

pub fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number"))
    })
}

/// Whether `BATON_SIM_TRACE` asks for each step to be printed.
pub fn tracing() -> bool {
    std::env::var_os(TRACE_VAR).is_some()
}

/// For seeded tests that are not step-budgeted simulations: the one seed
/// `BATON_SIM_SEED` names, or `default`. Each runs under
/// [`replay_on_failure`].
pub fn seeds(default: impl IntoIterator<Item = u64>) -> Vec<u64> {
    match env_u64(SEED_VAR) {
        Some(seed) => vec![seed],
        None => default.into_iter().collect(),
    }
}

/// Runs `run(seed)`; a failure prints how to replay that seed alone.
pub fn replay_on_failure<T>(test: &str, seed: u64, run: impl FnOnce() -> T) -> T {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(value) => value,
        Err(panic) => {
            eprintln!("{test} failed: replay with {SEED_VAR}={seed}");
            std::panic::resume_unwind(panic)
        }
    }
}

/// What a simulation prints when a seed fails: the seed, the step within
/// it, and how to replay it (one line, the same in every simulation).
pub fn report_failure(test_file: &str, seed: u64, step: u64) {
    eprintln!(
        "\nSIMULATION FAILED: {test_file}, seed {seed}, step {step} of the seed. Replay with\n  \
         {SEED_VAR}={seed} {TRACE_VAR}=1 cargo test --test {test_file} simulation -- --nocapture"
    );
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
    if let Some(seed) = env_u64(SEED_VAR) {
        let stats = run_seed(seed, tracing());
        eprintln!("{name}, seed {seed}: {stats:?}");
        return None;
    }
    let budget = env_u64(STEPS_VAR).unwrap_or(default_steps);
    let mut total = S::default();
    let mut seed = first_seed;
    while total.steps() < budget {
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_seed(seed, false)));
        match ran {
            Ok(stats) => total.add(&stats),
            Err(panic) => {
                // With the seed's own step (in its report), how long the
                // whole run took to fail.
                eprintln!(
                    "{name}: {} steps of earlier seeds ran before seed {seed} failed",
                    total.steps()
                );
                std::panic::resume_unwind(panic);
            }
        }
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

/// A decision-log line as it prints: what a core's line says, its reason
/// worded by the core's own `Display` (the part judged, as the shell
/// writes it). An oracle builds the `Said` it expects in its own words and
/// compares the two: it never calls the core's wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub kind: baton::transition::LogKind,
    pub instance: Option<baton::ident::InstanceId>,
    pub decision: &'static str,
    pub reason: String,
    pub waited_ms: Option<u64>,
}

/// The lines a decision printed, as [`Said`].
pub fn said<W: std::fmt::Display>(lines: &[baton::transition::LogLine<W>]) -> Vec<Said> {
    lines.iter().map(said_one).collect()
}

/// One line a decision printed, as [`Said`].
pub fn said_one<W: std::fmt::Display>(line: &baton::transition::LogLine<W>) -> Said {
    Said {
        kind: line.kind,
        instance: line.instance.clone(),
        decision: line.decision,
        reason: line.reason.to_string(),
        waited_ms: line.waited_ms,
    }
}
