// Idempotent runs (contract §6), for Workers and for Workflow code.
//
// A Worker starts a unit of work once, however many callers ask for it:
// `startOnce` claims the run key for a fresh instance id and creates the
// instance only if it won the claim; every other caller learns the
// claimant's id. `awaitRun` long-polls the key until the run has an outcome.
//
// The Workflow reports its progress events and its outcome in steps
// (`runReporter`, `reportRun`), so that a retried step never records twice:
// the outcome is recorded once by the object itself, and an event step first
// looks for the event an earlier attempt of the same step may have appended.
import { batonSteps } from "./steps.mjs";

/** Longest single long-poll the object accepts (contract: 0 to 30000 ms). */
const WAIT_MS_MAX = 30_000;

const STEP_RETRIES = { limit: 5, delay: "1 second", backoff: "exponential" };

/**
 * The run's object, as a function giving a fresh stub for every call: once
 * a stub has thrown (the object was reset: a deploy, an overload), every
 * later call on it throws too, so a retried step or a later poll must not
 * reuse it.
 */
function runStub(runs, key) {
  return () => runs.get(runs.idFromName(key));
}

/** A fresh Workflow instance id: letters, digits, `-` and `_`, at most 100. */
function newInstanceId(prefix) {
  return `${prefix}${crypto.randomUUID()}`;
}

/**
 * `create` with an id already in use counts as done: a retried start (or a
 * claimant re-claiming its own key) must not fail on its own instance.
 */
function alreadyExists(error) {
  return /already[ _]?exists/i.test(String(error?.message ?? error));
}

/**
 * Claims `key` for a new instance and creates it if the claim was won.
 *
 * @returns {Promise<{ instanceId: string, started: boolean }>} `started`:
 *   this call created the instance; otherwise `instanceId` is the claimant's.
 */
export async function startOnce(runs, workflow, key, params, options = {}) {
  const instanceId = options.instanceId ?? newInstanceId(options.idPrefix ?? "run-");
  const claim = { instanceId };
  if (options.workflow !== undefined) claim.workflow = options.workflow;
  const reply = await runStub(runs, key)().claim(key, claim);
  if (!reply.claimed) {
    return { instanceId: reply.instanceId, started: false };
  }
  // A failure here leaves the claim with an instance that does not exist:
  // once the grace after the claim is over it counts as dead, and the next
  // claim takes the key. Retrying with the same `options.instanceId` is the
  // quicker way back.
  try {
    await workflow.create({ id: instanceId, params });
  } catch (error) {
    if (!alreadyExists(error)) throw error;
  }
  return { instanceId, started: true };
}

/**
 * Waits until the run under `key` has an outcome, or `timeoutMs` (default
 * 60000) has passed, in long-polls of at most 30 s each.
 *
 * @returns the run as `await` answers it: `{ state, instanceId?, result?, error? }`.
 */
export async function awaitRun(runs, key, options = {}) {
  const stub = runStub(runs, key);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    const left = Math.max(0, deadline - Date.now());
    const view = await stub().await(key, { timeoutMs: Math.min(left, WAIT_MS_MAX) });
    if (view.state === "complete" || view.state === "failed" || left === 0) return view;
  }
}

// Step names carry the key; a long key is shortened (with a hash, so two
// long keys still differ) to keep names small.
const STEP_KEY_CHARS_MAX = 64;

function stepTag(key) {
  if (key.length <= STEP_KEY_CHARS_MAX) return key;
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash = Math.imul(hash ^ key.charCodeAt(i), 0x01000193);
  }
  return `${key.slice(0, 32)}~${(hash >>> 0).toString(36)}`;
}

/**
 * The claimant's reporter for the run under `key`: `event(type, data?)`
 * appends a progress event, `complete(result?)` and `fail(error)` record
 * the outcome, each in a durable step.
 *
 * Report events one at a time (await each): an event step knows its event
 * by its place after the previous one.
 */
export function runReporter(step, runs, key, instanceId, options = {}) {
  const stub = runStub(runs, key);
  const call = batonSteps(step, options.stepRetries ?? STEP_RETRIES);
  const tag = stepTag(String(key));
  let cursor; // the seq after which this instance's next event goes
  let reported = 0;

  async function latestSeq() {
    // `after` at the top: no event is read, only the log's ends.
    const reply = await stub().events(key, { after: Number.MAX_SAFE_INTEGER, limit: 1, timeoutMs: 0 });
    return reply.latestSeq;
  }

  const outcome = (name, fields) =>
    call(`baton run ${name} ${tag}`, async () => {
      const { recorded } = await stub().complete(key, { instanceId, ...fields });
      return recorded;
    });

  return {
    async event(type, data) {
      cursor ??= await call(`baton run cursor ${tag}`, latestSeq);
      reported += 1;
      const after = cursor;
      cursor = await call(`baton run event ${tag} #${reported}`, async () => {
        // Only the claimant appends and its events go one at a time, so an
        // event right after the cursor is this step's, from an attempt whose
        // reply was lost: do not append it again.
        const seen = await stub().events(key, { after, limit: 1, timeoutMs: 0 });
        if (seen.events[0]?.seq === after + 1) return after + 1;
        const request = { instanceId, type };
        if (data !== undefined) request.data = data;
        return (await stub().append(key, request)).seq;
      });
      return cursor;
    },

    /** Records `complete` with `result`; true if this call recorded it. */
    complete(result) {
      return outcome("complete", result === undefined ? {} : { result });
    },

    /** Records `failed` with `error`; true if this call recorded it. */
    fail(error) {
      return outcome("failed", { error: String(error) });
    },
  };
}

/**
 * Runs `body(report)` as the run's claimant and records its outcome: its
 * return value as `result`, or, if it throws, the error's message as
 * `error` (the error is then rethrown).
 */
export async function reportRun(step, runs, key, instanceId, body, options = {}) {
  const report = runReporter(step, runs, key, instanceId, options);
  let result;
  try {
    result = await body(report);
  } catch (error) {
    await report.fail(error?.message ?? error);
    throw error;
  }
  await report.complete(result);
  return result;
}
