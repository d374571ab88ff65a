// L1–L3: the rate limiter's acquire, timed inside the bench Worker
// (bench/worker.mjs, /bench/rate-acquires) against two baselines in the same
// Miniflare (bench/rate-baselines.mjs), and its cost with many live grants.
// `node bench/rate.mjs` runs these alone against the current build.
import { summary, median, fmt, spread } from "./stats.mjs";

/** Timed runs after one warm-up, and acquires per run (one after another). */
export const RATE_RUNS = 9;
export const RATE_CALLS = 300;

/** The example of docs/rate-limits.md: 5 a second and 100 a minute, so most calls are refused. */
export const EXAMPLE_RULES = [
  { id: "second", limit: 5, windowMs: 1_000 },
  { id: "minute", limit: 100, windowMs: 60_000 },
];
/** The same two windows with limits no run reaches: every call is granted. */
export const OPEN_RULES = [
  { id: "second", limit: 100_000, windowMs: 1_000 },
  { id: "minute", limit: 100_000, windowMs: 60_000 },
];
export const CONFIGS = { example: EXAMPLE_RULES, open: OPEN_RULES };
export const TARGETS = ["baton", "js", "fixed"];

/** L3: live grants compared, rounds (sizes interleaved), acquires per timed batch. */
export const COST_SMALL = 10;
export const COST_LARGE = 10_000;
export const COST_ROUNDS = 20;
/** Date.now() in workerd has 1 ms steps: a batch of 50 resolves 0.02 ms per call. */
export const COST_BATCH = 50;
const COST_RULES = [{ id: "day", limit: 100_000, windowMs: 86_400_000 }];
const FILL_CHUNK = 2_500;

const acquires = (b, target, bucket, rules, calls) =>
  b.call("/bench/rate-acquires", { target, bucket, rules, calls });

/** L1, L2: acquire calls per second on one bucket, per rule set and limiter. */
export async function throughput(b) {
  const perSecond = {};
  for (const config of Object.keys(CONFIGS)) {
    perSecond[config] = Object.fromEntries(TARGETS.map((t) => [t, []]));
    // Warm-up: creates the objects and their tables, untimed.
    for (const target of TARGETS) await acquires(b, target, `rate-${config}`, CONFIGS[config], 20);
  }
  const granted = {};
  for (let run = 0; run < RATE_RUNS; run++) {
    for (const config of Object.keys(CONFIGS)) {
      // Which limiter goes first rotates, so none always follows another.
      const order = TARGETS.map((_, i) => TARGETS[(i + run) % TARGETS.length]);
      for (const target of order) {
        const r = await acquires(b, target, `rate-${config}`, CONFIGS[config], RATE_CALLS);
        perSecond[config][target].push((r.calls / Math.max(1, r.elapsedMs)) * 1000);
        granted[`${config}/${target}`] = (granted[`${config}/${target}`] ?? 0) + r.granted;
      }
    }
  }
  const summaries = {};
  const vsJs = {};
  const vsFixed = {};
  for (const config of Object.keys(CONFIGS)) {
    summaries[config] = Object.fromEntries(TARGETS.map((t) => [t, summary(perSecond[config][t])]));
    vsJs[config] = summaries[config].baton.p50 / summaries[config].js.p50;
    vsFixed[config] = summaries[config].baton.p50 / summaries[config].fixed.p50;
  }
  return { summaries, vsJs, vsFixed, granted };
}

/** A bucket filled with `count` one-permit grants inside a day-long window. */
async function fill(b, bucket, count) {
  const started = performance.now();
  for (let done = 0; done < count; done += FILL_CHUNK) {
    await acquires(b, "baton", bucket, COST_RULES, Math.min(FILL_CHUNK, count - done));
  }
  return performance.now() - started;
}

