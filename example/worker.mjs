// Example Workflows using Baton, and a small HTTP surface to start
// instances and watch keys being handed on and deploys being serialized.
//
// Two Workflows share keys: ExampleWorkflow (Baton's WORKFLOW binding, the
// default) calls `withKey` in its code; RollbackWorkflow declares the same
// flow control on its class with `coordinated()` (docs/declared.md): no
// Baton call in its code, no binding named. Baton finds its instances
// through its ROLLBACK binding (one `found elsewhere` warn line per instance
// and key the first time it looks; naming `workflow: "ROLLBACK"` saves
// that). A key may also let several instances hold it at once (`limit`).
import { WorkflowEntrypoint } from "cloudflare:workers";
import { withKey } from "../js/with-key.mjs";
import { serialize } from "../js/serialize.mjs";
import { awaitRun, reportRun, startOnce } from "../js/runs.mjs";
import { coordinated } from "../js/coordinated.mjs";

export class ExampleWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    if (event.payload.deploy) return this.deploy(event, step);
    if (event.payload.report) return this.report(event, step);
    return holdKey(this.env, event, step);
  }

  /**
   * A deploy on every push: one in flight per repo/branch/check label, the
   * newest push wins, and a push that is no longer the branch head skips.
   * `head` is the branch head the dispatcher read when the push arrived.
   */
  async deploy(event, step) {
    const { repo, branch, label = "deploy", sha, head, holdSeconds = 5 } = event.payload.deploy;
    return serialize(
      step,
      this.env.BATON,
      { group: `${repo}:${branch}:${label}`, revision: sha, current: head },
      event.instanceId,
      async () => {
        // Stands in for publishing the Workers at `sha`.
        await step.sleep("publish", `${holdSeconds} seconds`);
        return { deployed: sha };
      },
    );
  }

  /**
   * A report that many callers may ask for at once and that must be made
   * once: started with `startOnce`, it reports its progress and its
   * result through `reportRun`.
   */
  async report(event, step) {
    const { key, month, seconds = 3 } = event.payload.report;
    return reportRun(step, this.env.RUNS, key, event.instanceId, async (report) => {
      for (let part = 1; part <= 3; part++) {
        // Stands in for the work of one part of the report.
        await step.sleep(`part ${part}`, `${seconds} seconds`);
        await report.event("part-done", { part });
      }
      return { month, total: await step.do("total", async () => 42 * month.length) };
    });
  }
}

/**
 * A rollback shares the deploy's key: while one runs, the other waits,
 * whichever Workflow each belongs to. Its flow control is declared on the
 * class: `run` runs inside the key (`limit` from the payload), and a run
 * superseded or skipped would complete without running it.
 */
export class RollbackWorkflow extends coordinated(WorkflowEntrypoint, {
  coordinator: (env) => env.COORDINATOR,
  key: (event) => event.payload.key,
  limit: (event) => event.payload.limit,
  turnTimeout: "1 minute",
}) {
  async run(event, step, { fence }) {
    const { key, holdSeconds = 5 } = event.payload;
    // Stands in for the work that must not run more than `limit` at once for this key.
    await step.sleep("work", `${holdSeconds} seconds`);
    return { key, fence, finishedAt: await step.do("finish", async () => new Date().toISOString()) };
  }
}

/**
 * Takes `key` through `withKey` and holds it for a few seconds; `limit`
 * (from the payload) lets that many instances hold the key at once.
 */
function holdKey(env, event, step) {
  const { key, holdSeconds = 5, limit } = event.payload;
  return withKey(step, env.COORDINATOR, key, event.instanceId, async () => {
    // Stands in for the work that must not run more than `limit` at once for this key.
    await step.sleep("work", `${holdSeconds} seconds`);
    return { key, finishedAt: await step.do("finish", async () => new Date().toISOString()) };
  }, { turnTimeout: "1 minute", limit });
}

const json = (value, status = 200) =>
  new Response(JSON.stringify(value, null, 2) + "\n", {
    status,
    headers: { "content-type": "application/json" },
  });

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const key = url.searchParams.get("key") ?? "demo";
    try {
      if (request.method === "POST" && url.pathname === "/start") {
        const count = Math.min(Number(url.searchParams.get("count") ?? 1), 20);
        const holdSeconds = Math.min(Number(url.searchParams.get("hold") ?? 5), 300);
        // ?workflow=rollback starts RollbackWorkflow instances on the same key;
        // ?limit=3 lets three hold it at once.
        const workflow = url.searchParams.get("workflow") === "rollback" ? env.ROLLBACK : env.EXAMPLE;
        const limit = url.searchParams.has("limit") ? Number(url.searchParams.get("limit")) : undefined;
        const ids = [];
        for (let i = 0; i < count; i++) {
          const instance = await workflow.create({ params: { key, holdSeconds, limit } });
          ids.push(instance.id);
        }
        return json({ started: ids });
      }
      if (request.method === "POST" && url.pathname === "/deploy") {
        const p = Object.fromEntries(url.searchParams);
        const deploy = { repo: p.repo ?? "acme/site", branch: p.branch ?? "main", sha: p.sha, head: p.head, holdSeconds: Number(p.hold ?? 5) };
        const instance = await env.EXAMPLE.create({ params: { deploy } });
        return json({ started: instance.id, deploy });
      }
      if (request.method === "POST" && url.pathname === "/report") {
        // Start the month's report once, however many ask, and wait for it.
        const month = url.searchParams.get("month") ?? "2026-12";
        const runKey = `report:${month}`;
        const report = { key: runKey, month, seconds: Math.min(Number(url.searchParams.get("seconds") ?? 3), 60) };
        const { instanceId, started } = await startOnce(env.RUNS, env.EXAMPLE, runKey, { report });
        const run = await awaitRun(env.RUNS, runKey, { timeoutMs: 60_000 });
        return json({ instanceId, started, ...run });
      }
      if (request.method === "GET" && url.pathname === "/report/events") {
        const runKey = `report:${url.searchParams.get("month") ?? "2026-12"}`;
        const stub = env.RUNS.get(env.RUNS.idFromName(runKey));
        return json(await stub.events(runKey, { after: Number(url.searchParams.get("after") ?? 0) }));
      }
      if (request.method === "GET" && url.pathname === "/group") {
        const group = url.searchParams.get("group") ?? "acme/site:main:deploy";
        return json(await env.BATON.serialInspect({ group }));
      }
      if (request.method === "GET" && url.pathname === "/inspect") {
        const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(key));
        return json(await stub.inspect(key));
      }
      if (request.method === "GET" && url.pathname === "/status") {
        const id = url.searchParams.get("id");
        const instance = await env.EXAMPLE.get(id).catch(() => env.ROLLBACK.get(id));
        return json(await instance.status());
      }
      // Everything else is Baton's own: the status page at /, the HTTP API
      // under /v1, /openapi.json. Under `npm start` only this Worker has the
      // port, so it passes those on through its service binding.
      return env.BATON.fetch(request);
    } catch (error) {
      return json({ error: String(error?.message ?? error) }, 400);
    }
  },
};
