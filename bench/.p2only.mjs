import { startBench } from "/work/wt/serial/bench/miniflare.mjs";
import * as handoff from "/work/wt/serial/bench/handoff.mjs";
const b = await startBench();
try {
  const r = await handoff.serialPush(b);
  const f = (s) => `p50 ${s.total.p50} (wake ${s.wake.p50}, grant→step ${s.grantToStep.p50}, release call ${s.releaseCall.p50}) n=${s.total.n}`;
  console.log("baton", f(r));
  console.log("js   ", f(r.js));
} finally { await b.dispose(); }
