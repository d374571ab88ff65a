// P7: the Debouncer. The cost of a `debounce` call late in a long burst
// against one early in a short one (timed inside the Worker), and how late
// a start is made after the `fireAt` its calls were given.
import { summary, median } from "./stats.mjs";

/** P7 flat cost: burst lengths compared, rounds, calls per timed batch. */
export const P7_SMALL = 10;
export const P7_LARGE = 10_000;
export const P7_ROUNDS = 20;
/** Date.now() in workerd has 1 ms steps: a batch of 25 resolves 0.04 ms per call. */
export const P7_BATCH = 25;
/** Calls per request while filling the long burst. */
const FILL_CHUNK = 2_500;
/** A delay no round outlasts: the bursts stay open for the whole figure. */
const OPEN_MS = 3_600_000;
/** P7 lateness: keys, each one trailing start, and how many run at once. */
export const P7_STARTS = 60;
export const P7_PARALLEL = 1;
/** The starts' delay: short, so the figure is the alarm's and the create's lateness. */
export const P7_DELAY_MS = 200;

/** Calls `debounce` on `key` `count` times from the Worker; ms per call. */
async function burst(b, key, count) {
  const reply = await b.call("/bench/debounce-burst", { key, count, delayMs: OPEN_MS });
  return reply.elapsedMs / count;
}

/** P7a: per-call cost in a burst of 10,000 against one of 10. */
export async function flatCost(b) {
  const large = "p7-large";
  const started = performance.now();
  for (let done = 0; done < P7_LARGE; done += FILL_CHUNK) {
    await burst(b, large, Math.min(FILL_CHUNK, P7_LARGE - done));
  }
  const fillMs = performance.now() - started;
  // Warm-up, untimed.
  await burst(b, "p7-small-warm", P7_SMALL + P7_BATCH);
  const small = [];
  const long = [];
  for (let round = 0; round < P7_ROUNDS; round++) {
    const key = `p7-small-${round}`;
    await burst(b, key, P7_SMALL);
    const runs = [
      async () => small.push(await burst(b, key, P7_BATCH)),
      async () => long.push(await burst(b, large, P7_BATCH)),
    ];
    if (round % 2) runs.reverse();
    for (const run of runs) await run();
  }
  const calls = (await b.debouncer(large, "inspect", large)).pending.calls;
  return {
    fillMs,
    largeCalls: calls,
    small: summary(small),
    large: summary(long),
    ratio: median(long) / median(small),
  };
}

/** P7b: a trailing start's lateness after its `fireAt`, to the create confirmed and to its first step. */
export async function lateness(b) {
  const created = [];
  const stepped = [];
  const one = async (i) => {
    const key = `p7-late-${i}`;
    const reply = await b.debouncer(key, "debounce", key, {
      delayMs: P7_DELAY_MS,
      params: { mode: "debounced" },
    });
    const view = await b.until(`${key} to start`, async () => {
      const v = await b.debouncer(key, "inspect", key);
      return v.started.length ? v : null;
    });
    created.push(view.started[0].at - reply.fireAt);
    const output = await b.output(reply.instanceId);
    stepped.push(output.startedAt - reply.fireAt);
  };
  for (let i = 0; i < P7_STARTS; i += P7_PARALLEL) {
    await Promise.all(Array.from({ length: P7_PARALLEL }, (_, j) => one(i + j)));
  }
  return { created: summary(created), stepped: summary(stepped) };
}
