// Issues 29 and 38: the hot calls against the engine's floors
// (bench/floors.mjs, bench/wasm-floor), in one Miniflare, rounds
// alternating: an uncontended acquire+release pair (P3), an enqueue behind
// 10 waiters, and a rate acquire on one bucket, each on Baton, the durable
// floor (one SQL write per call, in JS), the WASM floor (the same write from
// a workers-rs object), the RPC floor (no storage) and, where one exists, the
// plain JavaScript Durable Object. The pairs are asked as withKey asks them
// (`acquire(key, id, { grant: true })`, then `release(key, id)`); Baton's
// pair without options, the call §1 documents first, is a target of its own,
// and so is a section as a class declared with `coordinated()` (§3a) makes
// its calls (bench/worker.mjs's sections: its registration, acquire, release).
import { queueOf, WITH_KEY_OPTIONS } from "./calls.mjs";
import { OPEN_RULES } from "./rate.mjs";
import { fmt, spread, summary } from "./stats.mjs";

/** Rounds; in each every target runs each kind once, the order rotating. BENCH_FLOOR_ROUNDS overrides it (a quick check). */
export const FLOOR_ROUNDS = Number(process.env.BENCH_FLOOR_ROUNDS ?? 11);
/** Per round and target: pairs on one key, enqueues behind the queue, rate acquires. */
export const FLOOR_PAIRS = 200;
export const FLOOR_ENQUEUES = 25;
export const FLOOR_RATE_CALLS = 300;
/** Waiters every enqueue batch starts behind. */
export const FLOOR_QUEUE = 10;

/**
 * Who runs each kind, by name: the binding and the acquire's options
 * (pairs), the binding (enqueues) or the rate target (bench/worker.mjs's
 * RATE_TARGETS). `bare` is Baton's pair without options; `declared` a
 * section of a class declared with `coordinated()` and DECLARED (its
 * registration's enqueue, its acquire and release). The plain JS
 * baselines are the ones in a Worker of their own, reached as Baton and
 * the floors are (the plain Coordinator ignores the options); it has no
 * enqueue, nor has the WASM floor.
 */
const PAIRS = {
  baton: ["COORDINATOR", WITH_KEY_OPTIONS],
  bare: ["COORDINATOR", undefined],
  declared: ["COORDINATOR", undefined],
  wasm: ["WASM_FLOOR", WITH_KEY_OPTIONS],
  durable: ["DURABLE_FLOOR", WITH_KEY_OPTIONS],
  rpc: ["RPC_FLOOR", WITH_KEY_OPTIONS],
  plain: ["PLAIN_REMOTE", WITH_KEY_OPTIONS],
};
/**
 * The declaration of the `declared` sections: the contract's example of
 * §3a without `also` and `rateLimit` (each a key or limiter of its own).
 * Without `supersede` the wrapper's calls are withKey's, the `baton` row.
 */
export const DECLARED = { supersede: "cancel" };
const ENQUEUES = { baton: "COORDINATOR", durable: "DURABLE_FLOOR", rpc: "RPC_FLOOR" };
const RATES = { baton: "baton", wasm: "wasmFloor", durable: "durableFloor", rpc: "rpcFloor", plain: "js" };

/** `names` in the order of round `round`: each goes first in turn. */
const rotated = (names, round) => names.map((_, i) => names[(i + round) % names.length]);

/** Per-call ms of each target for each kind, round by round, and Baton's ratios to the durable floor. */
export async function floorRatios(b) {
  const run = await floorRun(b);
  for (let round = 0; round < FLOOR_ROUNDS; round++) await run.round(round);
  return run.result();
}

/**
 * The rounds of [`floorRatios`], one at a time: `round(i)` runs round `i`,
 * `result()` sums up the rounds run. bench/opt-levels.mjs interleaves the
 * rounds of several Miniflares (one per build) this way.
 */
