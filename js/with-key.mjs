// withKey: run a piece of a Workflow while holding a Baton key.
//
// Every decision is a durable step and every wait is `step.waitForEvent`, so
// a waiting instance uses no compute and a replay after a restart takes the
// same path. The instance registers with `grant` (contract §1b): when Baton
// hands it the key it sends the grant itself, with the fence, on an event
// type of this registration's own (the `turn` of the pending reply), so the
// wait's return is the grant and no acquire follows it. A section costs two
// Baton steps when the key is free (acquire, release) and three when it
// waits once (acquire, the wait, release). A wait that times out re-checks
// with one acquire, so a lost event costs one timeout; an id registered
// without `grant` (by an earlier `enqueue`) is woken with TURN_EVENT_TYPE
// and acquires after the wait, as in §1.
//
// With `also` (contract §1e) a section holds further keys of the same
// Coordinator namespace at once: every key is taken in one global order
// (sorted by UTF-8 bytes, whichever is the section's own), each by its own
// grant with its own fence, registering on a key only on reaching it, so
// two sections never wait on each other in a circle. Every key taken (or
// waited for) is released on every exit, in the reverse order.
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps, stepTag } from "./steps.mjs";
import { batonError } from "./options.mjs";

/** Default event type Baton sends to an instance registered without `grant`. */
export const TURN_EVENT_TYPE = "baton-turn";

const DEFAULTS = {
  turnTimeout: "10 minutes",
  // 10 minutes x 1000 waits is about a week: past that the Workflow
  // is stuck for a reason no amount of waiting fixes.
  maxWaits: 1000,
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" },
};

/**
 * The Coordinator's options for this instance's calls: the binding of its
 * Workflow and the key's limit (contract §1a), `grant` (§1b), and its
 * priority, tenant and what to do when the key is busy (§1c).
 */
export function keyOptions({ workflow, limit, priority, tenant, onBusy, maxWaiting }) {
  const options = { grant: true };
  if (maxWaiting !== undefined) options.maxWaiting = maxWaiting;
  if (workflow !== undefined) options.workflow = workflow;
  if (limit !== undefined) options.limit = limit;
  if (priority !== undefined) options.priority = priority;
  if (tenant !== undefined) options.tenant = tenant;
  if (onBusy !== undefined) options.onBusy = onBusy;
  return options;
}

/** The grant a turn event carries, if it is one for this registration. */
function grantOf(event, key, instanceId) {
  const payload = event?.payload;
  if (payload?.status !== "granted" || !Number.isSafeInteger(payload.fence)) return undefined;
  if (payload.key !== key || payload.instanceId !== instanceId) return undefined;
  return { status: "granted", fence: payload.fence };
}

/** Contract §1e: at most this many further keys per section. */
const ALSO_MAX = 4;
/** A key is at most this many UTF-8 bytes (the contract's identifiers). */
const KEY_BYTES_MAX = 512;

const utf8 = new TextEncoder();

