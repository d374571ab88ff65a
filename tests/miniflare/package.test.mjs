// The npm package as a user gets it: `npm pack`, installed from the tarball
// into scratch Worker projects (in a temp dir, with their own wrangler
// configs and their own Workflows), the way docs/deploying.md tells a
// user to set them up. The wrangler configs are that page's own blocks
// (```toml file=...), so the page cannot drift from what is tested.
//
// - the tarball holds every module its entry points import, its license,
//   migrations and docs (so the README's links resolve in it), and nothing
//   else; `npm publish --dry-run` passes and would publish exactly it;
// - every Durable Object class of baton-workflows/worker is declared, embedded and
//   deployed (the test names the place a new class is missing from);
// - a user's Workflow typed with @cloudflare/workers-types compiles with
//   `tsc --strict` (embedded and standalone, and docs/deploying.md's samples);
// - embedded mode: `wrangler deploy --dry-run` bundles the user's Worker with
//   wrangler's default rules and lists its bindings, and the bundle runs in
//   miniflare, its Workflow using withKey and serialize against the classes
//   it re-exports;
// - standalone mode: every step of the first-deploy order, and adding a
//   Workflow later, passes `wrangler deploy --dry-run` with that step's
//   config; step 1's Baton serves without a Workflow binding (and logs it
//   when a call needs one); the two
//   bundles of steps 2 and 3 run the user's Workflow against Baton.
//
// Offline except for wrangler's update check: the tarball has no
// dependencies, so installing it needs no registry.
//
// Not behind the strict binding (RELIABILITY.md): it tests the npm package
// and wrangler's bundle as a user gets them, not Baton behind the harness.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { COMPATIBILITY_DATE, Harness, ROOT, applyMigrations } from "./harness.mjs";
import { BIN, ENV, block, bundledOptions, deployingBlocks as readmeBlocks, dryRun, miniflare, pack, run, userProject as projectIn } from "./user-projects.mjs";

let scratch;
let tarball;
let packed;

/** A user's project `name` in this suite's scratch dir (user-projects.mjs). */
const userProject = (name, source) => projectIn(scratch, tarball, name, source);

/**
 * `tsc --strict` over the project's src/index.ts and docs/deploying.md's TypeScript
 * block `readme` (as src/readme.ts), with the fixture's tsconfig.
 */
function typeCheck(dir, readme) {
  writeFileSync(path.join(dir, "src/readme.ts"), block(readme));
  const config = { extends: "./tsconfig.json", files: ["src/index.ts", "src/readme.ts"] };
  writeFileSync(path.join(dir, "tsconfig.test.json"), JSON.stringify(config));
  run(path.join(BIN, "tsc"), ["-p", path.join(dir, "tsconfig.test.json")], dir);
}

function assertBindings(output, present, absent = []) {
  for (const binding of present) {
    assert.ok(output.includes(binding), `bindings should list ${binding}:\n${output}`);
  }
  for (const binding of absent) {
    assert.ok(!output.includes(binding), `bindings should not list ${binding}:\n${output}`);
  }
}

before(() => {
  assert.ok(existsSync(path.join(ROOT, "build/index_bg.wasm")), "build/ is missing: run `npm run build` first");
  scratch = mkdtempSync(path.join(tmpdir(), "baton-package-"));
  const info = pack(scratch);
  tarball = info.tarball;
  packed = new Set(info.files);
});

after(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

test("the package is baton-workflows, packed as baton-workflows-<version>.tgz", () => {
  const { name, version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  assert.equal(name, "baton-workflows");
  assert.equal(path.basename(tarball), `baton-workflows-${version}.tgz`);
});

test("the pins: wrangler exact, its own Miniflare, and every config on its workerd's date", () => {
  const { devDependencies } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const installed = (name) => JSON.parse(readFileSync(path.join(ROOT, "node_modules", name, "package.json"), "utf8"));
  const wrangler = installed("wrangler");
  assert.equal(devDependencies.wrangler, wrangler.version, "wrangler is pinned exactly (npm run upgrade-runtime)");
  assert.equal(devDependencies.miniflare, wrangler.dependencies.miniflare, "the tests' Miniflare is wrangler's own");
  assert.equal(installed("miniflare").version, wrangler.dependencies.miniflare);
  assert.equal(installed("workerd").version, wrangler.dependencies.workerd, "the tests run the workerd wrangler dev runs");
  const configs = ["wrangler.toml", "example/wrangler.toml", "example/embedded.toml"].map((f) => [f, readFileSync(path.join(ROOT, f), "utf8")]);
  configs.push(...[...readmeBlocks()].map(([name, text]) => [`docs/deploying.md's ${name}`, text]));
  let dated = 0;
  for (const [name, text] of configs) {
    for (const [, date] of text.matchAll(/^compatibility_date = "([^"]+)"$/gm)) {
      assert.equal(date, COMPATIBILITY_DATE, `${name}: compatibility_date`);
      dated += 1;
    }
  }
  assert.ok(dated >= 6, `compatibility dates found: ${dated}`);
});

/** What the tarball may hold, and nothing else: the package's code, its migrations, its docs. */
const PACKAGE_FILES = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^CHANGELOG\.md$/,
  /^RELIABILITY\.md$/,
  /^docs\/[\w-]+\.md$/,
  /^js\/[\w-]+\.(mjs|d\.ts)$/,
  /^build\/(index\.js|assets\.js|index_bg\.wasm)$/,
  /^migrations\/\d{4}_\w+\.sql$/,
];

