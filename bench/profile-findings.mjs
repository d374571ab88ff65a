// The findings of `node bench/profile.mjs` (issue 8, item 6), as prose for
// BENCHMARKS.md. The profile is not part of `npm run bench` (a profiler
// slows what it samples), so its figures are the ones measured on the date
// below; rerun it after changing the hot path and update this text.
export const PROFILE_FINDINGS = {
  title: "Where an uncontended pair's time goes (profile, 2026-12-03)",
  text: [
    "Measured, not guessed, three ways on this machine (under heavy load from other work at the time):",
    "",
    "1. `node bench/profile.mjs` (after `BATON_WASM_NAMES=1 bash scripts/build.sh`): V8's sampling profiler, " +
      "through Miniflare's inspector, on the isolate running Baton's Coordinator while the bench Worker loops " +
      "2,000–3,000 pairs; self time by kind of code, and inclusive time of the candidates the issue names. " +
      "With the inspector attached V8 runs WASM slower than without, so these are shares, not speeds.",
    "2. A plain JS Durable Object timing 20,000 runs of each statement Baton's store runs on this path, and of one " +
      "`console.log` of a decision line: a simple `SELECT` by key 7–12 µs; Baton's one combined read (the caller's " +
      "place with the key's limit and counts: three joins, two counts, one `EXISTS`) 22–27 µs; the holder row's " +
      "insert plus its delete 18–27 µs; one log line 10–13 µs.",
    "3. A/B in one process, runs interleaved: Baton with its decision log on and with `DECISION_LOG = \"off\"` " +
      "(a measurement switch only): median 654 vs 669 pairs/s, about 2%, within the noise; the plain baseline 950–1159 " +
      "pairs/s in the same runs.",
    "",
    "What the profile showed, and what was changed:",
    "",
    "- **Storage**: 11 reads and 2 writes per pair before. Now one read per call (the caller's place read together " +
      "with the key's counts, kept for the rest of the decision) and one write per call (the holder row): 2 reads, " +
      "2 writes (P5).",
    "- **The gate**: with every decision under `blockConcurrencyWhile`, its Promise and closure and the microtasks " +
      "that resolve them (`queueMicrotask` alone 13% of busy self time) were about a quarter of the isolate's busy " +
      "time. A synchronous decision cannot interleave with another request, so `acquire`'s first phase and `release` " +
      "now decide in the call itself and answer with a value when nothing is to be woken; `js/worker.mjs` resets the " +
      "object if such a call traps, as the gate did. Contended paths keep the gate.",
    "- **WASM↔JS crossings in the SQL binding**: after that, `SqlStorage.exec` itself was 29% of busy self time " +
      "and the Rust side of each statement (binding values, decoding the statement's UTF-8 text, reading up to 15 " +
      "columns with up to six type checks each) about as much again (49% inclusive). `ObjectSql` now binds `exec` " +
      "directly: statement texts are kept as JS strings, rows come back in one `Array.from`, numbers are read first.",
    "- **The decision log line**: 15% inclusive in the profile, most of it `console.log` (the inspector receives every " +
      "console message, so the profile overstates it); without the profiler it is about 2% of a pair (A/B above). " +
      "The line is now serialized from a borrowed struct, without an intermediate JSON value. Logs stay on.",
    "- **serde conversions**: decoding the request object (serde-wasm-bindgen through `edge::decode`, which reads " +
      "every own property to refuse unknown fields) 15% inclusive; encoding the reply 0.2%.",
    "- **The alarm**: 0 on this path (an uncontended key needs no holder check, so the alarm API is never called). " +
      "The schema check: 0 (once per object).",
    "- **The core's decisions**: 3.5%.",
    "- **The Durable Object of another script**: the same baseline class reached in a Worker of its own runs at " +
      "about 0.86× of itself in the calling Worker (P3 table); Baton's Coordinator is always in Baton's Worker.",
    "",
    "What is left between Baton and the baseline is per call inside Baton's isolate: the request decode, the one " +
      "combined read (2–3× a simple `SELECT`, and 15 columns to bring across), and the hop to another script. " +
      "Candidates for the next round: a decode that reads `key` and `instanceId` directly when the request " +
      "object has no other field (falling back to serde for the exact refusal), and a narrower combined read.",
  ].join("\n"),
};