/** Orders keys by their UTF-8 bytes (§1e's one global order). */
export function byUtf8(a, b) {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

/**
 * Every key the section takes, in the order it takes them: `{ key,
 * options }`, the section's own key with the section's options, each of
 * `also` with its own `limit`, `priority` and `tenant` (and the section's
 * `workflow` and `onBusy`). Refuses a bad `also` by name, before any call.
 */
export function sectionKeys(key, settings) {
  const own = { key, own: true, options: keyOptions(settings) };
  const also = settings.also;
  if (also === undefined) return [own];
  if (!Array.isArray(also) || also.length < 1 || also.length > ALSO_MAX) {
    throw batonError("also", `must be an array of 1 to ${ALSO_MAX} keys`);
  }
  const seen = new Set([key]);
  const entries = also.map((entry, i) => {
    const field = `also[${i}]`;
    if (entry === null || typeof entry !== "object") throw batonError(field, "must be an object { key, limit?, priority?, tenant? }");
    for (const name of Object.keys(entry)) {
      if (!["key", "limit", "priority", "tenant"].includes(name)) throw batonError(`${field}.${name}`, "is not an option of an also key");
    }
    const k = entry.key;
    if (typeof k !== "string" || k.length === 0 || utf8.encode(k).length > KEY_BYTES_MAX) {
      throw batonError(`${field}.key`, `must be a non-empty string of at most ${KEY_BYTES_MAX} UTF-8 bytes`);
    }
    if (seen.has(k)) throw batonError(`${field}.key`, `must differ from the section's key and the other also keys (${JSON.stringify(k)})`);
    seen.add(k);
    const { limit, priority, tenant } = entry;
    return { key: k, own: false, options: keyOptions({ workflow: settings.workflow, onBusy: settings.onBusy, limit, priority, tenant }) };
  });
  return [own, ...entries].sort((a, b) => byUtf8(a.key, b.key));
}

/**
 * Takes one key of a section: acquires it (registering on it), waits for
 * the grant (re-checking on a timeout). Answers the acquire's final reply:
 * granted (with its fence), busy or superseded.
 */
async function takeKey(step, call, coordinator, key, instanceId, options, settings) {
  const stub = () => coordinator.get(coordinator.idFromName(key));
  const tag = stepTag(String(key));
  const acquire = () => stub().acquire(key, instanceId, options);
  let reply = await call(`baton acquire ${tag}`, acquire);
  for (let wait = 1; reply?.status === "pending"; wait++) {
    if (wait > settings.maxWaits) {
      throw new NonRetryableError(
        `Baton: gave up waiting for key ${JSON.stringify(key)} after ${settings.maxWaits} waits`,
      );
    }
    let event;
    try {
      event = await step.waitForEvent(`baton turn ${tag} #${wait}`, {
        type: reply.turn,
        timeout: settings.turnTimeout,
      });
    } catch {
      // Timed out: fall through to the re-check, which is what decides.
    }
    // The grant itself ends the wait; §1's turn event, or a timeout, re-checks.
    reply = grantOf(event, key, instanceId) ?? (await call(`baton acquire ${tag} #${wait}`, acquire));
  }
  if (!["granted", "busy", "superseded"].includes(reply?.status)) {
    throw new NonRetryableError(`Baton: unexpected acquire reply ${JSON.stringify(reply)}`);
  }
  return reply;
}

/**
 * Acquires `key` for `instanceId`, runs `body({ fence, fences })`, and
 * releases the key on every exit (also when `body` throws). `fence` is the
 * grant's fence (contract §1b): pass it to whatever the body writes, so
 * that a later holder's writes win over a holder Baton judged dead.
 * `options.workflow` names the binding (on Baton's Worker) of this
 * instance's Workflow, `options.limit` how many instances may hold the key
 * at once; `options.priority` (-100 to 100) and `options.tenant` place it
 * in the hand-off order (contract §1c), and with `options.onBusy: "skip"`
 * a key that is held (to its limit) or has waiters returns `{ busy: true }`
 * without running `body` or registering anything. `options.also` (§1e)
 * names 1 to 4 further keys held with it, each `{ key, limit?, priority?,
 * tenant? }`; `fences` maps every held key to its fence.
 *
 * @returns {Promise<{ superseded: false, value: any } | { superseded: true } | { busy: true }>}
 */
export async function withKey(step, coordinator, key, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  const keys = sectionKeys(key, settings);
  const call = batonSteps(step, settings.stepRetries);
  // A fresh stub for every call: once a stub has thrown (the object was
  // reset: a deploy, an overload), every later call on it throws too, so a
  // retried step must not reuse it.
  const release = (k) =>
    call(`baton release ${stepTag(String(k))}`, () => coordinator.get(coordinator.idFromName(k)).release(k, instanceId));
  // The keys registered on, in the order taken: each is released on every
  // exit, in reverse (a release by a waiter leaves the queue; by one that
  // was never registered, or was superseded, it is a no-op).
  const registered = [];
  const fences = {};
  let fence;
  try {
    for (const { key: k, own, options: keyOpts } of keys) {
      registered.push(k);
      const reply = await takeKey(step, call, coordinator, k, instanceId, keyOpts, settings);
      if (reply.status !== "granted") {
        // Busy registered nothing; superseded is final: neither is released.
        registered.pop();
        return reply.status === "busy" ? { busy: true } : { superseded: true };
      }
      fences[k] = reply.fence;
      if (own) fence = reply.fence;
    }
    return { superseded: false, value: await body({ fence, fences }) };
  } finally {
    for (const k of registered.reverse()) await release(k);
  }
}