test("the tarball holds the package, its license, migrations and docs, and nothing else", () => {
  const stray = [...packed].filter((f) => !PACKAGE_FILES.some((pattern) => pattern.test(f)));
  assert.deepEqual(stray, [], "files in the tarball that a user does not need (package.json \"files\")");
  const wanted = [
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "js/index.mjs",
    "js/index.d.ts",
    "js/worker.mjs",
    "js/worker.d.ts",
    "build/index_bg.wasm",
    ...readdirSync(path.join(ROOT, "migrations")).filter((f) => f.endsWith(".sql")).map((f) => `migrations/${f}`),
    ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
  ];
  assert.deepEqual(wanted.filter((f) => !packed.has(f)), [], "files a user needs that the tarball lacks");
  const { license } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  assert.equal(license, "Apache-2.0");
  assert.match(readFileSync(path.join(ROOT, "LICENSE"), "utf8"), /^\s*Apache License\s+Version 2\.0, January 2004/);
});

test("every relative link of the README resolves inside the tarball", () => {
  const readme = readFileSync(path.join(ROOT, "README.md"), "utf8").replace(/^```[\s\S]*?^```$/gm, "");
  const targets = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z]+:/i.test(t));
  assert.ok(targets.length >= 10, `links found: ${targets}`);
  const missing = targets.filter((t) => !packed.has(path.posix.normalize(t)));
  assert.deepEqual(missing, [], "README links to files the tarball does not hold (package.json \"files\")");
});

test("npm publish --dry-run passes and would publish exactly this tarball's files", () => {
  // An unreachable registry: the dry run must not need the network.
  const output = run("npm", ["publish", "--dry-run", "--ignore-scripts", "--json", "--registry", "http://127.0.0.1:9/"], ROOT);
  const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const report = JSON.parse(output)["baton-workflows"];
  assert.equal(report.version, version);
  assert.deepEqual(new Set(report.files.map((f) => f.path)), packed);
});

test("the tarball holds every module its entry points import", () => {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const targets = Object.values(manifest.exports).flatMap((t) => (typeof t === "string" ? [t] : Object.values(t)));
  const pending = targets.filter((t) => !t.includes("*")).map((t) => path.posix.normalize(t));
  const seen = new Set();
  while (pending.length > 0) {
    const file = pending.pop();
    if (seen.has(file)) continue;
    seen.add(file);
    assert.ok(packed.has(file), `${file} is imported or exported but not in the tarball (package.json "files")`);
    if (!/\.(m?js|d\.ts)$/.test(file)) continue;
    const text = readFileSync(path.join(ROOT, file), "utf8");
    for (const [, spec] of text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)) {
      const resolved = path.posix.join(path.posix.dirname(file), spec);
      // A declaration's "./index.js" is its sibling index.d.ts.
      pending.push(file.endsWith(".d.ts") ? resolved.replace(/\.js$/, ".d.ts") : resolved);
    }
  }
  assert.ok(seen.has("build/index_bg.wasm"), `the WASM is reached from baton-workflows/worker: ${[...seen]}`);
  assert.ok([...packed].some((f) => /^migrations\/.*\.sql$/.test(f)), `D1 migrations ship: ${[...packed]}`);
});

