// A user's Worker with Baton embedded: Baton's classes re-exported, its
// HTTP API behind the Worker's own routes, and two Workflows of the user's:
//
// - MigrateWorkflow runs one migration per database at a time (`withKey`),
//   each waiting for an operator's go-ahead while it holds the key;
// - PublishWorkflow publishes a site, one run per site at a time, the newest
//   revision winning over older ones still waiting (`serialize`);
// - ReindexWorkflow rebuilds a search index, one run per index at a time,
//   its flow control declared on the class (`coordinated`): no Baton call
//   in its code, no binding named.
//
// Both wait for an `approved` event inside their body, so a test decides
// when a holder lets go: the suite in test/ runs them under Cloudflare's
// Vitest plugin (docs/testing.md in Baton's repository).
import { WorkflowEntrypoint, type WorkflowEvent, type WorkflowStep } from "cloudflare:workers";
import { coordinated, RunSkipped, serialize, withKey, type WithKeyGrant } from "baton-workflows";
import { batonService, handleFetch, type Coordinator } from "baton-workflows/worker";

export { BusyList, Coordinator, Debouncer, RateLimiter, Runs } from "baton-workflows/worker";

export interface Env {
  COORDINATOR: DurableObjectNamespace<Coordinator>;
  DB: D1Database;
  MIGRATE: Workflow<MigrateParams>;
  PUBLISH: Workflow<PublishParams>;
  REINDEX: Workflow<ReindexParams>;
}

export interface ReindexParams {
  index: string;
}

export interface MigrateParams {
  database: string;
}

export interface PublishParams {
  site: string;
  revision: string;
}

/** What the body of either Workflow waits for before it does its work. */
export const APPROVED = "approved";

export class MigrateWorkflow extends WorkflowEntrypoint<Env, MigrateParams> {
  async run(event: WorkflowEvent<MigrateParams>, step: WorkflowStep) {
    const held = await withKey(step, this.env.COORDINATOR, `migrate:${event.payload.database}`, event.instanceId,
      async ({ fence }) => {
        await step.waitForEvent("approval", { type: APPROVED, timeout: "1 hour" });
        // The fence goes with the write, so the database can refuse a
        // holder Baton has since judged dead.
        return step.do("migrate", async () => ({ database: event.payload.database, fence }));
      }, { workflow: "MIGRATE" });
    return held.superseded ? { migrated: null } : { migrated: held.value };
  }
}

export class PublishWorkflow extends WorkflowEntrypoint<Env, PublishParams> {
  async run(event: WorkflowEvent<PublishParams>, step: WorkflowStep) {
    const { site, revision } = event.payload;
    try {
      return await serialize(step, batonService(this.env, this.ctx), { group: `publish:${site}`, revision },
        event.instanceId, async ({ fence }) => {
          await step.waitForEvent("approval", { type: APPROVED, timeout: "1 hour" });
          return step.do("publish", async () => ({ published: revision, fence }));
        }, { workflow: "PUBLISH" });
    } catch (error) {
      // A newer revision replaced this one while it waited: nothing to publish.
      if (error instanceof RunSkipped) return { published: null, supersededBy: error.revision };
      throw error;
    }
  }
}

export class ReindexWorkflow extends coordinated(WorkflowEntrypoint, {
  coordinator: (env: Env) => env.COORDINATOR,
  key: (event: { payload: ReindexParams }) => `reindex:${event.payload.index}`,
})<Env, ReindexParams> {
  async run(event: WorkflowEvent<ReindexParams>, step: WorkflowStep, grant?: WithKeyGrant) {
    await step.waitForEvent("approval", { type: APPROVED, timeout: "1 hour" });
    return step.do("reindex", async () => ({ index: event.payload.index, fence: grant?.fence ?? 0 }));
  }
}

export default {
  async fetch(request: Request, env: Env, ctx: ExecutionContext) {
    // The Worker's own routes first, then Baton's HTTP API (/v1/...), its
    // status page (/) and /openapi.json.
    const url = new URL(request.url);
    if (url.pathname === "/migrate" && request.method === "POST") {
      const instance = await env.MIGRATE.create({ params: { database: url.searchParams.get("database") ?? "main" } });
      return Response.json({ id: instance.id });
    }
    return handleFetch(request, env, ctx);
  },
} satisfies ExportedHandler<Env>;
