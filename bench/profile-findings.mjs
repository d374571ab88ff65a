// The findings of `node bench/profile.mjs` (issue 8, item 6; its serial form
// for issue 9's P2), as prose for
// docs/benchmarks.md. The profile is not part of `npm run bench` (a profiler
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
      "RPC floor (a call that touches no storage), each side's CPU time per pair (workerd's user and system time " +
      "from /proc, and the bench process's own, which reads every line workerd prints), and each side's call " +
      "without a commit (a holder's re-acquire, which writes nothing on either side). Its medians move by ±0.1 " +
      "between runs on this shared 2-core machine, so each comparison below was run at least twice, back to back.",
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
      "(no Rust) ran at 0.90–1.15× the baseline; the same with one `console.log` of a decision line per call, as " +
      "Baton logs, at 0.66–0.89×. A holder's re-acquire, which writes nothing, costs Baton about what it costs the " +
      "baseline with the lines off (36–70 µs against 60–95 µs per call, RPC included) and 90–150 µs with them on " +
      "(the baseline 61–79). A `console.log` costs about 8 µs in a loop inside one request, but 40–110 µs as the " +
      "one line of an RPC call, more while a commit is pending; with the lines on, the bench process also spends " +
      "150–290 µs of CPU per pair reading them from workerd's stdout (10 µs without), on the same two cores. The " +
      "baseline logs nothing. Logs stay on.",
    "- **Rust's writes.** With the lines off, workerd's user CPU per pair is still about 120–200 µs above the " +
      "baseline's (680–760 µs against 480–600), and Baton runs at 0.71–0.93×. It is not Baton's decisions: with " +
      "the two statements faked out in Rust (A/B build, not committed) a pair costs 136 µs, both RPCs included, " +
      "and a holder's re-acquire or a stranger's release (no statement) costs 40–44 µs per call against the " +
      "baseline's 45. It comes with the calls that write: the same statements run from JS in Baton's object, " +
      "with no call into WASM, ran at 0.92–0.99× the baseline. What makes Rust's writing calls dearer is not " +
      "pinned down: adding one trivial WASM call (`storageWork`) to each JS-only call gave 0.84–0.88× in two " +
      "runs and 0.92–0.95× in two later ones, and one extra `Proxy` call (what worker-build's shim makes per " +
      "method call) 0.76× and 0.91×: inside this machine's noise. The next thing to measure, on a quieter " +
      "machine or on Cloudflare, whose storage commits differently.",
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
    "What is left: the decision line's cost in this runtime exceeds the baseline's reads, so with logs on Baton " +
      "cannot beat a baseline that logs nothing whatever its own per-call work. Beating it needs the line to cost " +
      "less here (the runtime's logging path, which is not Baton's), or a line per contended decision only, which " +
      "the contract's decision logs would have to allow; with the lines off, what makes Rust's writing calls " +
      "dearer (above) is what stands between Baton and the baseline.",
    "",
    "**The serial queue's calls (P2).** `node bench/profile.mjs serial` profiles Baton's isolate while the bench " +
      "Worker loops enqueue, claim and release on fresh ids, then the hand-written JS queue's isolate doing the " +
      "same; `node bench/subset.mjs serial-calls` times both unprofiled, with workerd's CPU per call from /proc.",
    "",
    "- **A serial call is CPU, not waiting.** workerd's CPU per call is about its wall time (2.1 ms against 2.1–2.4 " +
      "for Baton, 1.55 against 1.6–1.7 for the JS queue): D1, the Workflow engine, the bench Worker and Baton run " +
      "on the same threads, so every microsecond of work on a hand-off's path is on its critical path, and doing " +
      "two things at once saves nothing. Looking the woken waiter up (`get`, itself a status query) beside the " +
      "release's batch, from a per-isolate guess of the newest waiter, was built and measured (3 alternating " +
      "P2 runs each, not committed): no change, and 1.3 KB of WASM.",
    "- **Where Baton's extra goes.** Busy time per round of three calls under the profiler, before this round's " +
      "change: Baton 6.7 ms, the JS queue 5.0. D1's binding cost both the same (1.9 ms); Baton added its WASM " +
      "(1.2 ms: the futures executor, serde, the allocator) and wasm-bindgen's glue (1.9 ms), whose largest part " +
      "was `JSON.stringify` of the batch's results (10% of Baton's busy time; 3% without its replacer, but then " +
      "the longer text cost as much to copy into WASM and parse), then the decision line's `console.log` (5–9%), " +
      "strings copied into WASM (3–6%) and the microtask queue (5%). Reading the Worker's variables was 2%. Now " +
      "the variables are read once per isolate, and the results are read property by property, only the ten " +
      "columns and `meta.changes` (`shell::d1_results`): the stringify and the JSON parse are gone, the WASM is " +
      "4.5 KB smaller, and workerd's CPU per serial call went from 1.36–1.41× the JS queue's to 1.27–1.29× " +
      "(`serial-calls`, two alternating runs each). The decision line's `console.log` is now Baton's largest " +
      "part of its own (about 11% of its busy time).",
    "- **What it means for P2.** Per call, Baton's claim and release cost 0.3–0.5 ms more than the JS queue's in a " +
      "loop, and 1–2 ms more inside a hand-off, where the code is colder and competes with the engine's work. " +
      "Both hand-offs take the same steps (one batch and one event for the release, one batch for the claim), and " +
      "the JS queue does only that, without the decision lines, the waiter bound, time-outs or the status check " +
      "that skips a dead waiter. Even with its own work at zero, Baton would only tie; beating the hand-written " +
      "queue needs the hand-off to take a step fewer (the release handing the group over and the turn event " +
      "saying so, so that `serialize` skips its claim step), which changes what contract §2 says a release and a " +
      "claim do. A prototype of that (not committed: the release's batch makes the first waiter the holder, the " +
      "turn event names it, `serialize` then skips its claim) ran P2 at 0.79–0.95× the JS queue (mean of each of " +
      "three runs; 0.83–0.93× by median).",
  ].join("\n"),
};