test("every Durable Object class of baton-workflows/worker is declared, embedded and deployed", () => {
  // What a new class must add to join both modes: this test names the file.
  const read = (file) => readFileSync(path.join(ROOT, file), "utf8");
  const classes = [...read("js/worker.mjs").matchAll(/^export class (\w+) extends DurableObject\b/gm)].map((m) => m[1]);
  assert.ok(classes.includes("Coordinator"), `classes found in js/worker.mjs: ${classes}`);
  const embeddedExports = read("tests/miniflare/user-project/embedded.ts").match(/^export \{ ([^}]+) \} from "baton-workflows\/worker";$/m)[1];
  const places = {
    "js/worker.d.ts (export declare class X extends DurableObject)": (c) =>
      new RegExp(`^export declare class ${c} extends DurableObject\\b`, "m").test(read("js/worker.d.ts")),
    "tests/miniflare/user-project/embedded.ts (export { ... } from \"baton-workflows/worker\")": (c) =>
      embeddedExports.split(/,\s*/).includes(c),
  };
  for (const name of ["embedded/wrangler.toml", "standalone/baton/wrangler.toml"]) {
    places[`docs/deploying.md's ${name} (binding and new_sqlite_classes)`] = (c) =>
      block(name).includes(`class_name = "${c}"`) && new RegExp(`new_sqlite_classes = \\[[^\\]]*"${c}"`).test(block(name));
  }
  places["wrangler.toml (binding and new_sqlite_classes)"] = (c) =>
    read("wrangler.toml").includes(`class_name = "${c}"`) && new RegExp(`new_sqlite_classes = \\[[^\\]]*"${c}"`).test(read("wrangler.toml"));
  for (const c of classes) {
    for (const [place, has] of Object.entries(places)) {
      assert.ok(has(c), `${c} is exported by js/worker.mjs but missing from ${place}`);
    }
  }
});

describe("embedded mode: Baton inside the user's Worker", () => {
  let dir;
  before(() => {
    dir = userProject("embedded", "embedded.ts");
  });

  test("the user's typed Workflow compiles with tsc --strict", () => {
    typeCheck(dir, "embedded/src/index.ts");
  });

  test("wrangler deploy --dry-run bundles it with the default rules and lists its bindings", () => {
    const output = dryRun(dir, block("embedded/wrangler.toml"));
    assertBindings(output, ["env.COORDINATOR (Coordinator)", "env.DEBOUNCER (Debouncer)", "env.RATE_LIMITER (RateLimiter)", "env.RUNS (Runs)", "env.DEPLOY (DeployWorkflow)", "env.DB (baton)"]);
  });

  test("its Workflow runs withKey and serialize against the embedded classes", async () => {
    // The bundle wrangler made above, as it would upload it.
    const mf = miniflare([bundledOptions(dir, { BATON_TOKEN: "package-test" })]);
    try {
      await mf.ready;
      await applyMigrations(await mf.getD1Database("DB"), path.join(dir, "node_modules/baton-workflows/migrations"));
      const harness = new Harness(mf);
      const call = async (route, init) => {
        const response = await mf.dispatchFetch(`http://user${route}`, init);
        const text = await response.text();
        assert.ok(response.ok, `${route}: ${response.status} ${text}`);
        return JSON.parse(text);
      };
      const ids = ["deploy-1", "deploy-2", "deploy-3"];
      for (const id of ids) {
        await call("/start", { method: "POST", body: JSON.stringify({ id, key: "site", holdSeconds: 1 }) });
      }
      const outputs = [];
      for (const id of ids) {
        const status = await harness.until(`${id} to finish`, async () => {
          const s = await call(`/status?id=${id}`);
          return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
        });
        assert.equal(status.status, "complete", `${id}: ${JSON.stringify(status)}`);
        assert.equal(status.output.deployed, `published ${id}`);
        outputs.push(status.output.held);
      }
      // One holder at a time: the held spans, in order, never overlap.
      outputs.sort((a, b) => a.from - b.from);
      for (let i = 1; i < outputs.length; i++) {
        assert.ok(outputs[i].from >= outputs[i - 1].to, `held spans overlap: ${JSON.stringify(outputs)}`);
      }
      // The HTTP API, served from the user's own fetch.
      const view = await call("/v1/keys/site", { headers: { authorization: "Bearer package-test" } });
      assert.equal(view.holder, null);
      const group = await call("/v1/groups/site", { headers: { authorization: "Bearer package-test" } });
      assert.deepEqual(group.recent.map((r) => r.outcome).sort(), ["released", "released", "released"]);
      // The OpenAPI document too: static/'s files are a JS module (build/assets.js)
      // that the user's bundle must have picked up with wrangler's default rules.
      assert.deepEqual(await call("/openapi.json"), JSON.parse(readFileSync(path.join(ROOT, "static/openapi.json"), "utf8")));
    } finally {
      await mf.dispose();
    }
  });

  test("§9a: with docs/deploying.md's metrics block the dry run binds the dataset", () => {
    const output = dryRun(dir, block("embedded/wrangler.toml") + block("embedded/wrangler.toml+metrics"));
    assertBindings(output, ["env.BATON_METRICS", "env.COORDINATOR (Coordinator)"]);
  });
});

