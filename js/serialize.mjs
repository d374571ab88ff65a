// serialize: run a Workflow's body as the only execution in flight for its
// group, the newest waiter winning (contract §2 and §2a).
//
// Waiting is `step.waitForEvent` for this registration's own turn event,
// with the poll interval as its timeout: Baton hands the group over with
// that event when the holder releases (or tells the waiter it was
// superseded), and the poll is only the fallback for a lost event. Heartbeats are their own durable steps, interleaved with the body,
// so a long body keeps the group without any single step running long.
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps, stepTag } from "./steps.mjs";
import { TURN_EVENT_TYPE } from "./with-key.mjs";

/** A newer revision won: this execution must not run. Never retried. */
export class RunSkipped extends NonRetryableError {
  constructor(message, revision) {
    super(message, "RunSkipped");
    this.name = "RunSkipped";
    this.revision = revision;
  }
}

/** Waited longer than SERIAL_WAITER_TIMEOUT_MS behind a live holder. Never retried. */
export class SerialQueueTimedOut extends NonRetryableError {
  constructor(message) {
    super(message, "SerialQueueTimedOut");
    this.name = "SerialQueueTimedOut";
  }
}

/**
 * The holder's heartbeat went stale and another execution took the group.
 * Thrown as soon as a heartbeat learns it, so the body runs no further
 * step. Never retried.
 */
export class SerialQueueLostHold extends NonRetryableError {
  constructor(message) {
    super(message, "SerialQueueLostHold");
    this.name = "SerialQueueLostHold";
  }
}

const DEFAULTS = {
  pollInterval: 30_000,
  // Three per default expiry (600 s) would be 200 s; four leaves a margin
  // for a slow heartbeat step.
  heartbeatInterval: 150_000,
  // 30 s x 240 polls is two hours, past the default waiter timeout: the
  // queue's own timeout ends the wait first; this only bounds the loop.
  maxPolls: 240,
  // Must match the Worker's TURN_EVENT_TYPE, as for withKey.
  turnEventType: TURN_EVENT_TYPE,
  stepRetries: { limit: 5, delay: "1 second", backoff: "exponential" },
};

/** The turn event's payload, whatever shape the engine hands it back in. */
const payloadOf = (event) => (event && typeof event === "object" && "payload" in event ? event.payload : event);

/**
 * Enqueues with `claim` and `grant` (contract §2a): an uncontended run holds
 * from its enqueue, and a waiter is handed the group by its own turn event,
 * so a run costs two Baton steps (enqueue, release), or three when it waits
 * once (enqueue, the wait, release), plus its heartbeats. A wait that times
 * out (a lost event) re-checks with one claim. A queue that answers an
 * enqueue without claiming (no `holder` in a `waiting` reply) is claimed
 * from at once, and one that names no `turn` wakes by `turnEventType`.
 * @returns {Promise<any>} what `body` returns.
 */
export async function serialize(step, baton, spec, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  const { group, revision, current } = spec;
  const call = batonSteps(step, settings.stepRetries);
  // Every step name carries the group, as withKey's carry the key.
  const tag = stepTag(String(group));
  const who = { group, instanceId };
  const request = { group, instanceId, revision, claim: true, grant: true };
  if (current !== undefined) request.current = current;
  if (settings.workflow !== undefined) request.workflow = settings.workflow;

  let state = await call(`baton serial enqueue ${tag}`, () => baton.serialEnqueue(request));
  if (state.status === "waiting" && !("holder" in state)) {
    state = await call(`baton serial claim ${tag} #0`, () => baton.serialClaim(who));
  }
  const turn = state.turn ?? settings.turnEventType;
  for (let wait = 1; state.status === "waiting"; wait++) {
    if (wait > settings.maxPolls) {
      throw new SerialQueueTimedOut(`gave up after ${settings.maxPolls} polls of group ${group}`);
    }
    let told;
    try {
      told = payloadOf(await step.waitForEvent(`baton serial turn ${tag} #${wait}`, { type: turn, timeout: settings.pollInterval }));
    } catch {
      // The poll interval passed without a push: claim again, below.
    }
    if (told?.status === "holding" || told?.status === "skipped") {
      state = told;
    } else {
      state = await call(`baton serial claim ${tag} #${wait}`, () => baton.serialClaim(who));
    }
  }
  if (state.status === "skipped") {
    if (state.supersededBy === undefined) {
      throw new RunSkipped(`revision ${revision} is not current (current is ${state.current})`, state.current);
    }
    const by = state.supersededBy;
    throw new RunSkipped(`superseded by revision ${by.revision} (instance ${by.instanceId})`, by.revision);
  }
  if (state.status === "timed_out") {
    throw new SerialQueueTimedOut(`waited too long behind the holder of group ${group}`);
  }
  const fence = state.fence;

  try {
    const outcome = Promise.resolve().then(() => body({ fence })).then(
      (value) => ({ done: true, value }),
      (error) => ({ done: true, error }),
    );
    for (let beat = 1; ; beat++) {
      const next = await Promise.race([
        outcome,
        step.sleep(`baton serial heartbeat wait ${tag} #${beat}`, settings.heartbeatInterval).then(() => ({ done: false })),
      ]);
      if (next.done) {
        if ("error" in next) throw next.error;
        return next.value;
      }
      const { holding } = await call(`baton serial heartbeat ${tag} #${beat}`, () => baton.serialHeartbeat(who));
      if (!holding) {
        // The heartbeat went stale and another execution took the group:
        // stop here, so the body runs no further step beside the new holder.
        throw new SerialQueueLostHold(`lost group ${group}: a heartbeat was later than SERIAL_HEARTBEAT_EXPIRY_MS`);
      }
    }
  } finally {
    await call(`baton serial release ${tag}`, () => baton.serialRelease(who));
  }
}
