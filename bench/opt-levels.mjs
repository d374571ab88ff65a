// Issue 29: the release profile's `opt-level` chosen by measurement. Each
// level's build (scripts/opt-levels.sh builds them into bench-out/opt-<level>/)
// runs in a Miniflare of its own, all at once, and their rounds of the
// floors' loops (bench/floor-ratios.mjs: pairs, enqueues behind 10, rate
// acquires, each beside the durable floor in the same Miniflare) alternate,
// so every level sees the same machine. Beside the wall times, workerd's CPU
// time per Baton call (each level's own workerd, from /proc): on a machine
// whose cores other work shares, the wall time swings with its load, the
// CPU a call costs much less. Then each level's gzipped size and cold
// starts (bench/size.mjs), alternating too. Prints one line per level.
//
//   bash scripts/opt-levels.sh z s 2 3 && node bench/opt-levels.mjs z s 2 3
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { ROOT, startBench } from "./miniflare.mjs";
import { floorRun } from "./floor-ratios.mjs";
import { WITH_KEY_OPTIONS } from "./calls.mjs";
import { coldStart } from "./size.mjs";
import { fmt, median, summary } from "./stats.mjs";
import { cpuSeconds, workerdPids } from "./cpu.mjs";

const ROUNDS = Number(process.env.OPT_ROUNDS ?? 7);
const COLD_RUNS = Number(process.env.OPT_COLD_RUNS ?? 5);
const levels = process.argv.slice(2);
if (!levels.length) throw new Error("name the levels: node bench/opt-levels.mjs z s 2 3");

const wasmOf = (level) => readFileSync(path.join(ROOT, `bench-out/opt-${level}/index_bg.wasm`));
/** Each build's JS glue, which goes with its WASM (the minifier names differ). */
const glueOf = (level) => readFileSync(path.join(ROOT, `bench-out/opt-${level}/index.js`), "utf8");

