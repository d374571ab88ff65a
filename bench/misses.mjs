// For every missed target: the measured reason (where the time or the work
// goes, from the splits the bench takes) and what would fix it.
import { fmt } from "./stats.mjs";
import { P4_LARGE, P4_SMALL } from "./calls.mjs";
import { explainRate, explainRateCost } from "./rate.mjs";

const KIB = 1024;

/** Text per figure, keyed by id and a word of its name. */
const EXPLAIN = {
  // Issue 38's rows against the WASM floor (bench/wasm-floor) and P1 as throughput.
  "P3 WASM": ({ atFloor: f }) =>
    `Median ${fmt(f.wasmRatio.pairs.p50)}× (per call: Baton ${fmt(f.ms.pairs.baton.p50 * 500)} µs, the WASM floor ` +
    `${fmt(f.ms.pairs.wasm.p50 * 500)} µs, the JS durable floor ${fmt(f.ms.pairs.durable.p50 * 500)} µs; the WASM ` +
    `floor's own ratio to the JS one ${fmt(f.wasmFloorRatio.pairs.p50)}×). Both cross into WASM alike (worker-build's ` +
    `shim, a JS \`DurableObject\` class handing the arguments to a Rust core) and run one statement a call, whose ` +
    `cost replayed from JS is the floor's (1.01–1.06×, the profile section). Since issue 38 withKey's acquire ` +
    `(\`{ grant: true }\`) takes the path the call without options took: its key and id are read once, each with ` +
    `one question into JS, with no request object built and read back field by field, and every statement binds ` +
    `them as the JS strings the call brought; and the decision works on the kept summary without copying it: ` +
    `the driver's load takes it out of its map, the core's decision moves it into its draft and out in the ` +
    `transition, and the memory takes it back when no effect reads it (both copies were made on every call ` +
    `before). What is left is Baton's decision around the statement: the draft's other parts (the caller's ` +
    `place, the loaded front), the writes made \`SqlValue\`s (each text binding a Rust \`String\`), the ` +
    `invariants' check, and the reply built as a Rust value and converted (\`serde_wasm_bindgen\`); and the ` +
    `release's trigger, which the floor's delete does not have. Closing it needs the reply written straight ` +
    `into a JS object and the writes bound without a Rust copy of each text.`,
  "L1 WASM": ({ atFloor: f }) =>
    `Median ${fmt(f.wasmRatio.rate.p50)}× (Baton ${fmt(1000 / f.ms.rate.baton.p50)}, the WASM floor ` +
    `${fmt(1000 / f.ms.rate.wasm.p50)}, the JS durable floor ${fmt(1000 / f.ms.rate.durable.p50)} calls/s; the WASM ` +
    `floor's own ratio to the JS one ${fmt(f.wasmFloorRatio.rate.p50)}×). Both run one insert a call; the floor reads ` +
    `\`permits\` alone, Baton decodes and checks the whole request. Since issue 38 the rules cross once: one JSON ` +
    `text made in JS (\`JSON.stringify\` with a replacer that lets only plain data through) and parsed in WASM, ` +
    `where they were read value by value, each field a call into JS (13% of the isolate's busy time under the ` +
    `profiler before). What is left: the text's parse and the typed decode of the rules, their comparison with the ` +
    `bucket's stored rules, the decision on the cached bucket, the insert's bindings and the reply converted by ` +
    `\`serde_wasm_bindgen\`. Closing it needs the decoded rules kept beside the bucket's (a call with the same text ` +
    `skips the parse and the check) and the reply written straight into a JS object.`,
  "P1 chain": ({ p1chain: c, p1 }) =>
    `Median ${fmt(c.ratio.p50)}× (Baton ${fmt(c.baton.p50)}, the plain JS Durable Object ${fmt(c.plain.p50)} ` +
    `hand-offs/s). Each hand-off is the holder's release step, the engine's delivery of the turn event and the next ` +
    `instance's step; Baton's woken waiter has its grant in the event, the plain one spends a step acquiring ` +
    `again. In P1's chains the release call took ${fmt(p1.releaseCall.p50)} ms against the plain one's ` +
    `${fmt(p1.plain.releaseCall.p50)} ms: before its reply Baton's decision runs 8 statements against the plain one's 4, ` +
    `and the call waits for the turn event's send. What would cut them is in the P1 ` +
    `section ("The release's statements").`,
  // Issue 29's rows against the floors (bench/floor-ratios.mjs); the split
  // they cite is the profile section (bench/profile-split.json).
  "P3 durable": ({ atFloor: f }) =>
    `Median ${fmt(f.bareRatio.p50)}× (per call: Baton without options ${fmt(f.ms.pairs.bare.p50 * 500)} µs, the ` +
    `durable floor ${fmt(f.ms.pairs.durable.p50 * 500)} µs, the WASM floor ${fmt(f.ms.pairs.wasm.p50 * 500)} µs, the ` +
    `RPC floor ${fmt(f.ms.pairs.rpc.p50 * 500)} µs). Both run one statement per call, and since Coordinator schema ` +
    `v12 Baton's cost what the floor's do: the acquire inserts its holder row and nothing else, and the release ` +
    `stamps the row's end, whose trigger writes the key row once (fence, grant, hold time) and deletes the row ` +
    `(replayed from JS in workerd without Baton, 1.01–1.06× the floor's write). Of what is left, the WASM ` +
    `floor's own ratio to this floor (${fmt(f.wasmFloorRatio.pairs.p50)}×) is the crossing into WASM and back, ` +
    `which any workers-rs object pays; the rest is Baton's own work, the WASM floor's row's "what is left".`,
  "ENQ enqueue": ({ atFloor: f }) =>
    `Median ${fmt(f.ratio.enqueue.p50)}× (Baton ${fmt(f.ms.enqueue.baton.p50)} ms, the durable floor ` +
    `${fmt(f.ms.enqueue.durable.p50)} ms per enqueue; 7.54× before issue 29's changes). The enqueue decides in ` +
    `the caller's turn, asks for the alarm only until it knows it is set, and reports a listed key's changed ` +
    `counts at most every \`LIST_REPORT_SPACING_MS\` (250 ms). Schemas v12 and v13 took the key's waiting ` +
    `count into the waiter row's trigger (one statement fewer), left a waiter without an input hash out of the ` +
    `hash index, and stopped rewriting the tenant's turn index on every arrival: its statements replayed in ` +
    `workerd went from 2.0× the floor's write to 1.67–1.8× (400 against 200 µs before, 360 against 200 and 400 ` +
    `against 240 in two runs after). The insert wrote five B-tree entries against the floor's two (the waiter ` +
    `row, its place in arrival order, its place in its tenant's queue, its tenant's row, the key row). Since ` +
    `schema v18 (issue 38), while a key's waiters are all of one priority and tenant, as this row's are, they ` +
    `are kept in arrival order alone, which is then §1c's order: the insert writes the waiter row, its place in ` +
    `arrival order and the key's count (workerd's \`rowsWritten\` 3 per insert, the floor's 2), and a key's ` +
    `first waiter of a second priority or tenant moves its waiters to the layout with tenants' turns once, none ` +
    `changing place. Every trigger on a table is compiled into each insert on it, so a shared waiter joins ` +
    `through a view whose own trigger counts its tenant's turn, and a sole insert runs the key's count alone. ` +
    `The order is stated once (\`coordinator/order.rs\`); \`coordinator/layout.rs\` picks the ` +
    `layout each read and join uses, and the Coordinator simulation judges both layouts against its own oracle. ` +
    `What is left is the enqueue's two statements (the member read; the waiter's insert) and the third entry, ` +
    `the key's waiting count, which the key's summary is read from.`,
  "L1 durable": ({ atFloor: f }) =>
    `Median ${fmt(f.ratio.rate.p50)}× (Baton ${fmt(1000 / f.ms.rate.baton.p50)}, the durable floor ` +
    `${fmt(1000 / f.ms.rate.durable.p50)}, the RPC floor ${fmt(1000 / f.ms.rate.rpc.p50)} calls/s). A granted acquire ` +
    `runs one insert, as the floor does; here the bucket is younger than its minute window, so no call reads. A ` +
    `bucket older than its longest window read the last grant before the window's start on every call (15% of ` +
    `the isolate's busy time under \`node bench/profile.mjs rate open\`); the cache now keeps that row and the ` +
    `one after it, and reads again only when the start passes a grant (2,820 → 3,654–3,822 calls/s there, two ` +
    `alternating runs each). What is left is the call's decode (the rules, an array of objects, read field by ` +
    `field into WASM: 13% of the isolate's busy time), the decision and the reply. Closing it needs the ` +
    `arguments to cross once (one JSON text made in JS and parsed in WASM, the same rules for what is JSON ` +
    `data) rather than a call into JS per field.`,
  "LIST page": ({ list, env }) =>
    `Ratio ${fmt(list.ratio)} (${fmt(list.large.p50)} ms / ${fmt(list.small.p50)} ms per page) at a machine load of ` +
    `${env.load}; 1.14 on a quieter machine (the 14:46 run, before issue 29's changes, which touch no list code). ` +
    `Not split further here: rerun it alone, \`node bench/subset.mjs list\`, on a quiet machine before reading ` +
    `it as a regression.`,
  "P6 once": ({ cold }) =>
    `Median ${fmt(cold.built.firstResponseMs.p50)} ms from ready to the first response (the Worker's first request: ` +
    `instantiating the WASM, a new object, its schema). A new object creates its schema in one step rather than ` +
    `climbing every version (18.0 ms against 22.8 for the build before, seven alternating cold starts each); ` +
    `the machine's load (the environment line) moves this figure more than the module does.`,
  "P1 plain": ({ p1 }) =>
    `Baton ${fmt(p1.total.p50)} ms against the plain JS Durable Object's ${fmt(p1.plain.total.p50)} ms ` +
    `(${fmt(p1.total.p50 / p1.plain.total.p50)}×). Baton's hand-off is a step shorter: the turn event carries the ` +
    `grant (§1b), so the woken waiter's next step is its body (${fmt(p1.grantToStep.p50)} ms from the event to it), ` +
    `where the plain waiter spends a step acquiring again (${fmt(p1.plain.grantToStep.p50)} ms). What is left is ` +
    `the release call (${fmt(p1.releaseCall.p50)} ms against ${fmt(p1.plain.releaseCall.p50)} ms) and the engine's ` +
    `delivery of the event (${fmt(p1.wake.p50)} ms against ${fmt(p1.plain.wake.p50)} ms from the release to the ` +
    `next step's start or the acquire's). Locally the engine's own event-to-step time dominates both and is the same ` +
    `for both, so 0.85× needs the release itself to cost less than the plain one's. Since issue 29's changes the ` +
    `release waits for one commit and the event send (the acceptance is recorded after the reply) and sends no ` +
    `list report for a change of counts; sending the event after the reply too was measured and is worse here ` +
    `(the releasing instance's step then competes with the event's delivery on the engine's thread). What is ` +
    `left: the release's 8 statements before its reply against the plain one's 4, and its two decision lines. Miniflare's ` +
    `engine is not production's, where a step costs more and the saved step weighs more.`,
  "P1 floor": ({ p1, floor }) =>
    `Baton ${fmt(p1.total.p50)} ms, the engine's floor for an event, one step making one Coordinator call, and the ` +
    `next step ${fmt(floor.total.p50)} ms. With the grant in the event the woken waiter makes no call, so the floor ` +
    `it has to beat is the engine's event delivery alone; the release call (${fmt(p1.releaseCall.p50)} ms) is what ` +
    `Baton adds before the event goes.`,
  "P1 hand-off": ({ p1, floor }) =>
    `Median ${fmt(p1.total.p50)} ms: ${fmt(p1.wake.p50)} ms from the release call until the woken waiter's next ` +
    `step starts (the release call itself ${fmt(p1.releaseCall.p50)} ms), against an engine floor of ` +
    `${fmt(floor.total.p50)} ms for an event and a step. What would fix it: a cheaper release (its decision, grant ` +
    `row and fence), since the woken waiter no longer acquires.`,
  "P2 baseline": ({ p2push, p2base }) =>
    `The baseline mean is ${fmt(p2base.total.mean)} ms (a release at a uniformly random moment waits half the ` +
    `30 s poll on average); the push mean is ${fmt(p2push.total.mean)} ms (median ${fmt(p2push.total.p50)} ms, ` +
    `p99 ${fmt(p2push.total.p99)} ms): the mean is pulled up by its tail. What would fix it: the push hand-off's ` +
    `own costs, as in the row above.`,
  "P2 push": ({ p2push, io }) =>
    `Median ${fmt(p2push.total.p50)} ms. Split (medians): the serialRelease call takes ${fmt(p2push.releaseCall.p50)} ms ` +
    `(one D1 batch: RELEASE, read the waiters; then the turn event; the waiter's status check runs ` +
    `HAND_ON_CHECK_DELAY_MS after the reply), the waiter learns it holds (its turn event saying "holding", §2a) ` +
    `${fmt(p2push.wake.p50)} ms after the release call, and from then to its next step takes ` +
    `${fmt(p2push.grantToStep.p50)} ms. Here a D1 statement ` +
    `costs ${fmt(io.statementMs)} ms and a status check ${fmt(io.statusMs)} ms. Compare the plain JS Worker's split ` +
    `in P2's section: what is left is per call (\`node bench/subset.mjs serial-calls\`): each call crosses into WASM, ` +
    `where (under the profiler) the decision log line, the futures executor and wasm-bindgen's glue are the largest ` +
    `parts (the profile section). The step fewer is taken already: since §2a the release hands the group to a grant ` +
    `waiter in its own batch and the turn event says "holding", so serialize runs no claim after its wait. What is ` +
    `left to beat the hand-written queue by a margin is the release call's own cost.`,
  "P3 BATON_LOG=all": ({ p3all }) =>
    `Median ${fmt(p3all.ratio.p50)}× (min ${fmt(p3all.ratio.min)}, max ${fmt(p3all.ratio.max)}) with both sides ` +
    `printing a line per call: Baton's line is built in WASM and printed through console.log, as the plain one's ` +
    `is from JS, so the line's cost is the same on both sides and the ratio is P3's own (the row above), ` +
    `diluted: since Coordinator schema v12 that ratio is about 1.0×, and this one's spread straddles 1.0. What ` +
    `would move both is what the durable floor's row below says is left.`,
  "P3 Baton": ({ p3 }) =>
    `Median ${fmt(p3.ratio.p50)}× (Baton ${fmt(p3.oneKey.p50)} pairs/s asked as withKey asks them, the plain JavaScript Durable Object ` +
    `${fmt(p3.baseline.p50)}); against the same baseline in a Worker of its own, reached as Baton is, ` +
    `${fmt(p3.remoteRatio.p50)}×. Both do the same storage work per pair or less (Baton ${fmt(p3.pairReads)} reads and ` +
    `${fmt(p3.pairWrites)} writes, the baseline ${fmt(p3.baselineReads)} and ${fmt(p3.baselineWrites)}). ` +
    `Since Coordinator schema v12 Baton's statements cost what the durable floor's do (its row below), and ` +
    `this ratio sits at 1.0×: 0.97–1.03× in four full runs this round (0.80× before), each run's spread ` +
    `straddling 1.0. What is left is each call's crossing into WASM and back (decode, the driver's turn, the ` +
    `reply as a JS object), which the plain object does not pay; closing it is the WASM floor's row's ` +
    `"what is left".`,
  "P4 enqueue": ({ p4 }) =>
    `Ratio ${fmt(p4.ratio)}. Per call, ${P4_LARGE} over ${P4_SMALL} waiters: enqueue ${fmt(p4.opRatios.enqueueMs)}×, ` +
    `acquire ${fmt(p4.opRatios.acquireMs)}×, release ${fmt(p4.opRatios.releaseMs)}×. The call whose ratio stands ` +
    `out runs a statement whose cost grows with the queue: look for a scan (COUNT, ORDER BY without a covering ` +
    `index) in its load or write in src/coordinator/sql.rs, and keep a counter or an index instead.`,
  "P4 tenants": ({ p4t }) =>
    `Ratio ${fmt(p4t.ratio)}. Per call, ${P4_LARGE} waiters of 100 tenants and 3 priorities over ${P4_SMALL}: ` +
    `enqueue ${fmt(p4t.opRatios.enqueueMs)}×, acquire ${fmt(p4t.opRatios.acquireMs)}×, release ` +
    `${fmt(p4t.opRatios.releaseMs)}×. tests/coordinator_order.rs counts SQLite's VM steps per call natively: if ` +
    `it stays flat, the difference is the bigger database (page cache, B-tree depth); if not, a statement ` +
    `walks a tenant's waiters or the tenants' rows (the triggers on coordinator_waiters, the front's join).`,
  "P5 uncontended": ({ p3 }) =>
    `${fmt(p3.pairWrites)} writes per pair: an uncontended acquire should write only the holder and its release ` +
    `only clear it; count the statements per decision in src/coordinator/sql.rs to find the extra one.`,
  "R2 append+events": ({ r2 }) =>
    `Ratio ${fmt(r2.ratio)}: append ${fmt(r2.appendRatio)}×, events ${fmt(r2.eventsRatio)}×. The call whose ratio ` +
    `stands out runs a statement whose cost grows with the log: check src/runs/sql_store.rs's query plans ` +
    `(tests/runs_sql.rs prints SQLite's step counts with 10 and 500 kept).`,
  "P6 deployed": ({ sizes }) =>
    `${fmt(sizes.built.gzip / KIB)} KiB gzipped as deployed (385 KiB at the stop before issue 38's last round). ` +
    `No one dependency stands out (twiggy top): the largest functions are the HTTP API's dispatch and the ` +
    `RateLimiter's decide. What grew in that round is spread: each typed call (every object's methods name their ` +
    `answer, \`transition::Call\`) instantiates the driver's decide, write and perform path for its own answer ` +
    `type; the lines' reasons carry their words as \`Display\` impls; the hot replies' encoders sit beside serde; ` +
    `schema steps 17 and 18 add their SQL. What would close it: the driver's loop made non-generic below the ` +
    `answer (the call's answer taken out through one erased slot, so the loop is compiled once), or a budget the ` +
    `cold start justifies (the cold-start row: a few KB do not move it measurably).`,
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
