// The test Worker: a Workflow that takes a key through `withKey`, a
// Recorder that logs when bodies enter and exit, and a small HTTP control
// surface the Node tests drive.
import { DurableObject, WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../../js/with-key.mjs";
import { serialize } from "../../js/serialize.mjs";
import * as debounceHelpers from "../../js/debounce.mjs";
import { awaitRun, reportRun, startOnce } from "../../js/runs.mjs";

const NO_RETRY = { retries: { limit: 0, delay: 0 } };

/**
 * What both modes run while they hold: log the entry, hold (until a "finish"
 * event, or for `holdMs`), log the exit, and return `result`.
 */
async function recordedBody(step, recorder, id, { waitForFinish, holdMs }, result) {
  await step.do("enter", NO_RETRY, () => recorder.append("enter", id));
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

export class TestWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    // One class for both helpers: Baton wakes instances through one Workflow binding.
    if (event.payload.mode === "serial") return this.runSerial(event, step);
    if (event.payload.mode === "run") return this.runOnce(event, step);
    const { key, holdMs = 0, waitForFinish = false, turnTimeout = "10 minutes" } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    return withKey(
      step,
      this.env.COORDINATOR,
      key,
      id,
      () => recordedBody(step, recorder, id, { waitForFinish, holdMs }, "done"),
      { turnTimeout, stepRetries: { limit: 2, delay: "100 milliseconds" } },
    );
  }

  /** A deploy-like run through `serialize`: payload { group, revision, current?, holdMs?, waitForFinish?, options? }. */
  async runSerial(event, step) {
    const { group, revision, current, holdMs = 0, waitForFinish = false, options = {} } = event.payload;
    const id = event.instanceId;
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    try {
      const value = await serialize(
        step,
        this.env.BATON,
        current === undefined ? { group, revision } : { group, revision, current },
        id,
        () => recordedBody(step, recorder, id, { waitForFinish, holdMs }, "deployed"),
        { stepRetries: { limit: 2, delay: "100 milliseconds" }, ...options },
      );
      return { ran: true, value };
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

/** What the Debouncer starts in tests: an instance that returns its params. */
export class EchoWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const recorder = this.env.RECORDER.get(this.env.RECORDER.idFromName("log"));
    await step.do("record", NO_RETRY, () => recorder.append("echo", event.instanceId));
    return { params: event.payload ?? null };
  }
}

export class Recorder extends DurableObject {
  async append(kind, id) {
    const log = (await this.ctx.storage.get("log")) ?? [];
    log.push({ kind, id, at: Date.now() });
    await this.ctx.storage.put("log", log);
  }

  async entries() {
    return (await this.ctx.storage.get("log")) ?? [];
  }
}

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
          startOnce(env.RUNS, env.TEST_WF, body.key, body.params, body.options),
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
        await env.TEST_WF.create({ id: body.id, params: body.params });
        return json({ created: body.id });
      }
      case "/status": {
        try {
          const workflow = url.searchParams.get("wf") === "echo" ? env.ECHO_WF : env.TEST_WF;
          const instance = await workflow.get(url.searchParams.get("id"));
          return json(await instance.status());
        } catch (error) {
          return json({ status: "not_found", error: String(error?.message ?? error) });
        }
      }
      case "/terminate": {
        await (await env.TEST_WF.get(body.id)).terminate();
        return json({ terminated: body.id });
      }
      case "/event": {
        await (await env.TEST_WF.get(body.id)).sendEvent({ type: body.type, payload: body.payload });
        return json({ sent: body.id });
      }
      case "/log": {
        return json(await env.RECORDER.get(env.RECORDER.idFromName("log")).entries());
      }
      default:
        return json({ error: "no such route" }, 404);
    }
  },
};
