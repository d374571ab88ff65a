// P3 alone, for A/B work on the Coordinator's uncontended path: 15 rounds
// of 500 acquire+release pairs on Baton and on the plain JS baseline,
// alternating which goes first, plus the RPC floor (a call that touches no
// storage) on both. Run after scripts/build.sh:
//   node bench/pairs-ab.mjs            (BENCH_VARS='{"DECISION_LOG":"off"}' to vary Baton's vars)
// Prints medians and minima in µs per pair and the median ratio. Not part
// of `npm run bench`, whose P3 is the figure of record.
import { startBench } from "./miniflare.mjs";
const b = await startBench({ vars: JSON.parse(process.env.BENCH_VARS ?? "{}") });
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const min = (a) => Math.min(...a);
try {
  const res = { COORDINATOR: [], PLAIN: [] };
  for (const binding of ["COORDINATOR", "PLAIN"]) await b.call("/bench/pairs", { keys: ["pp-" + binding], pairs: 200, binding });
  const ratios = [];
  for (let r = 0; r < 15; r++) {
    const t = {};
    for (const binding of r % 2 ? ["COORDINATOR", "PLAIN"] : ["PLAIN", "COORDINATOR"]) {
      const p = await b.call("/bench/pairs", { keys: ["pp-" + binding], pairs: 500, binding });
      t[binding] = p.elapsedMs * 1000 / p.pairs;
      res[binding].push(t[binding]);
    }
    ratios.push(t.PLAIN / t.COORDINATOR);
  }
  const floor = {};
  for (const binding of ["COORDINATOR", "PLAIN"]) {
    const f = await b.call("/bench/rpc-floor", { key: `floor-${binding}`, calls: 2000, binding });
    floor[binding] = ((f.elapsedMs * 1000) / f.calls) * 2;
  }
  console.log(`RPC floor µs per two calls: baton ${floor.COORDINATOR}, plain ${floor.PLAIN}`);
  console.log(`pair µs: baton med ${med(res.COORDINATOR)} min ${min(res.COORDINATOR)}; plain med ${med(res.PLAIN)} min ${min(res.PLAIN)}; ratio med ${med(ratios).toFixed(2)}`);
} finally { await b.dispose(); }
