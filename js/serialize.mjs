// serialize: run a Workflow's body as the only execution in flight for its
// group, the newest waiter winning (contract §2, ADR-0004's rules).
//
// Waiting is `step.waitForEvent` for Baton's turn event, with the poll
// interval as its timeout: Baton pushes the event when the group frees or
// the waiter is superseded, and the poll is only the fallback for a lost
// event. Heartbeats are their own durable steps, interleaved with the body,
// so a long body keeps the group without any single step running long.
import { NonRetryableError } from "cloudflare:workflows";
import { batonSteps } from "./steps.mjs";
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

/**
 * @returns {Promise<any>} what `body` returns.
 */
export async function serialize(step, baton, spec, instanceId, body, options = {}) {
  const settings = { ...DEFAULTS, ...options };
  const { group, revision, current } = spec;
  const call = batonSteps(step, settings.stepRetries);
  const who = { group, instanceId };

  const enqueued = await call("baton serial enqueue", () =>
    baton.serialEnqueue(current === undefined ? { group, instanceId, revision } : { group, instanceId, revision, current }),
  );
  if (enqueued.status === "skipped") {
    throw new RunSkipped(`revision ${revision} is not current (current is ${enqueued.current})`, enqueued.current);
  }

  for (let poll = 0; ; poll++) {
    const claim = await call(`baton serial claim #${poll}`, () => baton.serialClaim(who));
    if (claim.status === "holding") break;
    if (claim.status === "skipped") {
      const by = claim.supersededBy;
      throw new RunSkipped(`superseded by revision ${by.revision} (instance ${by.instanceId})`, by.revision);
    }
    if (claim.status === "timed_out") {
      throw new SerialQueueTimedOut(`waited too long behind the holder of group ${group}`);
    }
    if (poll + 1 >= settings.maxPolls) {
      throw new SerialQueueTimedOut(`gave up after ${settings.maxPolls} polls of group ${group}`);
    }
    try {
      await step.waitForEvent(`baton serial turn #${poll + 1}`, {
        type: settings.turnEventType,
        timeout: settings.pollInterval,
      });
    } catch {
      // The poll interval passed without a push: claim again.
    }
  }

  try {
    const outcome = Promise.resolve().then(body).then(
      (value) => ({ done: true, value }),
      (error) => ({ done: true, error }),
    );
    for (let beat = 1; ; beat++) {
      const next = await Promise.race([
        outcome,
        step.sleep(`baton serial heartbeat wait #${beat}`, settings.heartbeatInterval).then(() => ({ done: false })),
      ]);
      if (next.done) {
        if ("error" in next) throw next.error;
        return next.value;
      }
      const { holding } = await call(`baton serial heartbeat #${beat}`, () => baton.serialHeartbeat(who));
      if (!holding) {
        // The heartbeat went stale and another execution took the group:
        // stop here, so the body runs no further step beside the new holder.
        throw new SerialQueueLostHold(`lost group ${group}: a heartbeat was later than SERIAL_HEARTBEAT_EXPIRY_MS`);
      }
    }
  } finally {
    await call("baton serial release", () => baton.serialRelease(who));
  }
}
