// Issue 29: the release profile's `opt-level` chosen by measurement. Each
// level's build (scripts/opt-levels.sh builds them into bench-out/opt-<level>/)
// runs in a Miniflare of its own, all at once, and their rounds of the
// floors' loops (bench/floor-ratios.mjs: pairs, enqueues behind 10, rate
// acquires, each beside the durable floor in the same Miniflare) alternate,
// so every level sees the same machine; then each level's gzipped size and
// cold starts (bench/size.mjs), alternating too. Prints one line per level.
//
//   bash scripts/opt-levels.sh z s 2 3 && node bench/opt-levels.mjs z s 2 3
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import path from "node:path";
import { ROOT, startBench } from "./miniflare.mjs";
import { floorRun } from "./floor-ratios.mjs";
import { coldStart } from "./size.mjs";
import { fmt, summary } from "./stats.mjs";

const ROUNDS = Number(process.env.OPT_ROUNDS ?? 7);
const COLD_RUNS = Number(process.env.OPT_COLD_RUNS ?? 5);
const levels = process.argv.slice(2);
if (!levels.length) throw new Error("name the levels: node bench/opt-levels.mjs z s 2 3");

const wasmOf = (level) => readFileSync(path.join(ROOT, `bench-out/opt-${level}/index_bg.wasm`));
/** Each build's JS glue, which goes with its WASM (the minifier names differ). */
const glueOf = (level) => readFileSync(path.join(ROOT, `bench-out/opt-${level}/index.js`), "utf8");

const benches = {};
const runs = {};
try {
  for (const level of levels) {
    benches[level] = await startBench({ wasm: wasmOf(level), glue: glueOf(level) });
    runs[level] = await floorRun(benches[level]);
  }
  for (let round = 0; round < ROUNDS; round++) {
    for (const level of levels.map((_, i) => levels[(i + round) % levels.length])) await runs[level].round(round);
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
      `first response ${fmt(first.p50)} ms (min ${fmt(first.min)}, max ${fmt(first.max)})`,
  );
}