export async function floorRun(b) {
  const baton = await queueOf(b, "floor-enqueue", FLOOR_QUEUE);
  for (const binding of ["DURABLE_FLOOR", "RPC_FLOOR"]) {
    for (let i = 0; i < FLOOR_QUEUE; i++) {
      await b.call("/rpc", { key: "floor-enqueue", method: "enqueue", args: ["floor-enqueue", false, `fq-${i}`], binding });
    }
  }
  const pairs = (name, count) => {
    const [binding, options] = PAIRS[name];
    if (name === "declared") {
      return b.call("/bench/sections", { key: `floor-pairs-${name}`, sections: count, binding, declared: DECLARED });
    }
    return b.call("/bench/pairs", { keys: [`floor-pairs-${name}`], pairs: count, binding, options });
  };
  const enqueues = (binding, prefix, count) =>
    b.call("/bench/enqueues", { key: "floor-enqueue", binding, prefix, count, keep: FLOOR_QUEUE });
  const rate = (target, calls) =>
    b.call("/bench/rate-acquires", { target, bucket: `floor-rate-${target}`, rules: OPEN_RULES, calls });
  // Warm-up: every object and table made, untimed.
  for (const name of Object.keys(PAIRS)) await pairs(name, 10);
  for (const binding of Object.values(ENQUEUES)) await enqueues(binding, `warm-${binding}-`, 5);
  for (const target of Object.values(RATES)) await rate(target, 20);

  const ms = { pairs: {}, enqueue: {}, rate: {} };
  /** A declared section's calls, ms each, round by round. */
  const sectionCalls = {};
  for (const kind of Object.keys(ms)) for (const name of Object.keys(PAIRS)) ms[kind][name] = [];
  const round = async (round) => {
    for (const name of rotated(Object.keys(PAIRS), round)) {
      const p = await pairs(name, FLOOR_PAIRS);
      if (p.notGranted) throw new Error(`floors: ${p.notGranted} uncontended acquires on ${name} not granted`);
      ms.pairs[name].push(p.elapsedMs / p.pairs);
      if (p.callMs) for (const [call, t] of Object.entries(p.callMs)) (sectionCalls[call] ??= []).push(t / p.pairs);
    }
    for (const name of rotated(Object.keys(ENQUEUES), round)) {
      const e = await enqueues(ENQUEUES[name], `floor-${name}-r${round}-`, FLOOR_ENQUEUES);
      ms.enqueue[name].push(e.elapsedMs / e.calls);
    }
    for (const name of rotated(Object.keys(RATES), round)) {
      const r = await rate(RATES[name], FLOOR_RATE_CALLS);
      if (r.granted !== r.calls) throw new Error(`floors: ${r.calls - r.granted} open rate acquires on ${name} refused`);
      ms.rate[name].push(Math.max(1, r.elapsedMs) / r.calls);
    }
  };
  // Ratios per round, so that each compares runs taken side by side:
  // throughput ratios for pairs and rate (the floor's time over Baton's,
  // `who`'s), a time ratio for enqueue (Baton's over the floor's).
  const perRound = (kind, over, floor = "durable", who = "baton") =>
    ms[kind][who].map((t, i) => (over ? t / ms[kind][floor][i] : ms[kind][floor][i] / t));
  const ofKind = (kind) => Object.fromEntries(Object.entries(ms[kind]).filter(([, v]) => v.length).map(([n, v]) => [n, summary(v)]));
  const result = () => ({
    ms: { pairs: ofKind("pairs"), enqueue: ofKind("enqueue"), rate: ofKind("rate") },
    ratio: { pairs: summary(perRound("pairs", false)), enqueue: summary(perRound("enqueue", true)), rate: summary(perRound("rate", false)) },
    /** Issue 38: against the WASM floor, the old shape against the durable floor, and the WASM floor's own ratio to it. */
    wasmRatio: { pairs: summary(perRound("pairs", false, "wasm")), rate: summary(perRound("rate", false, "wasm")) },
    bareRatio: summary(perRound("pairs", false, "durable", "bare")),
    /** A declared class's section (§3a) against the floors' pair, and against withKey's pair. */
    declaredRatio: {
      wasm: summary(perRound("pairs", false, "wasm", "declared")),
      durable: summary(perRound("pairs", false, "durable", "declared")),
      withKey: summary(perRound("pairs", false, "baton", "declared")),
      calls: Object.fromEntries(Object.entries(sectionCalls).map(([call, t]) => [call, summary(t)])),
    },
    wasmFloorRatio: {
      pairs: summary(perRound("pairs", false, "durable", "wasm")),
      rate: summary(perRound("rate", false, "durable", "wasm")),
    },
    /** Baton's ratio to the plain JS objects, per round (throughput). */
    plainRatio: {
      pairs: summary(ms.pairs.baton.map((t, i) => ms.pairs.plain[i] / t)),
      rate: summary(ms.rate.baton.map((t, i) => ms.rate.plain[i] / t)),
    },
    holder: baton.holder,
  });
  return { round, result };
}

