// A part of the benchmark, for comparing a change before and after without
// the whole run: `node bench/subset.mjs p1 p3 l1 p2 serial-calls` (after
// scripts/build.sh). p2 is bench/handoff.mjs's serialPush as `npm run bench`
// runs it (Baton and the plain JS queue alternating), with where each
// hand-off's time goes; serial-calls times the serial queue's calls alone
// (no Workflow), Baton against the JS queue, alternating, with workerd's CPU
// per call beside the wall time.
// `floors` runs issue 29's and 38's rounds against the floors (bench/floor-ratios.mjs;
// BENCH_FLOOR_ROUNDS=2 for a quick check), `p1chain` P1 as throughput
// (BENCH_P1_CHAIN_ROUNDS=1), `p3` with BENCH_P3_RUNS=2.
// `list` registers 100,000 busy keys and times coordinatorList (bench/busy.mjs).
// Prints the ratios only; docs/benchmarks.md is written by bench/run.mjs alone.
import { startBench } from "./miniflare.mjs";
import * as calls from "./calls.mjs";
import * as rateBench from "./rate.mjs";
import * as handoff from "./handoff.mjs";
import * as busy from "./busy.mjs";
import * as floors from "./floor-ratios.mjs";
import { fmt, summary } from "./stats.mjs";
import { cpuSeconds, workerdPids } from "./cpu.mjs";

const parts = new Set(process.argv.slice(2).length ? process.argv.slice(2) : ["p3", "l1"]);
if (parts.has("p3all")) {
  const logged = await startBench({ vars: { BATON_LOG: "all" }, benchVars: { PLAIN_LOG: "all" } });
  try {
    const { ratio } = await calls.loggedRatio(logged);
    console.log(`P3 at BATON_LOG=all, Baton/plain JS printing a line per call: p50 ${fmt(ratio.p50, 2)}x (min ${fmt(ratio.min, 2)}, max ${fmt(ratio.max, 2)})`);
  } finally {
    await logged.dispose();
  }
}
const b = await startBench();
try {
  if (parts.has("floors")) floors.print(await floors.floorRatios(b));
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
  if (parts.has("list")) {
    const listBench = await startBench({ vars: busy.LIST_VARS });
    try {
      busy.print(await busy.listing(listBench));
    } finally {
      await listBench.dispose();
    }
  }
  for (const [part, tenants] of [["p4", false], ["p4t", true]]) {
    if (!parts.has(part)) continue;
    const p4 = await calls.flatCost(b, { tenants });
    const op = (name) => `${name} ${fmt(p4.opRatios[`${name}Ms`], 2)}x`;
    console.log(
      `P4${tenants ? " with tenants" : ""}: ${fmt(p4.ratio, 2)}x behind ${calls.P4_LARGE} / ${calls.P4_SMALL} ` +
        `(${op("enqueue")}, ${op("acquire")}, ${op("release")}; sum ${fmt(p4.per[calls.P4_LARGE].sumMs.p50)} / ` +
        `${fmt(p4.per[calls.P4_SMALL].sumMs.p50)} ms)`,
    );
  }
  if (parts.has("p1")) {
    const p1 = await handoff.coordinatorHandoff(b);
    console.log(
      `P1: p50 ${fmt(p1.total.p50)} ms (IQR ${fmt(p1.total.q1)}-${fmt(p1.total.q3)}, n=${p1.total.n}); per round ${p1.perRoundP50.map((x) => fmt(x)).join(", ")}; ` +
        `release->acquire call ${fmt(p1.wake.p50)}, acquire->next step ${fmt(p1.grantToStep.p50)}, release call ${fmt(p1.releaseCall.p50)}; ` +
        `P10 Baton steps per section: free ${fmt(p1.steps.free.p50, 0)}, waited once ${fmt(p1.steps.contended.p50, 0)}; ` +
        `plain JS DO p50 ${fmt(p1.plain.total.p50)} ms (Baton/plain ${fmt(p1.total.p50 / p1.plain.total.p50, 2)}x)`,
    );
  }
  if (parts.has("p1chain")) {
    const c = await handoff.chainThroughput(b);
    console.log(
      `P1 chain of ${handoff.P1_CHAIN_INSTANCES}: Baton/plain ${fmt(c.ratio.p50, 2)}x (min ${fmt(c.ratio.min, 2)}, max ${fmt(c.ratio.max, 2)}); ` +
        `Baton ${fmt(c.baton.p50, 0)} hand-offs/s, plain ${fmt(c.plain.p50, 0)} hand-offs/s; ` +
        `${c.ratio.n} rounds; Baton's storage per hand-off ${fmt(c.perHandoff.writes, 2)} writes, ${fmt(c.perHandoff.reads, 2)} reads`,
    );
  }
  if (parts.has("p2")) {
    const p2 = await handoff.serialPush(b);
    // total = release call + (woken waiter's claim call starts) ... + its next step.
    const line = (name, s) =>
      `${name}: total p50 ${fmt(s.total.p50)} ms (IQR ${fmt(s.total.q1)}-${fmt(s.total.q3)}); ` +
      `release call ${fmt(s.releaseCall.p50)}, release->claim call ${fmt(s.wake.p50)}, claim->next step ${fmt(s.grantToStep.p50)} ` +
      `(the claim call itself ${fmt(s.grantCall.p50)})`;
    console.log(`P2 Baton vs JS: ${fmt(p2.total.p50 / p2.js.total.p50)}x (n=${p2.total.n} each)`);
    console.log(line("P2 Baton", p2));
    console.log(line("P2 JS   ", p2.js));
    const steps = (s) => `${s.steps.uncontended.p50} uncontended / ${s.steps.contended.p50} contended`;
    console.log(`P10 serialize Baton steps (p50): Baton ${steps(p2)}; plain JS queue ${steps(p2.js)}`);
  }
  if (parts.has("serial-calls")) {
    const times = { BATON: [], JS_QUEUE: [] };
    // workerd's CPU per call beside the wall time: every isolate's work
    // for the call (D1's and the Worker's included) is counted there.
    const pids = workerdPids();
    const workerdCpuMs = () => {
      const { user, system } = cpuSeconds(pids);
      return (user + system) * 1000;
    };
    const cpuPerCall = { BATON: [], JS_QUEUE: [] };
    const COUNT = 200;
    for (let round = 0; round < 8; round++) {
      for (const binding of round % 2 ? ["BATON", "JS_QUEUE"] : ["JS_QUEUE", "BATON"]) {
        const before = workerdCpuMs();
        times[binding].push(await b.call("/bench/serial-calls", { group: `calls-${round}-${binding}`, count: COUNT, binding }));
        cpuPerCall[binding].push((workerdCpuMs() - before) / (3 * COUNT));
      }
    }
    for (const [binding, rounds] of Object.entries(times)) {
      const p50 = (call) => fmt(summary(rounds.map((r) => r[call])).p50);
      console.log(
        `serial calls ${binding}: enqueue ${p50("enqueue")} ms, claim ${p50("claim")} ms, release ${p50("release")} ms; ` +
          `workerd CPU ${fmt(summary(cpuPerCall[binding]).p50, 3)} ms per call`,
      );
    }
  }
} finally {
  await b.dispose();
}
