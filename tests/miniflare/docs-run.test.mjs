// The README's examples run as written, in a user's Worker built from
// docs/deploying.md's configs, embedded and standalone, against real
// Workflows, Durable Objects and D1 in Miniflare.
//
// The Worker is generated from the pages: each README block is pasted
// verbatim where the README says it goes (a Workflow's `run(event, step)`
// or a Worker's `fetch(request, env)`), beside the reader's own names it
// uses (`deploy`, `publish`, `repo`, ...: small stand-ins here). Standalone,
// the one change is the one the README tells a reader to make:
// `batonService(env)` becomes the service binding `env.BATON`. docs/runs.md's
// `Report` Workflow (the other half of the README's startOnce) and
// docs/coordinator.md's fence example run too. The package is the tarball
// `npm pack` makes; the configs are Deploying's own blocks, with the
// README's extra Workflows added as "Adding a Workflow later" says.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Harness, ROOT, applyMigrations } from "./harness.mjs";
import { codeBlocks } from "./docs-blocks.mjs";
import { block, bundledOptions, dryRun, miniflare, pack, userProject } from "./user-projects.mjs";

/** The README's examples, each found by the call it shows; every js block of the README is one of them. */
function readmeExamples() {
  const blocks = codeBlocks("README.md").filter((b) => b.lang === "js");
  const by = {
    withKey: /\bwithKey\(/,
    serialize: /\bserialize\(/,
    debounce: /\bdebounce\(/,
    rateLimit: /\bwithRateLimit\(/,
    startOnce: /\bstartOnce\(/,
    busy: /\bcoordinatorList\(/,
  };
  const found = {};
  for (const [name, pattern] of Object.entries(by)) {
    const matching = blocks.filter((b) => pattern.test(b.text));
    assert.equal(matching.length, 1, `one README block shows ${pattern}`);
    found[name] = matching[0].text;
  }
  assert.equal(blocks.length, Object.keys(by).length, "every README js block is run here: add a new one to readmeExamples and userWorker");
  return found;
}

/** A docs page's one js block that contains `marker`. */
function docsBlock(page, marker) {
  const matching = codeBlocks(page).filter((b) => b.text.includes(marker));
  assert.equal(matching.length, 1, `${page} has one block with ${marker}`);
  return matching[0].text;
}

const importsOf = (text) => text.split("\n").filter((l) => /^import\s/.test(l));
const withoutImports = (text) => text.split("\n").filter((l) => !/^import\s/.test(l)).join("\n");

/** The user's Worker (src/index.ts) for `mode`, the README's blocks pasted in. */
function userWorker(mode) {
  const readme = readmeExamples();
  // What the README tells a standalone reader to change, and nothing else.
  const as = (text) => (mode === "standalone" ? text.replace(/batonService\((this\.env|env)\)/g, "$1.BATON") : text);
  const report = docsBlock("docs/runs.md", "reportRun(step");
  const fence = docsBlock("docs/coordinator.md", "AND fence");
  const imports = new Set([
    'import { WorkflowEntrypoint } from "cloudflare:workers";',
    // The names the README says its examples import.
    'import { withKey, serialize, RunSkipped, debounce, withRateLimit, startOnce, awaitRun } from "baton-workflows";',
    ...importsOf(report),
  ]);
  if (mode === "embedded") {
    imports.add('import { batonService, handleFetch } from "baton-workflows/worker";');
    for (const line of importsOf(fence)) imports.add(line);
  }
  return `${[...imports].join("\n")}
${mode === "embedded" ? 'export { BusyList, Coordinator, Debouncer, RateLimiter, Runs } from "baton-workflows/worker";' : ""}

// The reader's own work, which the examples call: stand-ins.
const pause = (ms) => new Promise((done) => setTimeout(done, ms));
const deploy = async (repo, fence) => {
  if (repo.startsWith("slow/")) await pause(5000);
  return { repo, fence };
};
const publish = async (sha) => \`published \${sha}\`;
const callProvider = async (company) => \`enriched \${company}\`;
const queryMonth = async (month) => [month.length, 2, 3];
const sum = (rows) => rows.reduce((a, b) => a + b, 0);

export class DeployWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const { repo, branch = "main", sha, head } = event.payload;
    const held = await (async () => {
${as(readme.withKey)}
      return result;
    })();
    if (held === undefined) return { superseded: true };
    if (sha === undefined) return { deployed: held.value };
    const published = await (async () => {
${as(readme.serialize)}
      return { published: sha };
    })();
    return { deployed: held.value, published };
  }
}

export class EnrichWorkflow extends WorkflowEntrypoint {
  async run(event, step) {
    const { customer, companies } = event.payload;
    for (const company of companies) {
${as(readme.rateLimit)}
    }
    return { enriched: companies.length };
  }
}

${withoutImports(report)}
${mode === "embedded" ? fenceWorkflow(withoutImports(fence)) : ""}
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const start = async (binding) => {
      const { id, ...params } = await request.json();
      return Response.json({ id: (await env[binding].create({ id, params })).id });
    };
    if (request.method === "POST" && url.pathname === "/start") return start(url.searchParams.get("workflow"));
    if (url.pathname === "/status") {
      const instance = await env[url.searchParams.get("workflow")].get(url.searchParams.get("id"));
      return Response.json(await instance.status());
    }
    if (request.method === "POST" && url.pathname === "/push") {
      const push = await request.json();
      const { repo } = push;
${as(readme.debounce)}
      return Response.json({ instanceId });
    }
    if (url.pathname === "/report") {
      const month = url.searchParams.get("month");
${as(readme.startOnce)}
      return Response.json({ state: run.state }, { status: 202 });
    }
    if (url.pathname === "/busy") {
${as(readme.busy)}
      return Response.json({ keys, cursor });
    }
    return ${mode === "embedded" ? "handleFetch(request, env, ctx)" : 'new Response("not found", { status: 404 })'};
  },
};
`;
}

/**
 * docs/coordinator.md's fence example in a Workflow whose step is wrapped
 * by a fault injector: the step named "publish" runs its callback twice in
 * one attempt, as the engine's retry of an attempt whose write committed
 * (steps are at least once).
 */
function fenceWorkflow(body) {
  return `
const retriedAfterCommit = (real) => ({
  do: (name, ...rest) => {
    const callback = rest.pop();
    const twice = name === "publish" ? async () => { await callback(); return callback(); } : callback;
    return real.do(name, ...rest, twice);
  },
  waitForEvent: (...args) => real.waitForEvent(...args),
  sleep: (...args) => real.sleep(...args),
});

export class FenceWorkflow extends WorkflowEntrypoint {
  async run(event, realStep) {
    const { site, version } = event.payload;
    const step = retriedAfterCommit(realStep);
${body}
    return { site, version };
  }
}
`;
}

const workflowBlock = (binding, name, className, script) =>
  `\n[[workflows]]\nbinding = "${binding}"\nname = "${name}"\nclass_name = "${className}"\n${script ? `script_name = "${script}"\n` : ""}`;

let scratch;
let tarball;

before(() => {
  assert.ok(existsSync(path.join(ROOT, "build/index_bg.wasm")), "build/ is missing: run `npm run build` first");
  scratch = mkdtempSync(path.join(tmpdir(), "baton-docs-run-"));
  tarball = pack(scratch).tarball;
});

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** The README's examples against a running user's Worker (`mf`, the user's Worker first). */
function readmeTests(mode, context) {
  const call = async (route, init) => {
    const response = await context.mf.dispatchFetch(`http://user${route}`, init);
    const text = await response.text();
    assert.ok(response.ok, `${route}: ${response.status} ${text}`);
    return JSON.parse(text);
  };
  const startDeploy = (params) => call("/start?workflow=DEPLOY", { method: "POST", body: JSON.stringify(params) });
  const finished = (workflow, id) =>
    context.harness.until(`${workflow} ${id} to finish`, async () => {
      const s = await call(`/status?workflow=${workflow}&id=${id}`);
      return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
    });

  test(`${mode}: withKey, three deploys of one repo hold its key in turn, fences 1, 2, 3`, async () => {
    const ids = [];
    for (let i = 1; i <= 3; i++) ids.push((await startDeploy({ id: `${mode}-key-${i}`, repo: "acme/site" })).id);
    const outputs = [];
    for (const id of ids) {
      const status = await finished("DEPLOY", id);
      assert.equal(status.status, "complete", `${id}: ${JSON.stringify(status)}`);
      outputs.push(status.output.deployed);
    }
    assert.deepEqual(outputs.map((o) => o.fence).sort(), [1, 2, 3]);
  });

  test(`${mode}: serialize, the head deploys and a stale revision completes as skipped (RunSkipped caught)`, async () => {
    const stale = await startDeploy({ id: `${mode}-stale`, repo: "acme/web", sha: "a1", head: "b2" });
    const head = await startDeploy({ id: `${mode}-head`, repo: "acme/web", sha: "b2", head: "b2" });
    const skipped = await finished("DEPLOY", stale.id);
    assert.equal(skipped.status, "complete", `a skipped revision must not error the instance: ${JSON.stringify(skipped)}`);
    assert.deepEqual(skipped.output.published, { skippedFor: "b2" });
    const deployed = await finished("DEPLOY", head.id);
    assert.deepEqual([deployed.status, deployed.output.published], ["complete", { published: "b2" }]);
  });

  test(`${mode}: debounce, a burst of pushes starts one deploy, with the latest push`, async () => {
    const ids = new Set();
    for (const sha of ["p1", "p2", "p3"]) {
      ids.add((await call("/push", { method: "POST", body: JSON.stringify({ repo: "acme/app", sha, head: sha }) })).instanceId);
    }
    assert.equal(ids.size, 1, `one run per burst: ${[...ids]}`);
    // The README's delayMs is 10 s: the run starts then.
    const status = await context.harness.until(
      "the debounced deploy to finish",
      async () => {
        const s = await call(`/status?workflow=DEPLOY&id=${[...ids][0]}`).catch(() => null);
        return s && ["complete", "errored", "terminated"].includes(s.status) ? s : null;
      },
      90_000,
    );
    assert.equal(status.status, "complete", JSON.stringify(status));
    assert.deepEqual(status.output.published, { published: "p3" });
  });

  test(`${mode}: withRateLimit, more calls than the rule's 5 a second all run`, async () => {
    const companies = ["a", "b", "c", "d", "e", "f", "g"];
    const { id } = await call("/start?workflow=ENRICH", { method: "POST", body: JSON.stringify({ id: `${mode}-enrich`, customer: "c42", companies }) });
    const status = await finished("ENRICH", id);
    assert.deepEqual([status.status, status.output], ["complete", { enriched: 7 }]);
  });

  test(`${mode}: startOnce and awaitRun, three requests at once get one run's result`, async () => {
    const answers = await Promise.all([1, 2, 3].map(() => call("/report?month=2026-12")));
    for (const answer of answers) assert.deepEqual(answer, { month: "2026-12", total: 12 });
  });

  test(`${mode}: what is busy lists a key while an instance waits for it`, async () => {
    const ids = [];
    for (let i = 1; i <= 2; i++) ids.push((await startDeploy({ id: `${mode}-busy-${i}`, repo: "slow/x" })).id);
    const listed = await context.harness.until("deploy:slow/x to be listed with a waiter", async () => {
      const { keys } = await call("/busy");
      return keys.find((k) => k.key === "deploy:slow/x" && k.waiting >= 1);
    });
    assert.equal(listed.holders, 1);
    for (const id of ids) assert.equal((await finished("DEPLOY", id)).status, "complete");
  });
}

describe("the README in a user's Worker with Baton embedded (docs/deploying.md's config)", () => {
  const context = {};
  before(async () => {
    const dir = userProject(scratch, tarball, "embedded");
    writeFileSync(path.join(dir, "src/index.ts"), userWorker("embedded"));
    const config =
      block("embedded/wrangler.toml") +
      'WORKFLOW_BINDINGS = "DEPLOY,REPORT"\n' +
      workflowBlock("REPORT", "report", "Report") +
      workflowBlock("ENRICH", "enrich", "EnrichWorkflow") +
      workflowBlock("FENCE", "fence", "FenceWorkflow");
    dryRun(dir, config);
    context.mf = miniflare([bundledOptions(dir)]);
    await context.mf.ready;
    const db = await context.mf.getD1Database("DB");
    await applyMigrations(db, path.join(dir, "node_modules/baton-workflows/migrations"));
    await db.prepare("CREATE TABLE sites (id TEXT PRIMARY KEY, version TEXT NOT NULL, fence INTEGER NOT NULL DEFAULT 0)").run();
    await db.prepare("INSERT INTO sites (id, version, fence) VALUES ('1', 'v0', 0), ('2', 'v0', 99)").run();
    context.db = db;
    context.harness = new Harness(context.mf);
  });
  after(async () => {
    await context.mf?.dispose();
  });

  readmeTests("embedded", context);

  test("embedded: docs/coordinator.md's fence example lets the holder's retried write through and refuses a stale one", async () => {
    const start = (id, site, version) =>
      context.mf.dispatchFetch("http://user/start?workflow=FENCE", { method: "POST", body: JSON.stringify({ id, site, version }) }).then((r) => r.json());
    const status = async (id) =>
      context.harness.until(`${id} to finish`, async () => {
        const s = await (await context.mf.dispatchFetch(`http://user/status?workflow=FENCE&id=${id}`)).json();
        return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
      });
    // Row 1 at fence 0: the holder (fence 1) writes, and its write again.
    await start("fence-retried", "1", "v1");
    const retried = await status("fence-retried");
    assert.equal(retried.status, "complete", `the rightful holder's retried write was refused: ${JSON.stringify(retried)}`);
    assert.deepEqual(await context.db.prepare("SELECT version, fence FROM sites WHERE id = '1'").first(), { version: "v1", fence: 1 });
    // Row 2 already at fence 99: this holder's fence 1 is stale.
    await start("fence-stale", "2", "v2");
    const stale = await status("fence-stale");
    // The example's NonRetryableError("stale holder") ends the instance.
    assert.equal(stale.status, "errored", JSON.stringify(stale));
    assert.deepEqual(await context.db.prepare("SELECT version, fence FROM sites WHERE id = '2'").first(), { version: "v0", fence: 99 });
  });
});

describe("the README in a user's Worker beside a standalone Baton (docs/deploying.md's configs)", () => {
  const context = {};
  before(async () => {
    const baton = userProject(scratch, tarball, "baton");
    const worker = userProject(scratch, tarball, "my-worker");
    writeFileSync(path.join(worker, "src/index.ts"), userWorker("standalone"));
    dryRun(worker, block("standalone/my-worker/wrangler.toml") + workflowBlock("REPORT", "report", "Report") + workflowBlock("ENRICH", "enrich", "EnrichWorkflow"));
    dryRun(
      baton,
      block("standalone/baton/wrangler.toml") +
        block("standalone/baton/wrangler.toml+workflow") +
        workflowBlock("REPORT", "report", "Report", "my-worker") +
        '\n[vars]\nWORKFLOW_BINDINGS = "WORKFLOW,REPORT"\n',
    );
    context.mf = miniflare([bundledOptions(worker), bundledOptions(baton)]);
    await context.mf.ready;
    await applyMigrations(await context.mf.getD1Database("DB", "baton"), path.join(baton, "node_modules/baton-workflows/migrations"));
    context.harness = new Harness(context.mf);
  });
  after(async () => {
    await context.mf?.dispose();
  });

  readmeTests("standalone", context);
});
