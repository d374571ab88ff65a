// The rate limiter's baselines for the bench, as plain JavaScript Durable
// Objects with Baton's acquire signature:
//
// - `JsExactRateLimiter`: the same exact sliding window, over the object's
//   SQLite, written the way one would by hand: a row per grant and rule,
//   a window's use summed with an index on (rule, time), aged rows deleted.
// - `FixedWindowRateLimiter`: the seed's algorithm (reference 001): per rule
//   a window start and a count in memory, reset when a window has passed.
//   Not exact (a burst at a window's edge can double the rate) and not
//   durable (an eviction forgets it); measured only to show what those
//   shortcuts buy.
import { DurableObject } from "cloudflare:workers";

export class JsExactRateLimiter extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    this.sql.exec("CREATE TABLE IF NOT EXISTS grants (rule TEXT NOT NULL, at INTEGER NOT NULL, permits INTEGER NOT NULL)");
    this.sql.exec("CREATE INDEX IF NOT EXISTS grants_by_rule ON grants (rule, at)");
  }

  acquire(bucket, { rules, permits = 1 }) {
    const now = Date.now();
    const used = rules.map(
      (r) => this.sql.exec("SELECT COALESCE(SUM(permits), 0) AS n FROM grants WHERE rule = ? AND at > ?", r.id, now - r.windowMs).one().n,
    );
    const free = Math.min(permits, ...rules.map((r, i) => Math.max(0, r.limit - used[i])));
    if (free > 0) {
      for (const r of rules) {
        this.sql.exec("INSERT INTO grants (rule, at, permits) VALUES (?, ?, ?)", r.id, now, free);
        this.sql.exec("DELETE FROM grants WHERE rule = ? AND at <= ?", r.id, now - r.windowMs);
      }
      return { granted: free, waitMs: 0 };
    }
    // The next free time of each full rule: when enough of its oldest
    // grants have left the window.
    let freeAt = now;
    rules.forEach((r, i) => {
      let excess = used[i] - r.limit + 1;
      if (excess <= 0) return;
      for (const row of this.sql.exec("SELECT at, permits FROM grants WHERE rule = ? AND at > ? ORDER BY at", r.id, now - r.windowMs)) {
        excess -= row.permits;
        if (excess <= 0) {
          freeAt = Math.max(freeAt, row.at + r.windowMs);
          break;
        }
      }
    });
    return { granted: 0, waitMs: freeAt - now };
  }
}

export class FixedWindowRateLimiter extends DurableObject {
  windows = new Map();

  acquire(bucket, { rules, permits = 1 }) {
    const now = Date.now();
    let granted = permits;
    let waitMs = 0;
    const states = rules.map((r) => {
      let state = this.windows.get(r.id);
      if (!state || now - state.start >= r.windowMs) {
        state = { start: now, count: 0 };
        this.windows.set(r.id, state);
      }
      const left = r.limit - state.count;
      granted = Math.min(granted, Math.max(0, left));
      if (left <= 0) waitMs = Math.max(waitMs, state.start + r.windowMs - now);
      return state;
    });
    if (granted <= 0) return { granted: 0, waitMs };
    for (const state of states) state.count += granted;
    return { granted, waitMs: 0 };
  }
}
