// R1 and R2: idempotent runs (issue 12). Runs calls timed inside the bench
// Worker (bench/worker.mjs routes), as P3-P5 are.
import { summary, median } from "./stats.mjs";

/** R1: rounds per crowd size; awaiters per round. */
export const R1_ROUNDS = { 1: 40, 100: 10 };
/** R2: the kept logs compared, rounds (sizes interleaved), calls per timed batch. */
export const R2_SMALL = 10;
export const R2_LARGE = 500;
export const R2_ROUNDS = 30;
/** Date.now() in workerd has 1 ms steps: 25 calls per batch resolve 0.04 ms per call. */
export const R2_BATCH = 25;

/**
 * R1: from the `complete` call to each awaiter's answer, with `n` awaiters
 * parked on the run (each round a fresh run key).
 */
export async function awaitLatency(b) {
  const out = {};
  for (const [n, rounds] of Object.entries(R1_ROUNDS)) {
    const samples = [];
    const completeCall = [];
    for (let round = -1; round < rounds; round++) {
      const r = await b.call("/bench/runs-await", { key: `r1-${n}-${round + 1}`, awaiters: Number(n) });
      if (r.notComplete) throw new Error(`r1: ${r.notComplete} awaiters were not answered with the outcome`);
      if (round < 0) continue; // warm-up
      samples.push(...r.latenciesMs);
      completeCall.push(r.completeMs);
    }
    out[n] = { answer: summary(samples), completeCall: summary(completeCall) };
  }
  return out;
}

/**
 * R2: per-call time of `append` and of `events` (the newest 10, and the
 * empty read after the end a follower makes) with 500 events kept over the
 * same with 10, sizes interleaved round by round; medians of batch means.
 */
export async function logCost(b) {
  const sizes = [R2_SMALL, R2_LARGE];
  // The large log has seen more than it keeps, so every append also prunes.
  await b.call("/bench/runs-fill", { key: "r2-large", count: 600 });
  const batches = Object.fromEntries(sizes.map((n) => [n, []]));
  for (let round = -1; round < R2_ROUNDS; round++) {
    // The small log starts each round at 10 events: a fresh key on the
    // same (warm) object, so the batch's appends take it to 10 + batch.
    const small = { key: `r2-small-${round + 1}`, object: "r2-small" };
    await b.call("/bench/runs-fill", { ...small, count: R2_SMALL });
    const runs = { [R2_SMALL]: small, [R2_LARGE]: { key: "r2-large" } };
    for (const n of round % 2 ? sizes : [...sizes].reverse()) {
      const result = await b.call("/bench/runs-log", { ...runs[n], batch: R2_BATCH });
      const expected = n === R2_SMALL ? R2_SMALL + R2_BATCH : R2_LARGE;
      if (result.kept !== expected) throw new Error(`r2: the ${n} log keeps ${result.kept}, not ${expected}`);
      if (round >= 0) batches[n].push(result);
    }
  }
  const per = {};
  for (const n of sizes) {
    per[n] = Object.fromEntries(
      ["appendMs", "eventsMs", "sumMs", "appendWrites", "appendReads", "eventsReads"].map((op) => [
        op,
        summary(batches[n].map((x) => x[op])),
      ]),
    );
  }
  return {
    per,
    ratio: median(batches[R2_LARGE].map((x) => x.sumMs)) / median(batches[R2_SMALL].map((x) => x.sumMs)),
    appendRatio: per[R2_LARGE].appendMs.p50 / per[R2_SMALL].appendMs.p50,
    eventsRatio: per[R2_LARGE].eventsMs.p50 / per[R2_SMALL].eventsMs.p50,
  };
}