describe("standalone mode: the first deploy binds nothing that does not exist yet", () => {
  let baton;
  let worker;
  before(() => {
    baton = userProject("baton");
    worker = userProject("my-worker", "standalone.ts");
  });

  test("the user's typed Workflow compiles with tsc --strict", () => {
    typeCheck(worker, "standalone/my-worker/src/env.ts");
  });

  test("1. Baton, with no Workflow binding", async () => {
    const output = dryRun(baton, block("standalone/baton/wrangler.toml"));
    assertBindings(output, ["env.COORDINATOR (Coordinator)", "env.DB (baton)"], ["Workflow"]);
    // It serves, and a call that needs the Workflow says what is missing.
    let printed = "";
    const mf = miniflare([bundledOptions(baton, { BATON_TOKEN: "package-test" })], {
      handleStructuredLogs: (log) => (printed += `${log.message}\n`),
    });
    try {
      const page = await mf.dispatchFetch("http://baton/");
      assert.equal(page.status, 200, await page.text());
      const acquire = (instanceId) =>
        mf.dispatchFetch("http://baton/v1/keys/site/acquire", {
          method: "POST",
          headers: { authorization: "Bearer package-test", "content-type": "application/json" },
          body: JSON.stringify({ instanceId }),
        });
      // A free key is granted without asking the Workflow anything...
      assert.deepEqual(await (await acquire("deploy-1")).json(), { status: "granted" });
      // ...a held one needs the holder's status, through the missing
      // binding: the caller waits (nothing is taken on a guess) and the
      // log names the binding to configure.
      assert.deepEqual(await (await acquire("deploy-2")).json(), { status: "pending" });
      await new Harness(mf).until("the missing binding to be logged", () =>
        /no Workflow binding named "WORKFLOW"/.test(printed),
      );
    } finally {
      await mf.dispose();
    }
  });

  test("2. the user's Worker, bound to Baton (which exists now)", () => {
    const output = dryRun(worker, block("standalone/my-worker/wrangler.toml"));
    assertBindings(output, ["env.COORDINATOR (Coordinator, defined in baton)", "env.DEBOUNCER (Debouncer, defined in baton)", "env.RATE_LIMITER (RateLimiter, defined in baton)", "env.BATON (baton)", "env.DEPLOY (DeployWorkflow)"]);
  });

  test("3. Baton again, bound to the user's Workflow (which exists now)", () => {
    const config = block("standalone/baton/wrangler.toml") + block("standalone/baton/wrangler.toml+workflow");
    const output = dryRun(baton, config);
    assertBindings(output, ["env.COORDINATOR (Coordinator)", "env.DB (baton)", "env.WORKFLOW (DeployWorkflow (defined in my-worker))"]);
  });

  test("the two Workers as deployed by steps 2 and 3 run the user's Workflow against Baton", async () => {
    // Both bundles as the dry runs above left them, each Worker under its name.
    const [batonOptions, workerOptions] = [baton, worker].map((dir) => bundledOptions(dir));
    const mf = miniflare([workerOptions, batonOptions]);
    try {
      await mf.ready;
      await applyMigrations(await mf.getD1Database("DB", "baton"), path.join(baton, "node_modules/baton-workflows/migrations"));
      const harness = new Harness(mf);
      const call = async (route, init) => {
        const response = await mf.dispatchFetch(`http://user${route}`, init);
        const text = await response.text();
        assert.ok(response.ok, `${route}: ${response.status} ${text}`);
        return JSON.parse(text);
      };
      for (const sha of ["a1", "b2"]) {
        const id = `deploy-${sha}`;
        await call("/start", { method: "POST", body: JSON.stringify({ id, repo: "acme/site", sha, head: sha }) });
        const status = await harness.until(`${id} to finish`, async () => {
          const s = await call(`/status?id=${id}`);
          return ["complete", "errored", "terminated"].includes(s.status) ? s : null;
        });
        assert.deepEqual({ status: status.status, output: status.output }, { status: "complete", output: { published: sha } });
      }
      const view = await call("/?key=acme/site:deploy");
      assert.deepEqual(view.group.recent.map((r) => [r.revision, r.outcome]).sort(), [["a1", "released"], ["b2", "released"]]);
    } finally {
      await mf.dispose();
    }
  });

  test("later: a second Workflow, deployed first by its Worker, then bound by Baton", () => {
    const output = dryRun(worker, block("standalone/my-worker/wrangler.toml") + block("standalone/my-worker/wrangler.toml+migrate"));
    assertBindings(output, ["env.DEPLOY (DeployWorkflow)", "env.MIGRATE (MigrateWorkflow)"]);
    const config =
      block("standalone/baton/wrangler.toml") +
      block("standalone/baton/wrangler.toml+workflow") +
      block("standalone/baton/wrangler.toml+migrate");
    const batonOutput = dryRun(baton, config);
    assertBindings(batonOutput, [
      "env.WORKFLOW (DeployWorkflow (defined in my-worker))",
      "env.MIGRATE (MigrateWorkflow (defined in my-worker))",
      'env.WORKFLOW_BINDINGS ("WORKFLOW,MIGRATE")',
    ]);
  });

  test("§9a: Baton with docs/deploying.md's metrics block binds the dataset", () => {
    const config =
      block("standalone/baton/wrangler.toml") + block("standalone/baton/wrangler.toml+workflow") + block("standalone/baton/wrangler.toml+metrics");
    assertBindings(dryRun(baton, config), ["env.BATON_METRICS", "env.COORDINATOR (Coordinator)"]);
  });
});

