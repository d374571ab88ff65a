// The parts of docs/limits.md and docs/errors.md that are generated from
// the code: every bound of src/limits.rs with its reason, and every error
// the code can give that can be found in it (the kinds of BatonError, the
// refusals of a bound, the configuration errors, the helpers' error classes
// and their other errors), each with the cause and remedy written here.
// A test fails when a page differs from what the code gives;
//
//   BATON_BLESS=1 node --test tests/miniflare/docs-generated.test.mjs
//
// rewrites the generated parts (between the markers); review the diff.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.mjs";

const BLESS = process.env.BATON_BLESS === "1";
const BEGIN = "<!-- generated: BATON_BLESS=1 node --test tests/miniflare/docs-generated.test.mjs -->";
const END = "<!-- end of the generated part -->";
const read = (file) => readFileSync(path.join(ROOT, file), "utf8");

/** Every `.rs` file under src/, relative to ROOT. */
function rustFiles() {
  return readdirSync(path.join(ROOT, "src"), { recursive: true })
    .filter((f) => String(f).endsWith(".rs"))
    .map((f) => path.join("src", String(f)))
    .sort();
}

/** A Rust doc comment's text as Markdown on one line: intra-doc links become code. */
function prose(lines) {
  return lines
    .join(" ")
    .replace(/\s+/g, " ")
    .replace(/\[`([^`\]]+)`\](\([^)]*\))?/g, "`$1`")
    .replace(/\|/g, "\\|")
    .trim();
}

/** `20_000` as 20,000; an expression stays code. */
function value(expression) {
  if (/^-?[\d_]+$/.test(expression)) return Number(expression.replaceAll("_", "")).toLocaleString("en-US");
  return `\`${expression}\``;
}

/** src/limits.rs as sections of `{ name, type, value, why }`. */
export function limits(text = read("src/limits.rs")) {
  const sections = [{ title: "Identifiers, the platform and the wire", bounds: [] }];
  let doc = [];
  for (const line of text.split("\n")) {
    const section = line.match(/^\/\/ --- (.*?)(?: ---)?$/);
    const comment = line.match(/^\/\/\/ ?(.*)$/);
    const constant = line.match(/^pub const (\w+): (\w+) = (.+);$/);
    if (section) sections.push({ title: section[1].charAt(0).toUpperCase() + section[1].slice(1), bounds: [] });
    else if (comment) doc.push(comment[1]);
    else if (constant) {
      assert.ok(doc.length > 0, `src/limits.rs: ${constant[1]} has no /// saying why`);
      sections.at(-1).bounds.push({ name: constant[1], type: constant[2], value: constant[3], why: prose(doc) });
      doc = [];
    } else if (line.trim() === "" || line.startsWith("//")) doc = line.startsWith("//!") ? [] : doc;
    else if (/^pub const/.test(line)) assert.fail(`src/limits.rs: a bound on more than one line, which this reader cannot read: ${line}`);
  }
  return sections.filter((s) => s.bounds.length > 0);
}

function renderLimits() {
  const out = [];
  for (const { title, bounds } of limits()) {
    out.push(`### ${title}`, "", "| bound | value | why |", "|---|---|---|");
    for (const b of bounds) out.push(`| \`${b.name}\` | ${value(b.value)} | ${b.why} |`);
    out.push("");
  }
  return out.join("\n");
}

