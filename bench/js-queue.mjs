// The P2 baseline: the serial queue as a user would write it by hand in a
// plain JavaScript Worker over D1, with push wake-ups. Same methods and
// replies as Baton's `serial*` (so `serialize` drives it unchanged), same
// table shape, and what a careful user writes: a conditional UPDATE for the
// claim, each call one D1 batch, the release waking the first waiter with
// sendEvent. It leaves out what Baton adds for safety (status checks that
// skip dead waiters, the waiter bound, timeouts, pruning, input checks).
import { WorkerEntrypoint } from "cloudflare:workers";

// Its table: bench/js-queue.sql, applied by the bench when it starts.
const EXPIRY_MS = 600_000;

export default class JsQueue extends WorkerEntrypoint {
  async serialEnqueue({ group, instanceId, revision }) {
    const db = this.env.DB;
    const now = Date.now();
    const [, superseded] = await db.batch([
      db.prepare("INSERT INTO q (grp, id, rev, state, enqueued_at) VALUES (?1, ?2, ?3, 'waiting', ?4) ON CONFLICT DO NOTHING")
        .bind(group, instanceId, revision, now),
      db.prepare(
        "UPDATE q SET state = 'superseded', by_id = ?2, by_rev = ?3 WHERE grp = ?1 AND state = 'waiting' AND id <> ?2 " +
          "AND seq < (SELECT seq FROM q WHERE grp = ?1 AND id = ?2) RETURNING id",
      ).bind(group, instanceId, revision),
    ]);
    const ids = superseded.results.map((r) => r.id);
    for (const id of ids) await this.#wake(id, group);
    return { status: "waiting", superseded: ids };
  }

  async serialClaim({ group, instanceId }) {
    const db = this.env.DB;
    const now = Date.now();
    const [, rows] = await db.batch([
      db.prepare(
        "UPDATE q SET state = 'holding', heartbeat_at = ?3 WHERE grp = ?1 AND id = ?2 AND state = 'waiting' " +
          "AND NOT EXISTS (SELECT 1 FROM q WHERE grp = ?1 AND state = 'holding' AND heartbeat_at >= ?4)",
      ).bind(group, instanceId, now, now - EXPIRY_MS),
      db.prepare("SELECT id, state, by_id, by_rev FROM q WHERE grp = ?1 AND (id = ?2 OR state = 'holding') LIMIT 2")
        .bind(group, instanceId),
    ]);
    const me = rows.results.find((r) => r.id === instanceId);
    if (me?.state === "holding") return { status: "holding" };
    if (me?.state === "superseded") {
      return { status: "skipped", supersededBy: { instanceId: me.by_id, revision: me.by_rev } };
    }
    return { status: "waiting", holder: rows.results.find((r) => r.state === "holding")?.id ?? null };
  }

  async serialHeartbeat({ group, instanceId }) {
    const result = await this.env.DB.prepare(
      "UPDATE q SET heartbeat_at = ?3 WHERE grp = ?1 AND id = ?2 AND state = 'holding'",
    ).bind(group, instanceId, Date.now()).run();
    return { holding: result.meta.changes === 1 };
  }

  async serialRelease({ group, instanceId }) {
    const db = this.env.DB;
    const [released, next] = await db.batch([
      db.prepare("UPDATE q SET state = 'released' WHERE grp = ?1 AND id = ?2 AND state = 'holding'").bind(group, instanceId),
      db.prepare("SELECT id FROM q WHERE grp = ?1 AND state = 'waiting' ORDER BY seq LIMIT 1").bind(group),
    ]);
    const id = released.meta.changes === 1 ? next.results[0]?.id : undefined;
    if (!id) return { next: null };
    await this.#wake(id, group);
    return { next: id };
  }

  async serialInspect({ group }) {
    const holder = await this.env.DB.prepare("SELECT id FROM q WHERE grp = ?1 AND state = 'holding'").bind(group).first();
    return { holder: holder ? { instanceId: holder.id } : null };
  }

  async #wake(id, group) {
    try {
      await (await this.env.WORKFLOW.get(id)).sendEvent({ type: "baton-turn", payload: { group } });
    } catch {
      // A waiter that misses the event claims at its next poll.
    }
  }
}
