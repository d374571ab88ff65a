// The bench's baseline: the Coordinator a user would write in plain
// JavaScript instead of using Baton. A SQLite-backed Durable Object with the
// same two-phase acquire (decide under the input gate with synchronous SQL;
// when someone holds the key, ask the Workflow binding about the holder
// outside it; decide again on the state as it is then) and the same
// release (hand the key to the earliest waiter and send it the turn
// event). One holder per key, FIFO waiters; no superseding, coalescing,
// limits, grace or alarm, and no decision log: the least a correct
// version does, so the comparison favours the baseline.
import { DurableObject } from "cloudflare:workers";

const TURN_EVENT_TYPE = "baton-turn";

export class PlainCoordinator extends DurableObject {
  #reads = 0;
  #writes = 0;

  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS holders (key TEXT PRIMARY KEY, id TEXT NOT NULL, since INTEGER NOT NULL)",
    );
    this.sql.exec(
      "CREATE TABLE IF NOT EXISTS waiters (key TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL, " +
        "since INTEGER NOT NULL, PRIMARY KEY (key, id))",
    );
    this.sql.exec("CREATE UNIQUE INDEX IF NOT EXISTS waiters_order ON waiters (key, seq)");
  }

  #one(query, ...params) {
    this.#reads++;
    return this.sql.exec(query, ...params).toArray()[0] ?? null;
  }

  #run(query, ...params) {
    this.#writes++;
    this.sql.exec(query, ...params);
  }

  #firstWaiter(key) {
    return this.#one("SELECT id FROM waiters WHERE key = ? ORDER BY seq LIMIT 1", key);
  }

  /**
   * One synchronous decision: "granted", or the holder to check. A holder
   * reported dead (`dead`) loses the key only if it still holds it.
   */
  #decide(key, id, dead) {
    let holder = this.#one("SELECT id FROM holders WHERE key = ?", key);
    if (holder?.id === id) return { reply: "granted" };
    if (holder && holder.id === dead) {
      this.#run("DELETE FROM holders WHERE key = ?", key);
      holder = null;
    }
    if (!holder) {
      const first = this.#firstWaiter(key);
      if (!first || first.id === id) {
        if (first) this.#run("DELETE FROM waiters WHERE key = ? AND id = ?", key, id);
        this.#run("INSERT INTO holders (key, id, since) VALUES (?, ?, ?)", key, id, Date.now());
        return { reply: "granted" };
      }
      // The earliest waiter's turn: hand it the key and let its acquire confirm.
      this.#run("DELETE FROM waiters WHERE key = ? AND id = ?", key, first.id);
      this.#run("INSERT INTO holders (key, id, since) VALUES (?, ?, ?)", key, first.id, Date.now());
      holder = first;
    }
    if (!this.#one("SELECT 1 AS one FROM waiters WHERE key = ? AND id = ?", key, id)) {
      this.#run(
        "INSERT INTO waiters (key, seq, id, since) VALUES (?, " +
          "(SELECT COALESCE(MAX(seq), 0) + 1 FROM waiters WHERE key = ?), ?, ?)",
        key,
        key,
        id,
        Date.now(),
      );
    }
    return { check: holder.id };
  }

  /**
   * With the bench Worker's `PLAIN_LOG = "all"`, one JSON line per call, as
   * Baton prints with `BATON_LOG=all` (P3's logged comparison).
   */
  #log(key, instance, decision) {
    if (this.env.PLAIN_LOG === "all") console.log(JSON.stringify({ plain: "decision", key, instance, decision }));
  }

  async acquire(key, instanceId) {
    const first = this.#decide(key, instanceId, null);
    if (first.reply) {
      this.#log(key, instanceId, first.reply);
      return first.reply;
    }
    const dead = await this.#isDead(first.check);
    const second = this.#decide(key, instanceId, dead ? first.check : null);
    this.#log(key, instanceId, second.reply ?? "pending");
    return second.reply ?? "pending";
  }

  async release(key, instanceId) {
    const holder = this.#one("SELECT id FROM holders WHERE key = ?", key);
    if (holder?.id !== instanceId) {
      this.#run("DELETE FROM waiters WHERE key = ? AND id = ?", key, instanceId);
      return { next: null };
    }
    const next = this.#firstWaiter(key);
    if (!next) {
      this.#run("DELETE FROM holders WHERE key = ?", key);
      this.#log(key, instanceId, "released");
      return { next: null };
    }
    this.#run("DELETE FROM waiters WHERE key = ? AND id = ?", key, next.id);
    this.#run("UPDATE holders SET id = ?, since = ? WHERE key = ?", next.id, Date.now(), key);
    try {
      await (await this.env.BENCH_WF.get(next.id)).sendEvent({ type: TURN_EVENT_TYPE, payload: { key } });
    } catch {
      // Its own re-check (the turn-event timeout) recovers a lost event.
    }
    return { next: next.id };
  }

  async #isDead(id) {
    try {
      const { status } = await (await this.env.BENCH_WF.get(id)).status();
      return ["complete", "errored", "terminated"].includes(status);
    } catch (error) {
      return /not.?found/i.test(String(error?.message ?? error));
    }
  }

  /** What the bench waits on: the holder and the waiters in order (no part of a user's version). */
  inspect(key) {
    const holder = this.sql.exec("SELECT id FROM holders WHERE key = ?", key).toArray()[0] ?? null;
    const waiting = this.sql.exec("SELECT id FROM waiters WHERE key = ? ORDER BY seq LIMIT 1000", key).toArray();
    return { holder, waiting };
  }

  storageWork() {
    return { reads: this.#reads, writes: this.#writes };
  }
}