/** The string literals of a `format!(` or `"...".into()`, joined (Rust's `\` line continuations removed). */
function literal(source) {
  return [...source.matchAll(/"((?:[^"\\]|\\[\s\S])*)"/g)]
    .map((m) => m[1].replace(/\\\n\s*/g, "").replace(/\\"/g, '"'))
    .join("");
}

/** Every `BatonError::LimitExceeded` the code builds: `{ field, message, file }`. */
export function boundRefusals() {
  const found = [];
  for (const file of rustFiles()) {
    const text = read(file);
    for (const m of text.matchAll(/BatonError::LimitExceeded \{\s*field(?:: "(\w+)")?,\s*reason: format!\(\s*((?:"(?:[^"\\]|\\[\s\S])*"\s*)+)/g)) {
      found.push({ field: m[1] ?? "(the field)", message: literal(m[2]), file });
    }
  }
  return found;
}

/** Every `Baton configuration: ...` message of src/. */
export function configurationErrors() {
  const found = [];
  for (const file of rustFiles()) {
    for (const m of read(file).matchAll(/"Baton configuration: ((?:[^"\\]|\\[\s\S])*)"/g)) {
      const message = literal(`"Baton configuration: ${m[1]}"`);
      if (!found.some((f) => f.message === message)) found.push({ message, file });
    }
  }
  return found;
}

/** The helpers' error classes: `{ name, base, doc, file }`. */
export function errorClasses() {
  const found = [];
  for (const file of readdirSync(path.join(ROOT, "js")).filter((f) => f.endsWith(".mjs")).sort()) {
    const text = read(`js/${file}`);
    for (const m of text.matchAll(/\/\*\*((?:(?!\*\/)[\s\S])*)\*\/\s*\nexport class (\w+) extends (\w+)/g)) {
      if (/DurableObject|WorkerEntrypoint/.test(m[3])) continue;
      found.push({ name: m[2], base: m[3], doc: prose(m[1].split("\n").map((l) => l.replace(/^\s*\* ?/, ""))), file: `js/${file}` });
    }
  }
  return found;
}

/** The helpers' other errors: `NonRetryableError`s and `TypeError`s thrown with a `Baton`/`baton` message. */
export function helperErrors() {
  const found = [];
  for (const file of readdirSync(path.join(ROOT, "js")).filter((f) => f.endsWith(".mjs")).sort()) {
    for (const m of read(`js/${file}`).matchAll(/throw new (NonRetryableError|TypeError)\(\s*`((?:[^`\\]|\\.)*)`|throw new (NonRetryableError|TypeError)\(\s*"([^"]*)"/g)) {
      const message = (m[2] ?? m[4]).replace(/\$\{[^}]*\}/g, "…");
      if (/^[Bb]aton/.test(message)) found.push({ type: m[1] ?? m[3], message, file: `js/${file}` });
    }
  }
  return found;
}

/** Cause and remedy of each generated error, by its key; a new error fails the test until it has one. */
const REMEDIES = {
  // Refusals of a bound (BatonError: <field> ...).
  "key already has {WAITERS_PER_KEY_MAX} waiters, the most one key holds":
    "A key is being used as a work queue. Supersede (`supersedes`, coalescing) or skip (`onBusy: \"skip\"`) instead of queuing every event, or spread the work over more keys.",
  "rules would make the bucket track more than {RATE_RULE_SLOTS} rule ids (a rule id is forgotten once its grants have aged out)":
    "Calls name ever new rule ids. Keep a bucket's rule ids fixed (\"second\", \"minute\"): the id, not the numbers, is what the bucket tracks.",
  "key has {DEBOUNCE_UNFINISHED_STARTS_MAX} starts not yet confirmed by the Workflow binding, the most one key holds; try again once they are created":
    "Creates of the key's runs keep failing (see the `create_failed` decision lines): fix the Workflow binding (`WORKFLOW_BINDING`, `workflow`) and call again.",
  "params is {} bytes of JSON: a batch of it alone would be {alone} bytes, past batch.maxBytes ({})":
    "One call's `params` is larger than the batch may grow: raise `batch.maxBytes` or send less per call.",
  "params must be at most {DEBOUNCE_PARAMS_BYTES_MAX} bytes of JSON (got {})": "Send an id or a URL of the payload, not the payload.",
  "reports must be at most {REPORTS_PER_CALL_MAX} per call": "Baton's own call between its objects: a bug if you see it; report it.",
  "group already has {SERIAL_WAITERS_PER_GROUP_MAX} waiters, the most one group holds":
    "Enqueues arrive faster than the holder finishes and none supersedes another: pass `current`, or use a key with `onBusy: \"skip\"`.",
  "(the field) must be at most {bytes_max} bytes serialized (got {})":
    "A run's `result`, `error` or event `data` is too large: store it elsewhere (R2, D1) and record a reference.",
  // Configuration errors.
  "Baton configuration: TURN_EVENT_TYPE {value:?} must be 1 to {TURN_EVENT_TYPE_CHARS_MAX} letters, digits, '-' or '_', not starting with '-'":
    "Fix `TURN_EVENT_TYPE`, or remove it for the default `baton-turn`.",
  'Baton configuration: no D1 binding named "DB"':
    "Bind Baton's D1 database as `DB` (Deploying's config) and apply the migrations.",
  'Baton configuration: BATON_LOG must be "contended", "all" or "off" (got {other:?}); logging contended decisions':
    "Fix `BATON_LOG`; meanwhile Baton logs as `contended`.",
  'Baton configuration: no Workflow binding named {name:?} (set WORKFLOW_BINDING)':
    "Bind the Workflow on Baton's Worker under that name, or set `WORKFLOW_BINDING` / `WORKFLOW_BINDINGS` to the binding you have. Until then a call that needs an instance's status waits (nothing is taken on a guess).",
  'Baton configuration: no D1 binding named "DB": {e}': "As above: bind `DB`.",
  "Baton configuration: {name} must be an integer from {} to {} (got {text:?})": "Fix the variable it names; the range is in Deploying's variables table.",
  "Baton configuration: {name} must be a positive integer of milliseconds (got {text:?})": "Fix the variable it names (`SERIAL_WAITER_TIMEOUT_MS`, `SERIAL_HEARTBEAT_EXPIRY_MS`).",
  "Baton configuration: no usable Durable Object binding named {binding:?}: {error}":
    "Bind Baton's class under its fixed name (`COORDINATOR`, `DEBOUNCER`, `RATE_LIMITER`, `RUNS`, `BUSY_LIST`) on Baton's Worker.",
  "Baton configuration: BATON_LIST_VERIFY_AFTER_MS must be an integer from 1 to {LIST_VERIFY_AFTER_MS_MAX} (got {text:?})": "Fix `BATON_LIST_VERIFY_AFTER_MS`, or remove it.",
  "Baton configuration: BATON_LIST_SHARDS must be an integer from 1 to {LIST_SHARDS_MAX} (got {text:?})": "Fix `BATON_LIST_SHARDS`, or remove it.",
  // The helpers' classes.
  RunSkipped:
    "A newer revision of the group won (or this one is not `current`): there is nothing to do. Catch it (`error instanceof RunSkipped`) and return, or every skipped run ends as an errored instance.",
  SerialQueueTimedOut:
    "The run waited past `SERIAL_WAITER_TIMEOUT_MS` behind a live holder, or past `maxPolls` claims (a paused group counts). Look at the holder (`serialInspect`, the status page); raise `maxPolls` for longer pauses.",
  SerialQueueLostHold:
    "A heartbeat came later than `SERIAL_HEARTBEAT_EXPIRY_MS`, and the group went to the next run. Keep `heartbeatInterval` well below the expiry, and steps in the body shorter than it.",
  RateLimitTimeout:
    "`PermitPool.take` found the next permit further away than `maxWaitMs`. Raise `maxWaitMs`, take fewer permits, or slow the caller (it is outside a Workflow: it cannot sleep durably).",
  // The helpers' other errors.
  "baton: the debounce helpers take env.DEBOUNCER, a Durable Object namespace":
    "Pass the `DEBOUNCER` binding (a namespace), not a stub or the service binding.",
  "Baton: no permit from bucket … after … waits":
    "`withRateLimit` slept `maxWaits` times (default 1000) without getting its permits: the bucket is busier than its rules allow for this caller. Raise `maxWaits` (each wait is a step: [Costs](costs.md)), or lower the load.",
  "Baton: gave up waiting for key … after … waits":
    "`withKey` waited `maxWaits` times (default 1000, each `turnTimeout` long) without the key: a holder that never ends, or a queue far longer than the waits allow. Look at the key (`inspect`, the status page); size `maxWaits` to your plan ([Costs](costs.md)).",
  "Baton: unexpected acquire reply …": "A `baton-workflows` older or newer than the Baton Worker it calls: deploy both from one version.",
};

function remedy(key) {
  return REMEDIES[key];
}

function renderErrors() {
  const out = [];
  const missing = [];
  const row = (key, ...cells) => {
    const text = remedy(key);
    if (!text) missing.push(key);
    return `| ${cells.join(" | ")} | ${text ?? "?"} |`;
  };
  const code = (text) => `\`${text.replace(/`/g, "'").replace(/\|/g, "\\|")}\``;
  out.push("### Refusals of a bound", "", "Each is a `BatonError` (an `Error` whose message starts `BatonError:`), the call changed nothing.", "");
  out.push("| message | where | cause and remedy |", "|---|---|---|");
  for (const r of boundRefusals()) out.push(row(`${r.field} ${r.message}`, code(`BatonError: ${r.field} ${r.message}`), `\`${r.file}\``));
  out.push("", "### Configuration errors", "", "An operator's error, not the caller's: every call that needs the setting fails with it (or, for `BATON_LOG`, it is logged once).", "");
  out.push("| message | where | cause and remedy |", "|---|---|---|");
  for (const c of configurationErrors()) out.push(row(c.message, code(c.message), `\`${c.file}\``));
  out.push("", "### Helper error classes", "", "Each is exported by `baton-workflows`; test with `instanceof`.", "");
  out.push("| class | extends | what it means | cause and remedy |", "|---|---|---|---|");
  for (const c of errorClasses()) out.push(row(c.name, `\`${c.name}\``, `\`${c.base}\``, c.doc));
  out.push("", "### The helpers' other errors", "", "");
  out.push("| error | message | where | cause and remedy |", "|---|---|---|---|");
  for (const e of helperErrors()) out.push(row(e.message, `\`${e.type}\``, code(e.message), `\`${e.file}\``));
  out.push("");
  assert.deepEqual(missing, [], "errors the code gives that docs-generated.test.mjs's REMEDIES does not explain: add a cause and remedy for each");
  return out.join("\n");
}

/** Compares (or, blessed, rewrites) the generated part of `page`. */
function check(page, generated) {
  const text = read(page);
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  assert.ok(begin >= 0 && end > begin, `${page} has the markers ${BEGIN} ... ${END}`);
  const expected = `${text.slice(0, begin + BEGIN.length)}\n\n${generated}\n${text.slice(end)}`;
  if (BLESS) {
    if (expected !== text) writeFileSync(path.join(ROOT, page), expected);
    return;
  }
  assert.equal(text, expected, `${page} differs from the code: run BATON_BLESS=1 node --test tests/miniflare/docs-generated.test.mjs and review the diff`);
}

test("docs/limits.md lists every bound of src/limits.rs with its reason", () => {
  const bounds = limits().flatMap((s) => s.bounds);
  const declared = [...read("src/limits.rs").matchAll(/^pub const (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual(bounds.map((b) => b.name), declared, "every pub const of src/limits.rs is read");
  assert.ok(bounds.some((b) => b.name === "WAITERS_PER_KEY_MAX" && b.value === "20_000"));
  check("docs/limits.md", renderLimits());
});

test("docs/errors.md lists every error the code gives that can be found in it, each with cause and remedy", () => {
  assert.ok(boundRefusals().some((r) => r.message.includes("waiters, the most one key holds")), "the waiters cap is found");
  assert.ok(errorClasses().some((c) => c.name === "RunSkipped"));
  check("docs/errors.md", renderErrors());
});

test("the readers find what they look for in a sample", () => {
  const sample = [
    "//! header",
    "",
    "/// One line [`X`] says why.",
    "pub const ONE: u32 = 1_000;",
    "// --- part two ---",
    "/// Two.",
    "pub const TWO: u64 = 64 * 1024;",
  ].join("\n");
  assert.deepEqual(limits(sample), [
    { title: "Identifiers, the platform and the wire", bounds: [{ name: "ONE", type: "u32", value: "1_000", why: "One line `X` says why." }] },
    { title: "Part two", bounds: [{ name: "TWO", type: "u64", value: "64 * 1024", why: "Two." }] },
  ]);
  assert.throws(() => limits("pub const BARE: u32 = 1;"), /has no \/\/\/ saying why/);
  assert.equal(literal('"a \\\n   b {X}" "c"'), "a b {X}c");
});