/** L3: per-acquire time and storage work with 10,000 live grants over with 10. */
export async function cost(b) {
  const sizes = [COST_SMALL, COST_LARGE];
  const buckets = Object.fromEntries(sizes.map((n) => [n, `rate-cost-${n}`]));
  const fillMs = {};
  for (const n of sizes) fillMs[n] = await fill(b, buckets[n], n);
  const perCall = Object.fromEntries(sizes.map((n) => [n, []]));
  const work = Object.fromEntries(sizes.map((n) => [n, { reads: [], writes: [] }]));
  const last = {};
  for (let round = -1; round < COST_ROUNDS; round++) {
    for (const n of round % 2 ? sizes : [...sizes].reverse()) {
      const r = await acquires(b, "baton", buckets[n], COST_RULES, COST_BATCH);
      if (r.granted !== COST_BATCH) throw new Error(`l3: ${COST_BATCH - r.granted} acquires not granted`);
      if (round >= 0) {
        perCall[n].push(r.elapsedMs / COST_BATCH);
        work[n].reads.push((r.work.reads - last[n].reads) / COST_BATCH);
        work[n].writes.push((r.work.writes - last[n].writes) / COST_BATCH);
      }
      last[n] = r.work;
    }
  }
  const per = Object.fromEntries(sizes.map((n) => [n, summary(perCall[n])]));
  return {
    per,
    ratio: per[COST_LARGE].p50 / per[COST_SMALL].p50,
    work: Object.fromEntries(
      sizes.map((n) => [n, { reads: median(work[n].reads), writes: median(work[n].writes) }]),
    ),
    fillMs: fillMs[COST_LARGE],
  };
}

/** The figures' method and spread, for docs/benchmarks.md. */
export function section(rate, rateCost) {
  const rows = Object.keys(CONFIGS).map((config) => {
    const s = rate.summaries[config];
    return (
      `| ${config === "example" ? "5/s and 100/min (mostly refused)" : "100,000/s and /min (all granted)"} | ` +
      `${spread(s.baton, "calls/s")} | ${spread(s.js, "calls/s")} | ${spread(s.fixed, "calls/s")} | ` +
      `${fmt(rate.vsJs[config])}× | ${fmt(rate.vsFixed[config])}× |`
    );
  });
  return {
    title: "L1–L3: rate limits",
    text: [
      `A Worker route calls \`acquire(bucket, { rules })\` ${RATE_CALLS} times in a row through one bucket's stub, ` +
        `awaiting each, and times the loop with Date.now(); ${RATE_RUNS} runs after a warm-up, the limiters' order ` +
        `rotating. Three limiters with the same signature, each its own Durable Object in the same Miniflare: ` +
        `Baton's \`RateLimiter\` (release WASM); a plain JavaScript Durable Object with the same exact sliding ` +
        `window over its SQLite (a row per grant and rule, the window's use summed through an index on (rule, time), ` +
        `aged rows deleted; bench/rate-baselines.mjs); and the seed's fixed window kept in memory (per rule a window ` +
        `start and a count, not exact and not durable). Two rule sets, the rate-limits page's two rules, and the same windows ` +
        `with limits no run reaches, so every call is granted and the minute window fills with grants.`,
      "",
      "| rules | Baton | plain JS, exact, SQLite | seed's fixed window, memory | Baton / JS | Baton / fixed |",
      "|---|---|---|---|---|---|",
      ...rows,
      "",
      `L3: two buckets under one rule (100,000 a day): one filled with ${COST_SMALL} grants, one with ` +
        `${COST_LARGE.toLocaleString("en")} (one acquire each, ${fmt(rateCost.fillMs / 1000)} s), all live. ` +
        `${COST_ROUNDS} rounds after a warm-up, sizes alternating first; per round ${COST_BATCH} granted acquires ` +
        `on each, timed as a whole. The figure is the ratio of the medians.`,
      "",
      `- with ${COST_SMALL} live grants: ${spread(rateCost.per[COST_SMALL])} per acquire; storage ` +
        `${fmt(rateCost.work[COST_SMALL].reads)} reads, ${fmt(rateCost.work[COST_SMALL].writes)} writes`,
      `- with ${COST_LARGE.toLocaleString("en")}: ${spread(rateCost.per[COST_LARGE])} per acquire; storage ` +
        `${fmt(rateCost.work[COST_LARGE].reads)} reads, ${fmt(rateCost.work[COST_LARGE].writes)} writes`,
    ].join("\n"),
  };
}

