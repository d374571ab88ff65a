// The engine's floors under the hot calls (issue 29), as Durable Objects in
// a Worker of their own ("floors" in bench/miniflare.mjs), reached from the
// bench Worker as Baton's objects are: a Durable Object of another script.
//
// - `RpcFloor`: constant replies of the right shape, no storage. What the
//   RPC into an object and back costs, and nothing else.
// - `DurableFloor`: the least a lock that survives a restart can do per
//   call, one SQL write, then the same constant reply: acquire inserts the
//   holder, release deletes it, enqueue inserts a waiter, a rate acquire
//   inserts its grant. Every write waits for its commit before the reply
//   leaves (the output gate), as Baton's do.
//
// Both answer the shapes of Baton's calls, so the bench Worker's loops
// (bench/worker.mjs) drive them unchanged: `acquire(key, instanceId,
// options?)` as the Coordinator's ("granted", or with `{ grant: true }`, as
// withKey asks, the grant object), `acquire(bucket, { rules, permits })` as
// the RateLimiter's ({ granted, waitMs }), told apart by the second
// argument's type; `release` ({ next: null }); `enqueue` ({ terminated: [] }).
import { DurableObject } from "cloudflare:workers";

/** The RateLimiter's reply to a granted acquire of `options.permits`. */
const rateGrant = (options) => ({ granted: options?.permits ?? 1, waitMs: 0 });

/** The Coordinator's reply to an uncontended acquire asked with `options` (contract §1b). */
const keyGrant = (options) => (options?.grant === true ? { status: "granted", fence: 1 } : "granted");

export class RpcFloor extends DurableObject {
  acquire(key, second, options) {
    return typeof second === "string" ? keyGrant(options) : rateGrant(second);
  }

  release() {
    return { next: null };
  }

  enqueue() {
    return { terminated: [] };
  }

  /** Nothing to clear: the bench's clean-up after a batch of enqueues. */
  clear() {
    return 0;
  }

  storageWork() {
    return { reads: 0, writes: 0 };
  }
}

export class DurableFloor extends DurableObject {
  #writes = 0;

  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS holders (key TEXT NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (key, id))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS waiters (key TEXT NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (key, id))");
    this.sql.exec("CREATE TABLE IF NOT EXISTS grants (seq INTEGER PRIMARY KEY, at INTEGER NOT NULL, permits INTEGER NOT NULL)");
  }

  #write(query, ...params) {
    this.#writes++;
    this.sql.exec(query, ...params);
  }

  acquire(key, second, options) {
    if (typeof second !== "string") {
      const reply = rateGrant(second);
      this.#write("INSERT INTO grants (at, permits) VALUES (?, ?)", Date.now(), reply.granted);
      return reply;
    }
    this.#write("INSERT OR REPLACE INTO holders (key, id, since) VALUES (?, ?, ?)", key, second, Date.now());
    return keyGrant(options);
  }

  release(key, instanceId) {
    this.#write("DELETE FROM holders WHERE key = ? AND id = ?", key, instanceId);
    return { next: null };
  }

  enqueue(key, supersedes, instanceId) {
    this.#write("INSERT OR REPLACE INTO waiters (key, id, since) VALUES (?, ?, ?)", key, instanceId, Date.now());
    return { terminated: [] };
  }

  /** The bench's clean-up after a batch of enqueues (untimed): the waiters but the first `keep`. */
  clear(key, keep) {
    this.sql.exec(
      "DELETE FROM waiters WHERE key = ? AND rowid NOT IN (SELECT rowid FROM waiters WHERE key = ? ORDER BY since, rowid LIMIT ?)",
      key,
      key,
      keep,
    );
    return this.sql.exec("SELECT COUNT(*) AS n FROM waiters WHERE key = ?", key).one().n;
  }

  storageWork() {
    return { reads: 0, writes: this.#writes };
  }
}

/**
 * Baton's own storage work without Baton (bench/split.mjs): statements a
 * Coordinator ran in workerd (bench/traced-worker.mjs's log), run again
 * here from JS, call by call, on this object's SQLite: the schema and the
 * calls before the measured ones by `setup`, then each measured call's
 * statements by `run`, one RPC per call, as Baton's object would. A
 * `variant` changes a trigger after the setup (bench/statements.mjs's
 * TRIGGER_VARIANTS), to time what the trigger costs here.
 */
export class ReplayFloor extends DurableObject {
  setup(statements, variantSql = []) {
    for (const { sql, bindings } of statements) this.ctx.storage.sql.exec(sql, ...bindings);
    for (const sql of variantSql) this.ctx.storage.sql.exec(sql);
    return statements.length;
  }

  run(statements) {
    for (const { sql, bindings } of statements) this.ctx.storage.sql.exec(sql, ...bindings).toArray();
    return "ok";
  }
}

export default {
  fetch() {
    return new Response("the bench's floors Worker", { status: 404 });
  },
};