/** Calls per second from a per-call time in ms. */
const perSecond = (msPerCall) => 1000 / msPerCall;

/** The rows of the figures table. */
export function figures(f, target) {
  const rate = (kind, name) => fmt(perSecond(f.ms[kind][name].p50));
  const spreadOf = (r) => `ratio min ${fmt(r.min)}, max ${fmt(r.max)}, ${r.n} rounds`;
  const pairRates =
    `Baton ${rate("pairs", "baton")}, WASM floor ${rate("pairs", "wasm")}, durable floor ${rate("pairs", "durable")}, ` +
    `RPC floor ${rate("pairs", "rpc")}, plain JS ${rate("pairs", "plain")} pairs/s`;
  return [
    {
      id: "P3",
      name: "uncontended pairs/s as withKey calls them ({ grant: true }), Baton / the WASM floor (one key, same run)",
      measured: `${fmt(f.wasmRatio.pairs.p50)}× (${pairRates}; ${spreadOf(f.wasmRatio.pairs)})`,
      target: `≥ ${fmt(target.p3WasmFloorRatioMin)}×`,
      met: f.wasmRatio.pairs.p50 >= target.p3WasmFloorRatioMin,
      used: target.p3WasmFloorRatioMin / f.wasmRatio.pairs.p50,
    },
    {
      id: "P3",
      name: "uncontended pairs/s as withKey calls them ({ grant: true }), Baton / the JS durable floor, the WASM floor's own ratio beside it",
      measured:
        `${fmt(f.ratio.pairs.p50)}× (${spreadOf(f.ratio.pairs)}); the WASM floor / the JS durable floor ` +
        `${fmt(f.wasmFloorRatio.pairs.p50)}× (${spreadOf(f.wasmFloorRatio.pairs)})`,
      target: "",
    },
    {
      id: "P3",
      name: "uncontended pairs/s without options (acquire(key, id)), Baton / the JS durable floor (same run)",
      measured: `${fmt(f.bareRatio.p50)}× (Baton ${rate("pairs", "bare")} pairs/s; ${spreadOf(f.bareRatio)})`,
      target: `≥ ${fmt(target.p3FloorRatioMin)}×`,
      met: f.bareRatio.p50 >= target.p3FloorRatioMin,
      used: target.p3FloorRatioMin / f.bareRatio.p50,
    },
    {
      id: "P3",
      name:
        'uncontended sections/s of a class declared with coordinated() (§3a, supersede: "cancel"), ' +
        "its calls as the wrapper makes them (enqueue to register, acquire, release; no Workflow steps), " +
        "Baton / the WASM floor's pairs/s (same run)",
      measured:
        `${fmt(f.declaredRatio.wasm.p50)}× (Baton ${rate("pairs", "declared")} sections/s; ${spreadOf(f.declaredRatio.wasm)}); ` +
        `/ the JS durable floor ${fmt(f.declaredRatio.durable.p50)}×; / withKey's pairs (the row above) ` +
        `${fmt(f.declaredRatio.withKey.p50)}×`,
      target: "",
    },
    {
      id: "ENQ",
      name: `enqueue behind ${FLOOR_QUEUE} waiters, Baton / the durable floor (per call, same run)`,
      measured:
        `${fmt(f.ratio.enqueue.p50)}× (Baton ${fmt(f.ms.enqueue.baton.p50)} ms, durable floor ` +
        `${fmt(f.ms.enqueue.durable.p50)} ms, RPC floor ${fmt(f.ms.enqueue.rpc.p50)} ms; ${spreadOf(f.ratio.enqueue)})`,
      target: `≤ ${fmt(target.enqueueFloorRatioMax)}×`,
      met: f.ratio.enqueue.p50 <= target.enqueueFloorRatioMax,
      used: f.ratio.enqueue.p50 / target.enqueueFloorRatioMax,
    },
    {
      id: "L1",
      name: "rate acquire calls/s on one bucket (all granted), Baton / the WASM floor (same run)",
      measured:
        `${fmt(f.wasmRatio.rate.p50)}× (Baton ${rate("rate", "baton")}, WASM floor ${rate("rate", "wasm")}, ` +
        `durable floor ${rate("rate", "durable")}, RPC floor ${rate("rate", "rpc")}, plain JS exact ` +
        `${rate("rate", "plain")} calls/s; ${spreadOf(f.wasmRatio.rate)})`,
      target: `≥ ${fmt(target.rateWasmFloorRatioMin)}×`,
      met: f.wasmRatio.rate.p50 >= target.rateWasmFloorRatioMin,
      used: target.rateWasmFloorRatioMin / f.wasmRatio.rate.p50,
    },
    {
      id: "L1",
      name: "rate acquire calls/s on one bucket (all granted), Baton / the JS durable floor, the WASM floor's own ratio beside it",
      measured:
        `${fmt(f.ratio.rate.p50)}× (${spreadOf(f.ratio.rate)}); the WASM floor / the JS durable floor ` +
        `${fmt(f.wasmFloorRatio.rate.p50)}× (${spreadOf(f.wasmFloorRatio.rate)})`,
      target: "",
    },
  ];
}