/** Baton's calls timed for CPU: per round and level, pairs, rate acquires, enqueues (each with its waiter's release). */
const CPU_CALLS = { pairs: 300, grantPairs: 300, rate: 300, enqueue: 50, reacquire: 2000, grantReacquire: 2000, refused: 2000 };
const benches = {};
const runs = {};
const pids = {};
const cpuUs = Object.fromEntries(levels.map((l) => [l, { pairs: [], grantPairs: [], rate: [], enqueue: [], reacquire: [], grantReacquire: [], refused: [] }]));
try {
  const seen = new Set();
  for (const level of levels) {
    benches[level] = await startBench({ wasm: wasmOf(level), glue: glueOf(level) });
    pids[level] = workerdPids().filter((pid) => !seen.has(pid));
    for (const pid of pids[level]) seen.add(pid);
    runs[level] = await floorRun(benches[level]);
  }
  const cpuOf = async (level, kind, call) => {
    const before = cpuSeconds(pids[level]);
    await call();
    const after = cpuSeconds(pids[level]);
    cpuUs[level][kind].push(((after.user + after.system - before.user - before.system) * 1e6) / CPU_CALLS[kind]);
  };
  const { OPEN_RULES, EXAMPLE_RULES } = await import("./rate.mjs");
  for (let round = 0; round < ROUNDS; round++) {
    const order = levels.map((_, i) => levels[(i + round) % levels.length]);
    for (const level of order) await runs[level].round(round);
    for (const level of order) {
      const b = benches[level];
      await cpuOf(level, "pairs", () => b.call("/bench/pairs", { keys: ["cpu-pairs"], pairs: CPU_CALLS.pairs }));
      // As withKey asks them (issue 38).
      await cpuOf(level, "grantPairs", () =>
        b.call("/bench/pairs", { keys: ["cpu-grant-pairs"], pairs: CPU_CALLS.grantPairs, options: WITH_KEY_OPTIONS }),
      );
      await cpuOf(level, "rate", () =>
        b.call("/bench/rate-acquires", { target: "baton", bucket: "cpu-rate", rules: OPEN_RULES, calls: CPU_CALLS.rate }),
      );
      // Calls that write nothing, so WASM's share of them is the largest:
      // a holder's re-acquire, and a rate acquire refused from the cache.
      await cpuOf(level, "reacquire", () => b.call("/bench/reacquire", { key: "cpu-re", calls: CPU_CALLS.reacquire }));
      await cpuOf(level, "grantReacquire", () =>
        b.call("/bench/reacquire", { key: "cpu-re-grant", calls: CPU_CALLS.grantReacquire, options: WITH_KEY_OPTIONS }),
      );
      await cpuOf(level, "refused", () =>
        b.call("/bench/rate-acquires", { target: "baton", bucket: "cpu-refused", rules: EXAMPLE_RULES, calls: CPU_CALLS.refused }),
      );
      await cpuOf(level, "enqueue", () =>
        b.call("/bench/enqueues", { key: "floor-enqueue", binding: "COORDINATOR", prefix: `cpu-${round}-`, count: CPU_CALLS.enqueue }),
      );
    }
  }
} finally {
  for (const b of Object.values(benches)) await b.dispose();
}
const cold = Object.fromEntries(levels.map((l) => [l, []]));
for (let i = 0; i < COLD_RUNS; i++) {
  for (const level of levels.map((_, k) => levels[(k + i) % levels.length])) cold[level].push(await coldStart(wasmOf(level), glueOf(level)));
}
console.log(`opt-level: gzipped KiB; Baton/durable floor (pairs/s, enqueue time, rate calls/s; medians of ${ROUNDS} rounds); µs per call; first response of a fresh object (ms, ${COLD_RUNS} runs)`);
for (const level of levels) {
  const r = runs[level].result();
  const gz = gzipSync(wasmOf(level), { level: 9 }).length / 1024;
  const first = summary(cold[level].map((c) => c.firstResponseMs));
  console.log(
    `${level}: ${fmt(gz)} KiB; pairs ${fmt(r.ratio.pairs.p50)}x (min ${fmt(r.ratio.pairs.min)}, max ${fmt(r.ratio.pairs.max)}), ` +
      `enqueue ${fmt(r.ratio.enqueue.p50)}x (min ${fmt(r.ratio.enqueue.min)}, max ${fmt(r.ratio.enqueue.max)}), ` +
      `rate ${fmt(r.ratio.rate.p50)}x (min ${fmt(r.ratio.rate.min)}, max ${fmt(r.ratio.rate.max)}); ` +
      `pair ${fmt(r.ms.pairs.baton.p50 * 1000)} µs, enqueue ${fmt(r.ms.enqueue.baton.p50 * 1000)} µs, rate ${fmt(r.ms.rate.baton.p50 * 1000)} µs; ` +
      `first response ${fmt(first.p50)} ms (min ${fmt(first.min)}, max ${fmt(first.max)}); ` +
      `{ grant: true } / WASM floor pairs ${fmt(r.wasmRatio.pairs.p50)}x, rate ${fmt(r.wasmRatio.rate.p50)}x; ` +
      `workerd CPU µs per call: pair ${fmt(median(cpuUs[level].pairs))}, pair { grant: true } ` +
      `${fmt(median(cpuUs[level].grantPairs))}, rate ${fmt(median(cpuUs[level].rate))}, ` +
      `enqueue+release ${fmt(median(cpuUs[level].enqueue))}, holder's re-acquire ${fmt(median(cpuUs[level].reacquire))} ` +
      `({ grant: true } ${fmt(median(cpuUs[level].grantReacquire))}), ` +
      `rate refused ${fmt(median(cpuUs[level].refused))} (spread re-acquire ${fmt(Math.min(...cpuUs[level].reacquire))}–` +
      `${fmt(Math.max(...cpuUs[level].reacquire))}; pair ${fmt(Math.min(...cpuUs[level].pairs))}–${fmt(Math.max(...cpuUs[level].pairs))})`,
  );
}
