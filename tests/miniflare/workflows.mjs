// The test Worker: a Workflow that takes a key through `withKey`, a
// Recorder that logs when bodies enter and exit, and a small HTTP control
// surface the Node tests drive.
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../../js/with-key.mjs";
import { serialize } from "../../js/serialize.mjs";
import { withRateLimit, PermitPool } from "../../js/rate-limit.mjs";
import * as debounceHelpers from "../../js/debounce.mjs";
import { awaitRun, reportRun, startOnce } from "../../js/runs.mjs";

const NO_RETRY = { retries: { limit: 0, delay: 0 } };

/**
 * What both modes run while they hold: log the entry (with the `fence` the
 * body was given), hold (until a "finish" event, or for `holdMs`), log the
 * exit, and return `result`.
 */
async function recordedBody(step, recorder, id, { waitForFinish, holdMs, fence }, result) {
  await step.do("enter", NO_RETRY, () => recorder.append("enter", id, fence));
  if (waitForFinish) {
    await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
  } else if (holdMs > 0) {
    await step.sleep("hold", holdMs);
  }
  await step.do("exit", NO_RETRY, () => recorder.append("exit", id));
  return result;
}

/**
 * A Runs namespace whose `append` and `complete` lose their first reply
 * after the object committed (the call throws once it has returned), as a
 * dropped connection would: the helpers' steps are retried and must not
 * record twice.
 */
function lossyReplies(namespace) {
  const lost = new Set();
  return {
    idFromName: (name) => namespace.idFromName(name),
    get(objectId) {
      const stub = namespace.get(objectId);
      const lossy = (method) => async (key, options) => {
        const reply = await stub[method](key, options);
        const call = `${method} ${JSON.stringify(options)}`;
        if (!lost.has(call)) {
          lost.add(call);
          throw new Error(`reply lost after ${method} committed`);
        }
        return reply;
      };
      return {
        claim: (key, options) => stub.claim(key, options),
        await: (key, options) => stub.await(key, options),
        events: (key, options) => stub.events(key, options),
        append: lossy("append"),
        complete: lossy("complete"),
      };
    },
  };
}

/** `step`, noting in `names` every step name of Baton's helpers ("baton ..."). */
function countingSteps(step, names) {
  const note = (name) => {
    if (name.startsWith("baton ")) names.add(name);
  };
  return {
    do: (name, ...rest) => (note(name), step.do(name, ...rest)),
    waitForEvent: (name, options) => (note(name), step.waitForEvent(name, options)),
    sleep: (name, duration) => (note(name), step.sleep(name, duration)),
  };
}