/** The method and every spread, for docs/benchmarks.md. */
export function section(f) {
  const row = (kind, name, unit) => {
    const s = f.ms[kind][name];
    if (!s) return "—";
    return unit === "ms" ? spread(s) : `median ${fmt(perSecond(s.p50))} ${unit} (${spread(s)} per call)`;
  };
  const names = {
    baton: "Baton { grant: true }",
    bare: "Baton, no options",
    declared: "Baton, a declared class's section",
    wasm: "WASM floor",
    durable: "durable floor",
    rpc: "RPC floor",
    plain: "plain JS",
  };
  return {
    title: "The floors (issues 29 and 38)",
    text: [
      "Three Durable Objects, each in a Worker beside Baton's (two in bench/floors.mjs, one in bench/wasm-floor), reached from the bench Worker as Baton's " +
        "objects are. The **RPC floor** answers every call with a constant reply of the right shape and touches no " +
        "storage. The **durable floor** does the least a lock that survives a restart can do: one SQL write per " +
        "call (acquire inserts the holder, release deletes it, enqueue inserts a waiter, a rate acquire inserts its " +
        "grant), then the same constant reply; like Baton's, each write waits for its commit before the reply " +
        "leaves. The **WASM floor** (issue 38, bench/wasm-floor) is the floor of Baton's own language: a " +
        "Durable Object whose methods are Rust, built by `npm run bench` with Baton's workers-rs, wasm-bindgen, " +
        "worker-build, release profile and wasm-opt level, and wrapped in a JS `DurableObject` class as Baton's " +
        "are; each call decodes its key and id (or bucket) into Rust strings, runs the durable floor's same one " +
        "write (binding the JS strings the call brought) and replies with the same value. Baton over the WASM " +
        "floor is Baton's own work; the WASM floor over the durable floor is the crossing into WASM. The plain " +
        "JS objects are bench/plain-coordinator.mjs and bench/rate-baselines.mjs's exact limiter, in a Worker " +
        "of their own.",
      "",
      `${FLOOR_ROUNDS} rounds after a warm-up; in each, every target runs ${FLOOR_PAIRS} uncontended ` +
        "acquire+release pairs on one key, each acquire asked as withKey asks it (`acquire(key, id, { grant: " +
        "true })`, answered with the grant object; withKey's other options are only passed when set) and " +
        "Baton's also without options (its own object, the reply `\"granted\"`), then " +
        `${FLOOR_ENQUEUES} enqueues of new ids behind ${FLOOR_QUEUE} ` +
        `waiters (Baton's key held by a live instance; the batch's waiters leave, untimed, after it), then ` +
        `${FLOOR_RATE_CALLS} rate acquires on one bucket under two open rules (every call granted, so each ` +
        `inserts its grant), each loop timed as a whole inside the bench Worker; who goes first rotates. The ` +
        "ratios are per round (runs side by side), their median and spread.",
      "",
      "| per call | " + Object.values(names).join(" | ") + " |",
      "|---|" + Object.keys(names).map(() => "---|").join(""),
      `| pair (ms) | ${Object.keys(names).map((n) => row("pairs", n, "ms")).join(" | ")} |`,
      `| enqueue (ms) | ${Object.keys(names).map((n) => row("enqueue", n, "ms")).join(" | ")} |`,
      `| rate acquire (ms) | ${Object.keys(names).map((n) => row("rate", n, "ms")).join(" | ")} |`,
      "",
      `- Baton { grant: true } / WASM floor, pairs/s: ${spread(f.wasmRatio.pairs, "×")}`,
      `- Baton { grant: true } / durable floor, pairs/s: ${spread(f.ratio.pairs, "×")}`,
      `- Baton without options / durable floor, pairs/s: ${spread(f.bareRatio, "×")}`,
      `- A declared class's section (coordinated(), ${JSON.stringify(DECLARED)}: enqueue, acquire, release, each ` +
        `made as js/coordinated.mjs makes them, one stub for the loop as for the pairs) / WASM floor's pair, per ` +
        `second: ${spread(f.declaredRatio.wasm, "×")}; / durable floor's pair: ${spread(f.declaredRatio.durable, "×")}; ` +
        `/ Baton { grant: true }'s pair: ${spread(f.declaredRatio.withKey, "×")}. Its calls: ` +
        Object.entries(f.declaredRatio.calls)
          .map(([call, s]) => `${call} ${spread(s)}`)
          .join("; ") +
        ". Without `supersede` a declared class makes withKey's calls (the Baton { grant: true } column). With it, " +
        "the instance registers before it acquires, so its key has a waiter for a moment: the registration and " +
        "the acquire each change whether anyone waits, and each owes the list of busy keys a report (§10: the " +
        "key's row read for it, the alarm set in case it is lost, the report sent to its shard after the " +
        "reply), which a withKey pair on a key nobody waits on never owes.",
      `- WASM floor / durable floor, pairs/s: ${spread(f.wasmFloorRatio.pairs, "×")}; rate calls/s: ${spread(f.wasmFloorRatio.rate, "×")}`,
      `- Baton / WASM floor, rate calls/s: ${spread(f.wasmRatio.rate, "×")}`,
      `- Baton / durable floor, enqueue time: ${spread(f.ratio.enqueue, "×")}`,
      `- Baton / durable floor, rate calls/s: ${spread(f.ratio.rate, "×")}`,
      `- Baton / plain JS, pairs/s: ${spread(f.plainRatio.pairs, "×")}; rate calls/s: ${spread(f.plainRatio.rate, "×")}`,
    ].join("\n"),
  };
}