/** A port on 127.0.0.1 that nothing listens on now (the OS picks it). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Bounds for `wrangler dev`: its start, one instance's run, its stop. */
const DEV_READY_MS = 90_000;
const DEV_RUN_MS = 60_000;
const DEV_STOP_MS = 10_000;

describe("docs/deploying.md's embedded project under wrangler dev, as a user runs it", () => {
  let dir;
  let dev;
  let output = "";
  let base;

  before(async () => {
    dir = userProject("dev-embedded");
    writeFileSync(path.join(dir, "src/index.ts"), block("embedded/src/index.ts"));
    writeFileSync(path.join(dir, "wrangler.toml"), block("embedded/wrangler.toml"));
    run(path.join(BIN, "wrangler"), ["d1", "migrations", "apply", "DB", "--local"], dir);
    const [port, inspector] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    // Its own process group, so that stopping it stops workerd with it.
    dev = spawn(
      path.join(BIN, "wrangler"),
      ["dev", "--ip", "127.0.0.1", "--port", String(port), "--inspector-port", String(inspector), "--show-interactive-dev-session=false"],
      { cwd: dir, env: ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    for (const stream of [dev.stdout, dev.stderr]) stream.on("data", (chunk) => (output += chunk));
    const exited = new Promise((resolve) => dev.once("exit", resolve));
    const deadline = Date.now() + DEV_READY_MS;
    for (;;) {
      const answer = await fetch(`${base}/openapi.json`).catch(() => null);
      if (answer?.ok) break;
      const gone = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), 250))]);
      if (gone || Date.now() > deadline) throw new Error(`wrangler dev did not serve ${base} in time:\n${output}`);
    }
  });

  after(async () => {
    if (dev && dev.exitCode === null && dev.signalCode === null) {
      const exited = new Promise((resolve) => dev.once("exit", resolve));
      process.kill(-dev.pid, "SIGTERM");
      const stopped = await Promise.race([exited.then(() => true), new Promise((r) => setTimeout(() => r(false), DEV_STOP_MS))]);
      if (!stopped) process.kill(-dev.pid, "SIGKILL");
    }
  });

  const json = async (route, init) => {
    const answer = await fetch(`${base}${route}`, init);
    const text = await answer.text();
    assert.ok(answer.ok, `${route}: ${answer.status} ${text}\n${output}`);
    return JSON.parse(text);
  };

  test("three deploys of one key through the project's own route hold it one at a time", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await json("/deploy?key=site", { method: "POST" })).id);
    const spans = [];
    for (const id of ids) {
      const deadline = Date.now() + DEV_RUN_MS;
      let status;
      for (;;) {
        status = await json(`/deploy?id=${id}`);
        if (["complete", "errored", "terminated"].includes(status.status)) break;
        assert.ok(Date.now() < deadline, `${id} did not finish in time: ${JSON.stringify(status)}\n${output}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.equal(status.status, "complete", `${id}: ${JSON.stringify(status)}`);
      assert.equal(status.output.published, "published");
      spans.push({ id, ...status.output.migrated });
    }
    // Handed on in turn: sorted by when each took the key, no span starts
    // before the one ahead of it ended.
    spans.sort((a, b) => a.from - b.from);
    for (let i = 1; i < spans.length; i++) {
      assert.ok(spans[i].from >= spans[i - 1].to, `held spans overlap: ${JSON.stringify(spans)}`);
    }
  });

  test("the status page and /openapi.json answer", async () => {
    const page = await fetch(`${base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    const document = await json("/openapi.json");
    assert.match(document.openapi, /^3\./);
  });
});
