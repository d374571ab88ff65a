// A user's Worker beside a standalone Baton (docs/deploying.md, "Standalone
// mode"): it reaches the Coordinator and the serial queue through bindings
// to the `baton` Worker. Type-checked with `tsc --strict` and bundled with
// `wrangler deploy --dry-run` by tests/miniflare/package.test.mjs.
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { RunSkipped, serialize, withKey } from "baton-workflows";
import type { Baton, Coordinator } from "baton-workflows/worker";

interface Env {
  COORDINATOR: DurableObjectNamespace<Coordinator>;
  BATON: Service<Baton>;
  DEPLOY: Workflow<DeployParams>;
  MIGRATE?: Workflow<{ repo: string }>;
}

type DeployParams = { repo: string; sha: string; head: string };

export class DeployWorkflow extends WorkflowEntrypoint<Env, DeployParams> {
  async run(event: WorkflowEvent<DeployParams>, step: WorkflowStep) {
    const { repo, sha, head } = event.payload;
    const migrated = await withKey(step, this.env.COORDINATOR, `migrate:${repo}`, event.instanceId,
      async () => step.do("migrate", async () => ({ migrated: sha })));
    if (migrated.superseded) return null;
    try {
      return await serialize(step, this.env.BATON, { group: `${repo}:deploy`, revision: sha, current: head },
        event.instanceId, async () => step.do("publish", async () => ({ published: sha })));
    } catch (error) {
      if (error instanceof RunSkipped) return { skippedFor: error.revision };
      throw error;
    }
  }
}

/**
 * A second Workflow, added later (docs/deploying.md, "Adding a Workflow later"): it
 * shares the deploy's key, and names its binding on Baton so Baton checks
 * and wakes its instances through it (contract §1a).
 */
export class MigrateWorkflow extends WorkflowEntrypoint<Env, { repo: string }> {
  async run(event: WorkflowEvent<{ repo: string }>, step: WorkflowStep) {
    const { repo } = event.payload;
    return withKey(step, this.env.COORDINATOR, `migrate:${repo}`, event.instanceId,
      async () => step.do("migrate", async () => ({ migrated: repo })), { workflow: "MIGRATE" });
  }
}

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/start") {
      const { id, ...params } = (await request.json()) as DeployParams & { id: string };
      return Response.json({ id: (await env.DEPLOY.create({ id, params })).id });
    }
    if (url.pathname === "/status") {
      return Response.json(await (await env.DEPLOY.get(url.searchParams.get("id") ?? "")).status());
    }
    const key = url.searchParams.get("key") ?? "demo";
    const stub = env.COORDINATOR.get(env.COORDINATOR.idFromName(key));
    return Response.json({
      key: await stub.inspect(key),
      group: await env.BATON.serialInspect({ group: key }),
    });
  },
} satisfies ExportedHandler<Env>;