export class TestWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    // One class for both helpers: the serial queue wakes instances through one Workflow binding.
    if (event.payload.mode === "serial") return this.runSerial(event, step);
    // A live instance that only waits: a holder the tests take a group
    // for by hand (its status says alive), until its "finish" event.
    if (event.payload.mode === "park") {
      await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
      return { parked: true };
    }
    if (event.payload.mode === "rate") return this.runRate(event, step);
    if (event.payload.mode === "run") return this.runOnce(event, step);
    const { key, holdMs = 0, waitForFinish = false, turnTimeout = "10 minutes" } = event.payload;
    const { workflow, limit, countSteps = false, also } = event.payload;
    const { priority, tenant, onBusy, stepRetries = { limit: 2, delay: "100 milliseconds" } } = event.payload;
    // `fencedWrite`: the body first writes to the fenced store with its fence (§1b, §1d).
    const { fencedWrite = false } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    // With `countSteps`, the output also lists the Baton steps withKey took
    // (by name, so a replay counts none twice) and the fence body was given.
    const baton = new Set();
    const counted = countSteps ? countingSteps(step, baton) : step;
    let fence;
    let fences;
    const result = await withKey(
      counted,
      this.env.COORDINATOR,
      key,
      id,
      async (grant) => {
        fence = grant.fence;
        fences = grant.fences;
        if (fencedWrite) {
          const store = this.env.FENCED.get(this.env.FENCED.idFromName(key));
          await step.do("fenced write", NO_RETRY, () => store.write(fence, id));
        }
        return recordedBody(step, recorder, id, { waitForFinish, holdMs, fence }, "done");
      },
      { turnTimeout, stepRetries, workflow, limit, priority, tenant, onBusy, also },
    );
    if (countSteps) return { ...result, batonSteps: [...baton], fence, fences };
    // §1e: a section with `also` says which fences its body got.
    return also && !result.busy && !result.superseded ? { ...result, fences } : result;
  }

  /**
   * Calls a rate-limited "upstream" `calls` times through `withRateLimit`:
   * payload { bucket, rules, calls?, permits? }. Each call is recorded as
   * "spend" in the Recorder; the output counts them.
   */
  async runRate(event, step) {
    const { bucket, rules, calls = 1, permits = 1, maxWaitMs } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    let spent = 0;
    for (let i = 0; i < calls; i++) {
      try {
        spent += await this.rateCall(step, recorder, id, { bucket, rules, permits, maxWaitMs }, i);
      } catch (error) {
        // §5a: the helper's give-up, and its refusals, as output the tests read.
        if (!["RateLimitMaxWait", "BatonError"].includes(error?.name)) throw error;
        const { name, waitMs, maxWaitMs: max, bucket: b } = error;
        return { spent, error: { name, message: String(error), waitMs, maxWaitMs: max, bucket: b } };
      }
    }
    return { spent };
  }

  /** One `withRateLimit` call of `runRate`: records "spend" and spends `permits`. */
  rateCall(step, recorder, id, { bucket, rules, permits, maxWaitMs }, i) {
    const spend = () =>
      step.do(`spend ${i}`, NO_RETRY, async () => {
        await recorder.append("spend", id);
        return permits;
      });
    const options = { permits, maxWaitMs, stepRetries: { limit: 2, delay: "100 milliseconds" } };
    return withRateLimit(step, this.env.RATE_LIMITER, bucket, rules, spend, options);
  }

  /** A deploy-like run through `serialize`: payload { group, revision, current?, holdMs?, waitForFinish?, options? }; its body records `{ lease }` (the fence) as a step output. */
  async runSerial(event, step) {
    const { group, revision, current, holdMs = 0, waitForFinish = false, options = {}, countSteps = false } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    // With `countSteps`, the output also names the Baton steps serialize took.
    const baton = new Set();
    try {
      const value = await serialize(
        countSteps ? countingSteps(step, baton) : step,
        this.env.BATON,
        current === undefined ? { group, revision } : { group, revision, current },
        id,
        async (lease) => {
          // The fence serialize passes to body, as a step output the tests read.
          await step.do("lease", NO_RETRY, async () => ({ lease }));
          return recordedBody(step, recorder, id, { waitForFinish, holdMs, fence: lease?.fence }, "deployed");
        },
        { stepRetries: { limit: 2, delay: "100 milliseconds" }, ...options },
      );
      return countSteps ? { ran: true, value, batonSteps: [...baton] } : { ran: true, value };
    } catch (error) {
      // Surface the helper's outcome as output so tests can read it.
      if (["RunSkipped", "SerialQueueTimedOut", "SerialQueueLostHold"].includes(error?.name)) {
        return { ran: false, error: error.name, message: error.message, revision: error.revision };
      }
      throw error;
    }
  }

  /**
   * A run started with `startOnce`: payload { key, events?: [{ type, data? }],
   * waitForFinish?, result?, error? }. Reports each event and the outcome
   * through `reportRun`; `error` makes the body throw (the run is "failed").
   */
  async runOnce(event, step) {
    const { key, events = [], waitForFinish = false, result, error, flaky = false } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    await step.do("enter", NO_RETRY, () => recorder.append("run", id));
    try {
      return await reportRun(
        step,
        flaky ? lossyReplies(this.env.RUNS) : this.env.RUNS,
        key,
        id,
        async (report) => {
          for (const e of events) await report.event(e.type, e.data);
          if (waitForFinish) {
            await step.waitForEvent("finish", { type: "finish", timeout: "1 hour" });
          }
          if (error !== undefined) throw new Error(error);
          return result;
        },
        { stepRetries: { limit: 2, delay: "100 milliseconds" } },
      );
    } catch (thrown) {
      // The outcome is recorded; end the instance quietly so tests read it.
      return { failed: String(thrown?.message ?? thrown) };
    }
  }
}

/**
 * A second Workflow class, bound to Baton as OTHER (contract §1a): the same
 * code, so one key can be shared by instances of two Workflows. Its
 * instances pass `workflow: "OTHER"` (in their payload) to `withKey`.
 */
export class OtherWorkflow extends TestWorkflow {}
/** What the Debouncer starts in tests: an instance that returns its params. */
export class EchoWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    await step.do("record", NO_RETRY, () => recorder.append("echo", event.instanceId));
    return { params: event.payload ?? null };
  }
}

export class Recorder extends DurableObject {
  /** Logs `kind` for instance `id`, with the fence its body was given, if any. */
  async append(kind, id, fence) {
    const log = (await this.ctx.storage.get("log")) ?? [];
    log.push(fence === undefined ? { kind, id, at: Date.now() } : { kind, id, at: Date.now(), fence });
    await this.ctx.storage.put("log", log);
  }

  async entries() {
    return (await this.ctx.storage.get("log")) ?? [];
  }
}

/**
 * A store a key's holders write to, keyed by fence (contract §1b, §1d):
 * it keeps the highest fence written and refuses a write with a lower
 * one, as a system a holder writes to can, so a cancelled run's late
 * step cannot overwrite the newer run's work.
 */
export class FencedStore extends DurableObject {
  /** Writes as `by` with `fence`: `{ accepted, highest }`. */
  async write(fence, by) {
    const highest = (await this.ctx.storage.get("highest")) ?? 0;
    if (fence < highest) return { accepted: false, highest };
    const writes = (await this.ctx.storage.get("writes")) ?? [];
    writes.push({ fence, by });
    await this.ctx.storage.put({ highest: fence, writes });
    return { accepted: true, highest: fence };
  }

  /** Every accepted write, in order. */
  async writes() {
    return (await this.ctx.storage.get("writes")) ?? [];
  }
}

