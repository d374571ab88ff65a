// For every missed target: the measured reason (where the time or the work
// goes, from the splits the bench takes) and what would fix it.
import { fmt } from "./stats.mjs";
import { P4_LARGE, P4_SMALL } from "./calls.mjs";
import { explainRate, explainRateCost } from "./rate.mjs";

const KIB = 1024;

/** Text per figure, keyed by id and a word of its name. */
const EXPLAIN = {
  "P1 hand-off": ({ p1, floor, io }) =>
    `Median ${fmt(p1.total.p50)} ms. Split (medians): ${fmt(p1.wake.p50)} ms from the release call until the woken ` +
    `waiter's acquire starts, of which the release call itself takes ${fmt(p1.releaseCall.p50)} ms (the decision, ` +
    `then the turn event, about ${fmt(io.sendEventMs)} ms as timed from a Worker; the woken waiter's status check, ` +
    `about ${fmt(io.statusMs)} ms, runs HAND_ON_CHECK_DELAY_MS after the reply); then ${fmt(p1.grantToStep.p50)} ms from that acquire to the ` +
    `next step. The Workflow engine's floor for the same path without Baton (an event to a parked instance, a step ` +
    `making one Coordinator call, the next step) is ${fmt(floor.total.p50)} ms here: the engine's event delivery ` +
    `and step persistence make most of the hand-off; what Baton adds beyond that floor (the difference of the ` +
    `medians) is ${fmt(p1.total.p50 - floor.total.p50)} ms. What would fix it: check the build first (a ` +
    `wasm-opt -Oz module measured about 4 ms slower per hand-off than -O2); to go below the engine's floor, let the turn event ` +
    `carry the grant so the woken waiter need not spend a step on acquire before its body. That is a contract ` +
    `change: an event re-sent to a waiter that then went on without it stays buffered and would satisfy its next ` +
    `wait of the same type, so each wait needs an event type of its own that the waiter names to the Coordinator ` +
    `(the turn event's type is one per deployment today, TURN_EVENT_TYPE). Miniflare's engine is not production's: the same split on Cloudflare ` +
    `would say which part dominates there.`,
  "P2 baseline": ({ p2push, p2base }) =>
    `The baseline mean is ${fmt(p2base.total.mean)} ms (a release at a uniformly random moment waits half the ` +
    `30 s poll on average); the push mean is ${fmt(p2push.total.mean)} ms (median ${fmt(p2push.total.p50)} ms, ` +
    `p99 ${fmt(p2push.total.p99)} ms): the mean is pulled up by its tail. What would fix it: the push hand-off's ` +
    `own costs, as in the row above.`,
  "P2 push": ({ p2push, io }) =>
    `Median ${fmt(p2push.total.p50)} ms. Split (medians): the serialRelease call takes ${fmt(p2push.releaseCall.p50)} ms ` +
    `(one D1 batch: RELEASE, read the waiters; then the turn event; the waiter's status check runs ` +
    `HAND_ON_CHECK_DELAY_MS after the reply), the waiter's claim starts ` +
    `${fmt(p2push.wake.p50)} ms after the release call, and the claim to the next step takes ` +
    `${fmt(p2push.grantToStep.p50)} ms (one D1 batch of two statements: the stale-holder rule, then the claim, which returns the caller's and the holder's rows). Here a D1 statement ` +
    `costs ${fmt(io.statementMs)} ms and a status check ${fmt(io.statusMs)} ms. Compare the plain JS Worker's split ` +
    `in P2's section: what is left is per call (\`node bench/subset.mjs serial-calls\`): Baton's claim batch runs ` +
    `two statements, as the hand-written one does (Baton's first is the stale-holder rule, its claim returns ` +
    `the rows the hand-written one reads back), and each call crosses into WASM, where (under the profiler) the decision log line, the futures executor and ` +
    `wasm-bindgen's glue are the largest parts (the profile section). The two hand-offs take the same steps, so matching the hand-written queue is the ` +
    `most these can give; beating it by a margin needs a step fewer, e.g. the release handing the group to the ` +
    `waiter and the turn event saying so, so that serialize skips its claim step (a contract change).`,
  "P3 Baton": ({ p3 }) =>
    `Median ${fmt(p3.ratio.p50)}× (Baton ${fmt(p3.oneKey.p50)} pairs/s, the plain JavaScript Durable Object ` +
    `${fmt(p3.baseline.p50)}); against the same baseline in a Worker of its own, reached as Baton is, ` +
    `${fmt(p3.remoteRatio.p50)}×. Both do the same storage work per pair or less (Baton ${fmt(p3.pairReads)} reads and ` +
    `${fmt(p3.pairWrites)} writes, the baseline ${fmt(p3.baselineReads)} and ${fmt(p3.baselineWrites)}). Where the ` +
    `rest goes, and what would fix it, is the profile section below.`,
  "P4 enqueue": ({ p4 }) =>
    `Ratio ${fmt(p4.ratio)}. Per call, ${P4_LARGE} over ${P4_SMALL} waiters: enqueue ${fmt(p4.opRatios.enqueueMs)}×, ` +
    `acquire ${fmt(p4.opRatios.acquireMs)}×, release ${fmt(p4.opRatios.releaseMs)}×. The call whose ratio stands ` +
    `out runs a statement whose cost grows with the queue: look for a scan (COUNT, ORDER BY without a covering ` +
    `index) in its decision in src/coordinator/sql_store.rs, and keep a counter or an index instead.`,
  "P5 uncontended": ({ p3 }) =>
    `${fmt(p3.pairWrites)} writes per pair: an uncontended acquire should write only the holder and its release ` +
    `only clear it; count the statements per decision in src/coordinator/sql_store.rs to find the extra one.`,
  "R2 append+events": ({ r2 }) =>
    `Ratio ${fmt(r2.ratio)}: append ${fmt(r2.appendRatio)}×, events ${fmt(r2.eventsRatio)}×. The call whose ratio ` +
    `stands out runs a statement whose cost grows with the log: check src/runs/sql_store.rs's query plans ` +
    `(tests/runs_sql.rs prints SQLite's step counts with 10 and 500 kept).`,
  "P6 built": ({ sizes }) =>
    `${fmt(sizes.built.gzip / KIB)} KiB gzipped as built, ${fmt(sizes.optimized.gzip / KIB)} KiB after wasm-opt -Oz: ` +
    `run wasm-opt in the build (WASM_OPT_BIN to node_modules/.bin/wasm-opt) and look for large dependencies ` +
    `with twiggy.`,
  "L1 rate": ({ rate }) => explainRate(rate),
  "L3 acquire": ({ rateCost }) => explainRateCost(rateCost),
  "P6 -Oz": ({ sizes }) =>
    `${fmt(sizes.optimized.gzip / KIB)} KiB gzipped after wasm-opt -Oz: look for large dependencies with twiggy ` +
    `(serde_json's formatting, panics with messages, workers-rs features that are not used).`,
};

/** `{ id, name, text }` for every figure with `met === false`. */
export function explainMisses(results, figures) {
  return figures
    .filter((f) => f.met === false)
    .map((f) => {
      const key = Object.keys(EXPLAIN).find((k) => {
        const [id, word] = k.split(" ");
        return id === f.id && f.name.includes(word);
      });
      const text = key ? EXPLAIN[key](results) : "No split recorded for this figure.";
      return { id: f.id, name: f.name, text };
    });
}
