// The findings of `node bench/profile.mjs` (issue 8, item 6), as prose for
// BENCHMARKS.md. The profile is not part of `npm run bench` (a profiler
// slows what it samples), so its figures are the ones measured on the date
// below; rerun it after changing the hot path and update this text.
export const PROFILE_FINDINGS = {
  title: "Where an uncontended pair's time goes (profile and A/B, 2026-12-03)",
  text: [
    "Measured, not guessed, three ways on this machine:",
    "",
    "1. `node bench/profile.mjs` (after `BATON_WASM_NAMES=1 bash scripts/build.sh`): V8's sampling profiler, " +
      "through Miniflare's inspector, on the isolate running Baton's Coordinator while the bench Worker loops " +
      "2,000–3,000 pairs; self time by kind of code, and inclusive time of the candidates the issue names. " +
      "With the inspector attached V8 runs WASM slower than without, so these are shares, not speeds.",
    "2. `node bench/pairs-ab.mjs`: P3 alone, 15 rounds of 500 pairs alternating Baton and the baseline, with the " +
      "RPC floor (a call that touches no storage). Its medians move by ±0.1 between runs on this shared 2-core " +
      "machine, so each comparison below was run at least twice, back to back.",
    "3. A/B builds that cut one part out of Baton's object at a time (not committed), each measured with (2).",
    "",
    "What the measurements say:",
    "",
    "- **The floor is the commit, on both sides.** A call that touches no storage costs 40–60 µs round trip. A call " +
      "that writes waits for its commit before the reply leaves (the output gate): about 250 µs more, the same " +
      "for the baseline and for Baton, and the same with fewer pages written (a `WITHOUT ROWID` table, or two " +
      "indexes dropped, changed nothing measurable). Both an acquire and a release must write, so most of a " +
      "pair is two commits whoever runs it.",
    "- **The decision log line is the largest part of the rest.** Baton's object doing only its two writes from JS " +
      "(no Rust) ran at 0.98–1.15× the baseline; the same with one `console.log` of a decision line per call, as " +
      "Baton logs, at 0.76–0.89×. The baseline logs nothing. Logs stay on.",
    "- **Storage reads: now none.** 11 reads and 2 writes per pair at the start of issue 8; then one combined read " +
      "per call (2 reads, 2 writes); now each key's summary (its counts and holders) is carried from one decision " +
      "to the next, since the object is the only writer of its tables, and an uncontended pair reads nothing " +
      "(P5). Faking the reads out of the previous build had moved it from 0.58–0.67× to 0.72–0.78×.",
    "- **The request decode**: `acquire` and `release` now take their positional arguments, and two strings that " +
      "parse skip the request object and the general decoder (15% inclusive in the profile before).",
    "- **The gate**: `acquire`'s first phase and `release` decide in the call itself, outside " +
      "`blockConcurrencyWhile` (its Promise, closure and microtasks were about a quarter of busy time); " +
      "`js/worker.mjs` resets the object if such a call traps, as the gate did.",
    "- **WASM↔JS crossings in the SQL binding**: `ObjectSql` binds `exec` directly, keeps statement texts as JS " +
      "strings, and reads rows with one `Array.from`.",
    "- **The alarm** and **the schema check**: 0 on this path.",
    "",
    "What is left: with the same log line, a plain JS object doing Baton's writes runs at 0.76–0.89× the baseline " +
      "and Baton at about 0.7×; the rest is Baton's own per-call work in WASM (decode, the decision with its " +
      "invariant check, the reply). The baseline is the least a correct version does (one holder, no log, no " +
      "limits, Workflows or grace), so beating it needs the log line to cost less than the baseline's reads: " +
      "the candidates are a cheaper logging path in the runtime, or a line per contended decision only, which the " +
      "contract's decision logs would have to allow.",
  ].join("\n"),
};