/** One line per kind, for bench/subset.mjs. */
export function print(f) {
  for (const kind of ["pairs", "enqueue", "rate"]) {
    const r = f.ratio[kind];
    const each = Object.entries(f.ms[kind]).map(([n, s]) => `${n} ${fmt(s.p50 * 1000)} µs`).join(", ");
    console.log(`${kind}: Baton/durable floor ${fmt(r.p50, 2)}x (min ${fmt(r.min, 2)}, max ${fmt(r.max, 2)}); per call ${each}`);
  }
  const x = (s) => `${fmt(s.p50, 2)}x (min ${fmt(s.min, 2)}, max ${fmt(s.max, 2)})`;
  console.log(`pairs { grant: true }: Baton/WASM floor ${x(f.wasmRatio.pairs)}; without options Baton/durable floor ${x(f.bareRatio)}`);
  console.log(
    `declared section (§3a): /WASM floor pair ${x(f.declaredRatio.wasm)}, /durable floor pair ${x(f.declaredRatio.durable)}, ` +
      `/withKey pair ${x(f.declaredRatio.withKey)}; calls ` +
      Object.entries(f.declaredRatio.calls)
        .map(([call, s]) => `${call} ${fmt(s.p50 * 1000)} µs`)
        .join(", "),
  );
  console.log(`WASM floor/durable floor: pairs ${x(f.wasmFloorRatio.pairs)}, rate ${x(f.wasmFloorRatio.rate)}`);
  console.log(`rate: Baton/WASM floor ${x(f.wasmRatio.rate)}`);
}