/** The test Worker's binding for Baton's Workflow binding name ("OTHER" or the default). */
/** The Workflow a test names: OTHER (contract §1a), echo (the Debouncer's starts), else TEST_WF. */
const workflowOf = (env, name) =>
  name === "OTHER" ? env.OTHER_WF : name === "echo" || name === "ECHO" ? env.ECHO_WF : env.TEST_WF;

const json = (value, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const body = request.method === "POST" ? await request.json() : undefined;
    switch (url.pathname) {
      case "/rpc": {
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(body.key));
        try {
          return json({ value: await stub[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/list-shard": {
        // A list shard by its index (shard_name in src/busy/shard.rs).
        const stub = env.BUSY_LIST.get(env.BUSY_LIST.idFromName(`baton-list-${body.shard}`));
        try {
          return json({ value: await stub[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/rate": {
        const stub = env.RATE_LIMITER.get(env.RATE_LIMITER.idFromName(body.bucket));
        try {
          return json({ value: await stub[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/rate-pool": {
        // A Worker spending `take` permits through one PermitPool, then
        // closing it: { bucket, rules, take, block, maxWaitMs? }.
        const pool = new PermitPool(env.RATE_LIMITER, body.bucket, body.rules, {
          block: body.block,
          maxWaitMs: body.maxWaitMs ?? 0,
          // Leases never go stale during a test: what is refunded is decided by `close`.
          holdMs: 3_600_000,
        });
        let taken = 0;
        let error = null;
        try {
          for (; taken < body.take; taken++) await pool.take(1, body.takeOptions);
        } catch (e) {
          error = e?.name === "RateLimitMaxWait" ? `${e.name} ${e.waitMs} ${e.maxWaitMs}` : (e?.name ?? String(e));
          if (e?.name === "BatonError") error = String(e);
        }
        const available = pool.available;
        const refunded = await pool.close();
        return json({ taken, available, refunded, error });
      }
      case "/bulk-enqueue": {
        // Many enqueues from inside the Worker, as callers would send them,
        // without a Node round trip each.
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(body.key));
        for (let i = 0; i < body.count; i++) {
          await stub.enqueue(body.key, false, `${body.prefix}${i}`);
        }
        return json({ enqueued: body.count });
      }
      case "/debouncer": {
        const stub = env.DEBOUNCER.get(env.DEBOUNCER.idFromName(body.key));
        const args = body.args;
        // A value RPC can carry but JSON cannot: a function.
        if (body.functionParams) args[1] = { ...args[1], params: () => 1 };
        try {
          return json({ value: await stub[body.method](...args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/runs": {
        // A Runs method through a DO stub: { key, method, args }.
        const stub = env.RUNS.get(env.RUNS.idFromName(body.key));
        try {
          return json({ value: await stub[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/debounce-helper": {
        // The npm package's helpers, called from a Worker as a user would.
        try {
          return json({ value: await debounceHelpers[body.fn](env.DEBOUNCER, ...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/runs-many": {
        // Many calls of one Runs method from inside the Worker, one after
        // another ({ key, method, options: [...] }), without a Node round trip each.
        const stub = env.RUNS.get(env.RUNS.idFromName(body.key));
        const values = [];
        for (const options of body.options) values.push(await stub[body.method](body.key, options));
        return json(values);
      }
      case "/start-once": {
        // `count` concurrent startOnce calls from inside the Worker, as
        // concurrent callers would make them.
        const calls = Array.from({ length: body.count ?? 1 }, () =>
          startOnce(env.RUNS, workflowOf(env, body.workflow), body.key, body.params, body.options),
        );
        return json(await Promise.all(calls));
      }
      case "/await-run": {
        return json(await awaitRun(env.RUNS, body.key, body.options));
      }
      case "/serial": {
        try {
          return json({ value: await env.BATON[body.method](...body.args) });
        } catch (error) {
          return json({ error: String(error?.message ?? error) });
        }
      }
      case "/create": {
        await workflowOf(env, body.workflow).create({ id: body.id, params: body.params });
        return json({ created: body.id });
      }
      case "/status": {
        try {
          const workflow = workflowOf(env, url.searchParams.get("workflow"));
          const instance = await workflow.get(url.searchParams.get("id"));
          return json(await instance.status());
        } catch (error) {
          return json({ status: "not_found", error: String(error?.message ?? error) });
        }
      }
      case "/terminate": {
        await (await workflowOf(env, body.workflow).get(body.id)).terminate();
        return json({ terminated: body.id });
      }
      case "/event": {
        const instance = await workflowOf(env, body.workflow).get(body.id);
        await instance.sendEvent({ type: body.type, payload: body.payload });
        return json({ sent: body.id });
      }
      case "/fenced": {
        // The fenced store of `key`: { key, method, args }.
        const stub = env.FENCED.get(env.FENCED.idFromName(body.key));
        return json(await stub[body.method](...body.args));
      }
      case "/log": {
        return json(await env.RECORDER.get(env.RECORDER.idFromName("log")).entries());
      }
      default:
        return json({ error: "no such route" }, 404);
    }
  },
};
