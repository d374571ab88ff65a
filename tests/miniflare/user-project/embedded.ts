// A user's Worker that embeds Baton (docs/deploying.md, "Embedded mode"): it
// re-exports Baton's Durable Object classes, declares its own Workflow, and
// serves Baton's HTTP API from its own fetch. tests/miniflare/package.test.mjs
// installs the packed `baton-workflows` tarball beside this file, type-checks it with
// `tsc --strict`, bundles it with `wrangler deploy --dry-run` and runs it in
// miniflare.
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { serialize, withKey } from "baton-workflows";
import { batonService, handleFetch, type Coordinator, type Debouncer, type RateLimiter, type Runs } from "baton-workflows/worker";

// Baton's Durable Object classes, served by this Worker.
export { BusyList, Coordinator, Debouncer, RateLimiter, Runs } from "baton-workflows/worker";

interface Env {
  COORDINATOR: DurableObjectNamespace<Coordinator>;
  DEBOUNCER: DurableObjectNamespace<Debouncer>;
  RATE_LIMITER: DurableObjectNamespace<RateLimiter>;
  RUNS: DurableObjectNamespace<Runs>;
  DB: D1Database;
  DEPLOY: Workflow<DeployParams>;
}

type DeployParams = { key: string; holdSeconds?: number };

export class DeployWorkflow extends WorkflowEntrypoint<Env, DeployParams> {
  async run(event: WorkflowEvent<DeployParams>, step: WorkflowStep) {
    const { key, holdSeconds = 1 } = event.payload;
    const held = await withKey(step, this.env.COORDINATOR, key, event.instanceId, async () => {
      const from = await step.do("held from", async () => Date.now());
      await step.sleep("hold", `${holdSeconds} seconds`);
      const to = await step.do("held to", async () => Date.now());
      return { from, to };
    }, { turnTimeout: "1 minute" });
    if (held.superseded) return { superseded: true };

    // The serial queue, served in this Worker: no service binding needed.
    const deployed = await serialize(step, batonService(this.env),
      { group: key, revision: event.instanceId }, event.instanceId,
      async () => step.do("publish", async () => `published ${event.instanceId}`),
      { pollInterval: 1000 });
    return { held: held.value, deployed };
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/start") {
      const params = (await request.json()) as DeployParams & { id: string };
      const instance = await env.DEPLOY.create({ id: params.id, params });
      return Response.json({ id: instance.id });
    }
    if (url.pathname === "/status") {
      const instance = await env.DEPLOY.get(url.searchParams.get("id") ?? "");
      return Response.json(await instance.status());
    }
    // Everything else is Baton's: the HTTP API under /v1, the status page.
    return handleFetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
