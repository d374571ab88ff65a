// withKey: run a piece of a Workflow while holding a Baton key.
//
// Every decision is a durable step and every wait is `step.waitForEvent`, so
// a waiting instance uses no compute and a replay after a restart takes the
// same path. The turn event is only a hint: after each wake-up (or timeout)
// the instance asks `acquire` again, so a lost event costs one timeout.
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps, stepTag } from "./steps.mjs";

/** Default event type Baton sends to the instance it hands a key to. */
export const TURN_EVENT_TYPE = "baton-turn";

const DEFAULTS = {
  turnTimeout: "10 minutes",
  // 10 minutes x 1000 waits is about a week: past that the Workflow
  // is stuck for a reason no amount of waiting fixes.
  maxWaits: 1000,
  turnEventType: TURN_EVENT_TYPE,
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" },
};

/**
 * The Coordinator's options for this instance's calls (contract §1a): the
 * binding of its Workflow, and the key's limit. Absent when neither is
 * given, so a §1 Coordinator sees the calls it always did.
 */
function keyOptions({ workflow, limit }) {
  const options = {};
  if (workflow !== undefined) options.workflow = workflow;
  if (limit !== undefined) options.limit = limit;
  return Object.keys(options).length > 0 ? options : undefined;
}

/**
 * Acquires `key` for `instanceId`, runs `body`, and releases the key on
 * every exit (also when `body` throws). `options.workflow` names the
 * binding (on Baton's Worker) of this instance's Workflow, `options.limit`
 * how many instances may hold the key at once.
 *
 * @returns {Promise<{ superseded: false, value: any } | { superseded: true }>}
 */
export async function withKey(step, coordinator, key, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  const stub = coordinator.get(coordinator.idFromName(key));
  const tag = stepTag(String(key));
  const call = batonSteps(step, settings.stepRetries);
  const acquireOptions = keyOptions(settings);
  const acquire = () => stub.acquire(key, instanceId, acquireOptions);

  let outcome = await call(`baton acquire ${tag}`, acquire);
  for (let wait = 1; outcome === "pending"; wait++) {
    if (wait > settings.maxWaits) {
      throw new NonRetryableError(
        `Baton: gave up waiting for key ${JSON.stringify(key)} after ${settings.maxWaits} waits`,
      );
    }
    try {
      await step.waitForEvent(`baton turn ${tag} #${wait}`, {
        type: settings.turnEventType,
        timeout: settings.turnTimeout,
      });
    } catch {
      // Timed out: fall through to the re-check, which is what decides.
    }
    outcome = await call(`baton acquire ${tag} #${wait}`, acquire);
  }
  if (outcome === "superseded") {
    return { superseded: true };
  }
  if (outcome !== "granted") {
    throw new NonRetryableError(`Baton: unexpected acquire outcome ${JSON.stringify(outcome)}`);
  }
  try {
    return { superseded: false, value: await body() };
  } finally {
    await call(`baton release ${tag}`, () => stub.release(key, instanceId));
  }
}
