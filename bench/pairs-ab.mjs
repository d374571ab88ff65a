// P3 alone, for A/B work on the Coordinator's uncontended path: 15 rounds
// of 500 acquire+release pairs on Baton and on the plain JS baseline,
// alternating which goes first, plus the RPC floor (a call that touches no
// storage) on both. Run after scripts/build.sh:
//   node bench/pairs-ab.mjs            (BENCH_VARS='{"DECISION_LOG":"off"}' to vary Baton's vars)
// PAIR='COORDINATOR PLAIN_REMOTE' compares with the baseline in a Worker of
// its own (the default: 'COORDINATOR PLAIN', the baseline in the bench Worker).
// Prints medians and minima in µs per pair and the median ratio; the CPU
// time per pair, of workerd (user and system: the commit's I/O is system
// time, and the noisiest part) and of this process (which reads every line
// workerd prints, the decision logs among them); and each side's per-call
// work without a commit: acquires by the key's holder, which write nothing
// on either side. Not part of `npm run bench`, whose P3 is the figure of
// record.
import { cpuSeconds, workerdPids } from "./cpu.mjs";
import { startBench } from "./miniflare.mjs";
const [BATON, BASE] = (process.env.PAIR ?? "COORDINATOR PLAIN").split(" ");
const b = await startBench({ vars: JSON.parse(process.env.BENCH_VARS ?? "{}") });
const pids = workerdPids();
const cpu = () => cpuSeconds(pids);
const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
const min = (a) => Math.min(...a);
try {
  const res = { [BATON]: [], [BASE]: [] };
  const cpuPerPair = { [BATON]: [], [BASE]: [] };
  for (const binding of [BATON, BASE]) await b.call("/bench/pairs", { keys: ["pp-" + binding], pairs: 200, binding });
  const ratios = [];
  for (let r = 0; r < 15; r++) {
    const t = {};
    for (const binding of r % 2 ? [BATON, BASE] : [BASE, BATON]) {
      const before = cpu();
      const p = await b.call("/bench/pairs", { keys: ["pp-" + binding], pairs: 500, binding });
      const after = cpu();
      cpuPerPair[binding].push(
        Object.fromEntries(Object.keys(after).map((k) => [k, ((after[k] - before[k]) * 1e6) / p.pairs])),
      );
      t[binding] = p.elapsedMs * 1000 / p.pairs;
      res[binding].push(t[binding]);
    }
    ratios.push(t[BASE] / t[BATON]);
  }
  const floor = {};
  for (const binding of [BATON, BASE]) {
    const f = await b.call("/bench/rpc-floor", { key: `floor-${binding}`, calls: 2000, binding });
    floor[binding] = ((f.elapsedMs * 1000) / f.calls) * 2;
  }
  const reacquire = {};
  for (const binding of [BATON, BASE]) {
    const r = await b.call("/bench/reacquire", { key: `re-${binding}`, calls: 2000, binding });
    reacquire[binding] = (r.elapsedMs * 1000) / r.calls;
  }
  console.log(`RPC floor µs per two calls: ${BATON} ${floor[BATON]}, ${BASE} ${floor[BASE]}`);
  console.log(`holder's re-acquire (no write), µs per call: ${BATON} ${reacquire[BATON]}, ${BASE} ${reacquire[BASE]}`);
  for (const binding of [BATON, BASE]) {
    const of = (k) => med(cpuPerPair[binding].map((c) => c[k])).toFixed(0);
    console.log(`CPU µs per pair, ${binding}: workerd user ${of("user")}, system ${of("system")}; this process ${of("bench")}`);
  }
  console.log(`pair µs: ${BATON} med ${med(res[BATON])} min ${min(res[BATON])}; ${BASE} med ${med(res[BASE])} min ${min(res[BASE])}; ratio med ${med(ratios).toFixed(2)}`);
} finally { await b.dispose(); }