/** Why L1 missed, from what the runs measured. */
export function explainRate(rate) {
  const lines = Object.keys(CONFIGS).map((c) => {
    const s = rate.summaries[c];
    return `${c}: Baton ${fmt(s.baton.p50)}, plain JS ${fmt(s.js.p50)}, fixed window ${fmt(s.fixed.p50)} calls/s`;
  });
  return (
    `${lines.join("; ")}. Baton's object keeps a write-through cache of its bucket: a refused acquire runs no ` +
    `statement and a granted one only its insert (L3 counts them), so what is left per call is the RPC, reading ` +
    `the arguments into WASM (a quick path for the common shape), the decision and the reply, plus for a grant the ` +
    `insert and the commit that every write pays before its reply. The plain JS limiter sums its windows ` +
    `(its cost grows with the grants in them) and writes a row per rule. Where Baton is behind, profile it: ` +
    `node bench/profile.mjs rate example|open (after BATON_WASM_NAMES=1 bash scripts/build.sh).`
  );
}

/** Why L3 missed. */
export function explainRateCost(rateCost) {
  return (
    `Storage statements per acquire: ${fmt(rateCost.work[COST_SMALL].reads)} reads with ${COST_SMALL} grants, ` +
    `${fmt(rateCost.work[COST_LARGE].reads)} with ${COST_LARGE}. Equal counts with unequal times mean a ` +
    `statement whose cost grows with the rows: tests/rate_limit_props.rs counts SQLite's instructions per ` +
    `acquire and fails on such a statement; run it.`
  );
}

/** The figures for the table. */
export function figures(rate, rateCost, target) {
  return [
    {
      id: "L1",
      name: "rate acquire calls/s on one bucket, Baton / plain JS exact window over SQLite (worse of two rule sets)",
      measured: Object.keys(CONFIGS)
        .map((c) => `${c}: ${fmt(rate.vsJs[c])}× (${fmt(rate.summaries[c].baton.p50)} vs ${fmt(rate.summaries[c].js.p50)} calls/s)`)
        .join("; "),
      target: `≥ ${target.rateVsJsMin}×`,
      met: Math.min(...Object.values(rate.vsJs)) >= target.rateVsJsMin,
      used: target.rateVsJsMin / Math.min(...Object.values(rate.vsJs)),
    },
    {
      id: "L2",
      name: "the same, Baton / the seed's in-memory fixed window",
      measured: Object.keys(CONFIGS)
        .map((c) => `${c}: ${fmt(rate.vsFixed[c])}× (${fmt(rate.summaries[c].fixed.p50)} calls/s)`)
        .join("; "),
      target: "",
      met: null,
    },
    {
      id: "L3",
      name: `acquire with ${COST_LARGE.toLocaleString("en")} live grants / with ${COST_SMALL}`,
      measured: `${fmt(rateCost.ratio)} (${fmt(rateCost.per[COST_LARGE].p50)} ms / ${fmt(rateCost.per[COST_SMALL].p50)} ms)`,
      target: `≤ ${target.rateCostRatioMax}`,
      met: rateCost.ratio <= target.rateCostRatioMax,
      used: rateCost.ratio / target.rateCostRatioMax,
    },
  ];
}

// Alone: `node bench/rate.mjs` (after a build) prints L1–L3.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { startBench } = await import("./miniflare.mjs");
  const { printFigure } = await import("./report.mjs");
  const b = await startBench();
  try {
    const rate = await throughput(b);
    const rateCost = await cost(b);
    for (const f of figures(rate, rateCost, { rateVsJsMin: 1.0, rateCostRatioMax: 1.5 })) printFigure(f);
    console.log(section(rate, rateCost).text);
  } finally {
    await b.dispose();
  }
}