/**
 * What is left after issue 29's profile (bench/profile-split.json, "before"):
 * the Coordinator-side changes that would close P1, P3 and the enqueue's
 * gap, with the figures they come from. Measured while the machine's two
 * cores ran at a load of 12 to 15 (every engineer building), so every
 * wall time above is 5 to 20 times its unloaded value; what holds across
 * the three runs of the split is the shares and the counts, which is what
 * this reads. Update it with the "after" run.
 */
export const SPLIT_LEFT = [
  "**What the split says, and what is left (issue 29, item 4).** Read across three runs of the split (the last " +
    "is the table above), on a machine whose load stayed at 12–15: the shares and counts held from run to run, the " +
    "wall times did not, so the figures below are shares, counts and ratios.",
  "",
  "- **Not the optimisation level.** Per Baton call, workerd's CPU was the same at opt-level \"z\", \"s\", 2 and 3 " +
    "(a holder's re-acquire 190–225 µs, a refused rate acquire 310–380 µs, a pair 900–967 µs, every level inside " +
    "the others' spread; `node bench/opt-levels.mjs`), while \"s\", 2 and 3 cost 26, 41 and 52 KiB more gzipped " +
    "(347, 362, 373 KiB against 321). The decision itself is 2–7% of Baton's isolate CPU on a pair and under 1% on " +
    "an enqueue or a hand-off: the WASM's speed is not where a call's time goes. \"z\" stays.",
  "- **Not the crossing's conversions, on the pair.** Decoding the request is 1–3% of Baton's isolate CPU on an " +
    "uncontended call, encoding the reply under 2%; the calls from WASM into JS (the SQL binding's glue, " +
    "`Array.from` of the rows, `Date.now`, strings) 9–17%, and the JS→WASM entry (worker-build's Proxy shim " +
    "and wasm-bindgen's export glue) 2–8%. Making each conversion cheaper would save a few per cent of a pair; the " +
    "pair's SQLite `exec` is 41–64% of the isolate's CPU.",
  "- **P3 (uncontended pair): the statement, and the driver around it.** An uncontended acquire and release run one " +
    "statement each, as the durable floor does, but Baton's are heavier: the holder row has 11 columns and 3 " +
    "indexes and raises the fence's high-water row through its trigger; the release stamps `ended_ms`, whose " +
    "trigger appends the hold time to the key row (JSON) and deletes the holder. Run from JS in workerd without " +
    "Baton (bench/floors.mjs's ReplayFloor, one RPC per call), those statements cost 1.45× the durable floor's one " +
    "write per call (1.67 against 1.15 ms at that load), so P3 against the durable floor cannot pass 0.69× with " +
    "them whatever Baton's own code costs. Natively (Node's SQLite) the fence trigger is 2–3 µs of the acquire's " +
    "7–9 µs and the hold-time append 4–5 µs of the release's 10–12 µs; in workerd, taking either trigger away " +
    "changed the replayed pair by less than the rounds' spread (±60 µs). What would close P3: a holder row of " +
    "the columns an uncontended grant needs (fewer indexes on `coordinator_holders`: the checked-order index " +
    "serves only the alarm's holder checks), the fence kept on the key's summary row written only when a key " +
    "goes idle or is evicted, and the hold time appended only when someone waits (an uncontended key has no " +
    "`etaMs` to give). Then the driver's own part (6–13% of the isolate's CPU: `Driver::decide`'s summary, the " +
    "history's `Happened`, allocation) and the glue above.",
  "- **The enqueue: the asynchronous path, not its statements.** An enqueue costs Baton's isolate 5–10 times the CPU " +
    "of an uncontended call. Its five statements (the member read, the waiter's insert with the tenants' trigger, " +
    "the key's waiter count, and two reads for the list report) replayed alone in workerd cost 2.2× the durable " +
    "floor's one write (2.88 against 1.28 ms at that load), and the tenants' triggers less than the spread; the " +
    "rest of the enqueue is its path: it decides inside `blockConcurrencyWhile` (a Promise, a closure and its " +
    "microtasks: `queueMicrotask`, `apply` and workerd outside JS are 45–50% of its CPU), arms the alarm " +
    "(`getAlarm`/`setAlarm`) because the key has waiters, and sends the key's list report (contract §10) to its " +
    "shard, whose confirmation is a further write under the gate. What would close it: the enqueue decided in the " +
    "caller's turn like acquire's first phase (it needs no I/O before its decision), the alarm armed only when " +
    "the key's next wake moves earlier (it is already set for a key with waiters), and the list report sent " +
    "when the key's listed state changes (idle ↔ busy), not on every change of its counts.",
  "- **P1 (hand-off): the event send, the confirmation, and the work on the engine's thread.** The release that " +
    "hands the key on runs 16 statements (the front read twice, the holder's end, the waiter's delete, the new " +
    "holder, the tenant's turn, the waited and recent history with its trim, two reads for the list report, the " +
    "confirmation's state update), waits for the Workflow binding's get + sendEvent (the largest part of its " +
    "wall time in every run: 19.6–32.7 ms at that load, 1.5 ms unloaded), then decides again and commits the " +
    "confirmation before it replies: two commits. Its CPU is mostly Promise machinery (`queueMicrotask`, `apply`: " +
    "33–40%), the Workflow binding (7–26%) and workerd outside JS (12–22%). All of it runs on the thread the local " +
    "engine delivers the event on. What would close P1: reply after the first commit and send the event after " +
    "the reply (recording acceptance after, the alarm covering a loss: §1b allows it), which takes the event " +
    "send, the second decision and the second commit out of the release call; read the front once; write the " +
    "history rows (waited, recent, trim) in one statement or on the alarm; and the list report as for enqueue.",
  "",
  "**After (the \"after\" table; issue 29, item 3).** What changed, each measured alone against the build before " +
    "it, rounds alternating (`node bench/subset.mjs floors p1`), at a load of 5–9:",
  "",
  "- **The enqueue** decides in the caller's turn (`Driver::try_now`, as acquire and release; in `abortOnTrap`), " +
    "and a periodic alarm known to be set is not asked again (`getAlarm` once per alarm period, not per call): " +
    "6.0–6.8× the durable floor → 4.6×. What was left was mostly the list report each enqueue behind waiters " +
    "sent (the waiting count changed). Leaving a listed key's counts to its holder-check alarm took it to 2.5× but " +
    "left the status page up to an alarm period behind, so that was not kept. Instead (session 3) a change of a " +
    "listed key's counts made while its last report is on its way is not sent at once: one report of the key as " +
    "it then is follows that report's answer, no sooner than `LIST_REPORT_SPACING_MS` (250 ms, a quarter of the " +
    "status page's poll) after it, and a confirmation clears the stored owed mark only when this life may have " +
    "stored it. A first step that sent the follow-up as soon as the answer came measured 4.83–5.22× → 4.00–4.60× " +
    "(in a loop the report's round trip is about one call long, so nearly every enqueue still paid a report); " +
    "with the spacing, 4.50–4.67× → 2.80× in two alternating pairs (`node bench/subset.mjs floors`, the build " +
    "before and after, load about 1.1). What is left of the enqueue is its own work: three statements (the " +
    "member read, the waiter's insert with the tenants' trigger, the key's waiting count) against the floor's " +
    "one, and the crossing's glue around them. In the \"after\" table the enqueue's Baton CPU under the profiler fell from " +
    "1,486 to 668 µs and its statements from 4.52 to 3.01 per call (the report's reads on 1% of enqueues); " +
    "SQLite's exec is now 54% of it, and those three statements replayed alone in workerd cost 2.0× the floor's " +
    "one write (400 against 200 µs at that load): closing the rest needs the enqueue to write one statement " +
    "(the waiting count and the tenants' row kept by the waiter's insert, the member read folded into it).",
  "- **P1's release** waits for one commit and the event send: the grant's acceptance (a decision and a commit) " +
    "is recorded after the reply (`Driver::perform`: a result that does not answer the caller is fed back in " +
    "`waitUntil`), and the list reports go once the effects are under way. " +
    "The release call, p50 per run in three alternating pairs: 14, 23, 17 ms before, 15, 14, 16 after (the event " +
    "send, itself 9–20 ms at that load, is most of it); P1's total is the engine's, noisy run to run " +
    "(Baton/plain 1.13–1.45× before, 0.75–1.35× after in three alternating pairs; 0.80× in the full run). " +
    "Sending the event after the reply as well (the release answering after its first commit) was built and " +
    "measured: the release call fell to 2–7 ms but P1's total rose (1.15–1.60× the plain one's), because the " +
    "releasing instance's step then runs on the engine's thread while the event is delivered; here the event " +
    "going first is what the woken waiter needs, so it stays before the reply.",
  "- **Unchanged: the pair and the rate acquire.** Both already answered in the caller's turn with one statement. " +
    "What is left there is as above: the pair's statements (the replay puts them at 1.45–1.5× the floor's one " +
    "write, its triggers within the spread), the driver around them (`Driver::decide`, the summary's clone, " +
    "allocation: 9–12%) and the crossing's glue (15–25%: `Date.now`, strings, `exec`'s arguments). Closing them " +
    "needs the schema to move the fence and grant count to the release's trigger (a migration step), and the " +
    "per-call glue cut (the key and id passed once, no `Date.now` crossing per call).",
  "",
  "**Then (issue 29, the fourth session).** Each step measured alone against the build before it, rounds " +
    "alternating (`node bench/subset.mjs floors`, three pairs each, load about 1), then the split above rerun:",
  "",
  "- **Coordinator schema v12: the pair's statements at the floor's cost.** The holders' table rebuilt `WITHOUT " +
    "ROWID` and without its grant-order index (a key's holders, at most its limit, are read whole and ordered by " +
    "fence), and the key's fence and grant count folded in by the trigger that ends a hold, which already wrote " +
    "the key row for the hold time: an uncontended acquire writes its row and nothing else. P3 against the " +
    "durable floor 0.62–0.64× → 0.73–0.76× (a pair 575–605 → 485–500 µs per call); the replayed statements " +
    "1.41× → 1.01–1.06× the floor's write. P3 against the plain JS object went from 0.80× to 0.99–1.03× in " +
    "full runs.",
  "- **Writes skip their cursor.** A statement without `RETURNING` runs in `exec`, which frees its cached " +
    "statement when it is done, so reading its empty rows back (`raw()` and `Array.from`) was a crossing for " +
    "nothing: 495–505 → 480–485 µs a pair.",
  "- **Schema v13: the enqueue's rows.** The waiters' and tenants' tables rebuilt `WITHOUT ROWID`, the key's " +
    "waiting count kept by the waiter rows' triggers (one statement fewer), a waiter without an input hash left " +
    "out of the hash index, and the tenant's turn index keyed on its earliest waiter rather than its count, so " +
    "an arrival behind others rewrites the tenant's row alone: the enqueue's statements replayed in workerd " +
    "2.0× → 1.67–1.8× the floor's write, the enqueue 500–540 → 480–510 µs (100 a round). What is left is in " +
    "the ENQ row's explanation.",
  "- **The rate cache keeps where long windows start.** Under two open rules, once a bucket is older than its " +
    "minute window, every acquire read the last grant before the window's start from storage (15% of the " +
    "isolate's busy time): the cache now keeps that row and the next, 2,820 → 3,654–3,822 calls/s sustained. " +
    "The floors' round is younger than its window and never read; its 0.69–0.72× is the decode and the decision.",
  "- **A fresh object's schema in one step.** v12 and v13 rebuild three tables, and each rename reparses every " +
    "trigger: a fresh object's climb from v1 took 4.5 ms more, and P6's first response rose from 23.6 to 27.8 ms. " +
    "A database with no version now gets the ladder's result in one statement per table, index and trigger " +
    "(generated from the ladder and checked against it): 22.8 ms for the v11 build, 18.0 ms now.",
].join("\n");
