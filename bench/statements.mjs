// The SQL part of a call's split (issue 29): the statements Baton's
// Coordinator ran in workerd, as bench/traced-worker.mjs recorded them
// (each object's schema, then each call and its statements, with their
// bindings), replayed natively on Node's SQLite (node:sqlite), one
// in-memory database per object, to time each statement; and replayed
// again with a trigger changed, to time what the trigger costs. Workerd's
// SQLite is another build of the same engine, so these are the engine's
// work per statement without the runtime around it; the commit is timed by
// the durable floor (bench/floors.mjs), not here.
import { median } from "./stats.mjs";

/** Node's SQLite, loaded when first needed (Node warns that it is experimental when it loads). */
let DatabaseSync;

/**
 * The trigger variants replayed against the schema as deployed, each
 * naming the triggers it needs (a variant whose triggers the schema no
 * longer has is skipped, so the tool outlives a schema change) and the
 * statements that make it, run on each object's database before its first
 * call.
 */
export const TRIGGER_VARIANTS = [
  {
    name: "the hold-time trigger (coordinator_holders_ended) without the hold time (its fence, grant and delete kept)",
    short: "hold-time append",
    needs: ["coordinator_holders_ended", "coordinator_holders_gone"],
    sql: [
      "DROP TRIGGER coordinator_holders_ended",
      "CREATE TRIGGER coordinator_holders_ended AFTER UPDATE OF ended_ms ON coordinator_holders " +
        "WHEN new.ended_ms IS NOT NULL BEGIN " +
        "INSERT INTO coordinator_keys (key, fence, grants) VALUES (new.key, new.fence, 1) " +
        "ON CONFLICT(key) DO UPDATE SET fence = max(COALESCE(fence, 0), excluded.fence), grants = grants + 1; " +
        "DELETE FROM coordinator_holders WHERE key = new.key AND id = new.id; END",
    ],
  },
  {
    name: "without the waiter rows' triggers (their tenant's count and, since v12, the key's: coordinator_waiters_joined, coordinator_waiters_left)",
    short: "tenants triggers",
    needs: ["coordinator_waiters_joined", "coordinator_waiters_left"],
    sql: ["DROP TRIGGER coordinator_waiters_joined", "DROP TRIGGER coordinator_waiters_left"],
  },
];

/** Replays of the whole log per variant; statement times are medians over them. */
export const REPLAYS = 9;

/**
 * The log as calls: `{ object, call, key, statements: [{ sql, bindings }] }`,
 * each call with the statements that ran after it started and before the
 * next call; `setup` per object, the statements before its first call (its
 * schema).
 */
export function callsOf(log) {
  const calls = [];
  const setup = new Map();
  const current = new Map();
  for (const entry of log) {
    if (entry.call) {
      const call = { object: entry.object, call: entry.call, key: entry.key, statements: [] };
      calls.push(call);
      current.set(entry.object, call);
    } else if (current.has(entry.object)) {
      current.get(entry.object).statements.push(entry);
    } else {
      if (!setup.has(entry.object)) setup.set(entry.object, []);
      setup.get(entry.object).push(entry);
    }
  }
  return { calls, setup };
}

/** A statement's rows stepped as the object's store steps them (all of them). */
function runStatement(db, prepared, { sql, bindings }) {
  let statement = prepared.get(sql);
  if (!statement) {
    statement = db.prepare(sql);
    prepared.set(sql, statement);
  }
  const started = process.hrtime.bigint();
  statement.all(...bindings);
  return Number(process.hrtime.bigint() - started) / 1000;
}

/** Triggers the database has now. */
const triggersIn = (db) => new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all().map((r) => r.name));

/**
 * One replay of the log with `variant` (or as deployed): each object's
 * statements in order, the variant's changes made on an object's database
 * before the first call that finds its schema complete (an object migrates
 * in its first call). µs of each statement, by call (the same shape as
 * `calls`), and the triggers the schema has.
 */
function replay({ calls, setup }, variant) {
  const dbs = new Map();
  const open = (object) => {
    if (dbs.has(object)) return dbs.get(object);
    const db = new DatabaseSync(":memory:");
    const prepared = new Map();
    for (const s of setup.get(object) ?? []) db.prepare(s.sql).all(...s.bindings);
    const entry = { db, prepared, varied: !variant };
    dbs.set(object, entry);
    return entry;
  };
  let triggers = new Set();
  const times = calls.map((call) => {
    const entry = open(call.object);
    if (!entry.varied) {
      const present = triggersIn(entry.db);
      if (variant.needs.every((t) => present.has(t))) {
        for (const sql of variant.sql) entry.db.exec(sql);
        entry.prepared.clear();
        entry.varied = true;
      }
    }
    return call.statements.map((s) => runStatement(entry.db, entry.prepared, s));
  });
  for (const { db } of dbs.values()) {
    if (!variant) triggers = triggersIn(db);
    db.close();
  }
  return { times, triggers };
}

/** A statement's text shortened for a table: its first words, whitespace folded. */
export const shortSql = (sql) => {
  const folded = sql.replace(/\s+/g, " ").trim();
  return folded.length > 90 ? `${folded.slice(0, 87)}...` : folded;
};

/**
 * Per scenario (`scenarioOf(call)` names it, or null to leave the call
 * out), the statements one call runs, each with its median µs as deployed
 * and under each trigger variant, and the call's total. Variants are
 * replayed in turn, REPLAYS times each, alternating.
 */
export async function timeStatements(log, scenarioOf) {
  ({ DatabaseSync } = await import("node:sqlite"));
  const parsed = callsOf(log);
  const { triggers } = replay(parsed, null);
  const variants = [null, ...TRIGGER_VARIANTS.filter((v) => v.needs.every((t) => triggers.has(t)))];
  const runs = variants.map(() => []);
  for (let r = 0; r < REPLAYS; r++) {
    variants.forEach((variant, v) => runs[v].push(replay(parsed, variant).times));
  }
  const scenarios = new Map();
  parsed.calls.forEach((call, c) => {
    const scenario = scenarioOf(call);
    if (!scenario) return;
    if (!scenarios.has(scenario)) scenarios.set(scenario, { calls: 0, statements: new Map(), totals: variants.map(() => []) });
    const s = scenarios.get(scenario);
    s.calls += 1;
    call.statements.forEach((statement, i) => {
      if (!s.statements.has(statement.sql)) s.statements.set(statement.sql, { runs: 0, times: variants.map(() => []) });
      const entry = s.statements.get(statement.sql);
      entry.runs += 1;
      variants.forEach((_, v) => {
        for (const times of runs[v]) entry.times[v].push(times[c][i]);
      });
    });
    variants.forEach((_, v) => {
      for (const times of runs[v]) s.totals[v].push(times[c].reduce((a, b) => a + b, 0));
    });
  });
  const result = {};
  for (const [name, s] of scenarios) {
    result[name] = {
      calls: s.calls,
      statementsPerCall: [...s.statements.values()].reduce((a, e) => a + e.runs, 0) / s.calls,
      totalUs: Object.fromEntries(variants.map((v, i) => [v?.short ?? "deployed", median(s.totals[i])])),
      statements: [...s.statements].map(([sql, e]) => ({
        sql: shortSql(sql),
        perCall: e.runs / s.calls,
        us: Object.fromEntries(variants.map((v, i) => [v?.short ?? "deployed", median(e.times[i])])),
      })),
    };
  }
  return { variants: variants.filter(Boolean).map((v) => ({ short: v.short, name: v.name })), scenarios: result };
}
