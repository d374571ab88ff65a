// A part of the benchmark, for comparing a change before and after without
// the whole run: `node bench/subset.mjs p3 l1` (after scripts/build.sh).
// Prints the ratios only; BENCHMARKS.md is written by bench/run.mjs alone.
import { startBench } from "./miniflare.mjs";
import * as calls from "./calls.mjs";
import * as rateBench from "./rate.mjs";
import { fmt } from "./stats.mjs";

const parts = new Set(process.argv.slice(2).length ? process.argv.slice(2) : ["p3", "l1"]);
const b = await startBench();
try {
  if (parts.has("p3")) {
    const p3 = await calls.throughput(b);
    console.log(
      `P3 Baton/plain JS: p50 ${fmt(p3.ratio.p50, 2)}x (min ${fmt(p3.ratio.min, 2)}, max ${fmt(p3.ratio.max, 2)}); ` +
        `Baton ${fmt(p3.oneKey.p50, 0)} pairs/s, plain ${fmt(p3.baseline.p50, 0)} pairs/s; ` +
        `own-Worker baseline ratio ${fmt(p3.remoteRatio.p50, 2)}x`,
    );
  }
  if (parts.has("l1")) {
    const rate = await rateBench.throughput(b);
    for (const [config, s] of Object.entries(rate.summaries)) {
      console.log(
        `L1 ${config}: Baton/JS ${fmt(rate.vsJs[config], 2)}x, Baton/fixed ${fmt(rate.vsFixed[config], 2)}x; ` +
          `baton ${fmt(s.baton.p50, 0)}/s, js ${fmt(s.js.p50, 0)}/s, fixed ${fmt(s.fixed.p50, 0)}/s`,
      );
    }
  }
} finally {
  await b.dispose();
}
