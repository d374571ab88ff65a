// Baton's Worker with its SQL statements recorded, for bench/profile.mjs's
// split of a call (issue 29): the deployed module (js/worker.mjs) as it is,
// except that the Coordinator's class marks where each call starts and
// every `storage.sql.exec` of the isolate is noted (its text and bindings)
// before it runs. bench/statements.mjs replays the log natively to time
// each statement and trigger. Bench only: the deployed Worker is
// js/worker.mjs, untouched; nothing here changes what a call does.
import { Coordinator as Deployed } from "../js/worker.mjs";

export * from "../js/worker.mjs";
export { default } from "../js/worker.mjs";

/** Most entries kept between two reads of the log (a bound on memory). */
const LOG_ENTRIES_MAX = 200_000;
const log = [];
const note = (entry) => {
  if (log.length < LOG_ENTRIES_MAX) log.push(entry);
};

/** Each object's SqlStorage → the object's id, so the log says whose database a statement ran on. */
const objectOf = new WeakMap();
let patched = false;
/**
 * Notes every statement run through `sql` (the isolate's SqlStorage): the
 * prototype's `exec` wrapped once, so the Rust store, which calls `exec`
 * as a method, goes through it.
 */
function traceStatements(sql) {
  if (patched) return;
  patched = true;
  const prototype = Object.getPrototypeOf(sql);
  const exec = prototype.exec;
  prototype.exec = function (query, ...bindings) {
    note({ object: objectOf.get(this) ?? "?", sql: String(query), bindings });
    return exec.call(this, query, ...bindings);
  };
}

export class Coordinator extends Deployed {
  #object;

  constructor(ctx, env) {
    traceStatements(ctx.storage.sql);
    objectOf.set(ctx.storage.sql, ctx.id.toString());
    super(ctx, env);
    this.#object = ctx.id.toString();
  }

  enqueue(...args) {
    note({ object: this.#object, call: "enqueue", key: args[0] });
    return super.enqueue(...args);
  }

  acquire(...args) {
    note({ object: this.#object, call: "acquire", key: args[0] });
    return super.acquire(...args);
  }

  release(...args) {
    note({ object: this.#object, call: "release", key: args[0] });
    return super.release(...args);
  }

  alarm(...args) {
    note({ object: this.#object, call: "alarm" });
    return super.alarm(...args);
  }

  /** The log since the last read (calls and statements in order), emptied. */
  statementLog() {
    return log.splice(0);
  }
}
