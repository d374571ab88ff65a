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
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps, stepTag } from "./steps.mjs";

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
function keyOptions({ workflow, limit, priority, tenant, onBusy }) {
  const options = { grant: true };
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

/**
 * Acquires `key` for `instanceId`, runs `body({ fence })`, and releases the
 * key on every exit (also when `body` throws). `fence` is the grant's fence
 * (contract §1b): pass it to whatever the body writes, so that a later
 * holder's writes win over a holder Baton judged dead. `options.workflow`
 * names the binding (on Baton's Worker) of this instance's Workflow,
 * `options.limit` how many instances may hold the key at once;
 * `options.priority` (-100 to 100) and `options.tenant` place it in the
 * hand-off order (contract §1c), and with `options.onBusy: "skip"` a key
 * that is held (to its limit) or has waiters returns `{ busy: true }`
 * without running `body` or registering anything.
 *
 * @returns {Promise<{ superseded: false, value: any } | { superseded: true } | { busy: true }>}
 */
export async function withKey(step, coordinator, key, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  // A fresh stub for every call: once a stub has thrown (the object was
  // reset: a deploy, an overload), every later call on it throws too, so a
  // retried step must not reuse it.
  const stub = () => coordinator.get(coordinator.idFromName(key));
  const tag = stepTag(String(key));
  const call = batonSteps(step, settings.stepRetries);
  const acquireOptions = keyOptions(settings);
  const acquire = () => stub().acquire(key, instanceId, acquireOptions);

  let reply = await call(`baton acquire ${tag}`, acquire);
  if (reply?.status === "busy") {
    return { busy: true };
  }
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
  if (reply?.status === "superseded") {
    return { superseded: true };
  }
  if (reply?.status !== "granted") {
    throw new NonRetryableError(`Baton: unexpected acquire reply ${JSON.stringify(reply)}`);
  }
  try {
    return { superseded: false, value: await body({ fence: reply.fence }) };
  } finally {
    await call(`baton release ${tag}`, () => stub().release(key, instanceId));
  }
}
