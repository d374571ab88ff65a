// A user's own test suite with Baton in it, run as the user runs it:
// example/vitest-user/ (a Worker with Baton embedded, two Workflows using
// withKey and serialize, tests under Cloudflare's Vitest plugin) copied to a
// scratch project, `baton-workflows` installed there from the tarball
// `npm pack` makes, then `vitest run`. docs/testing.md tells a user how to
// copy it.
//
// The scratch project lives in node_modules/.cache/baton-vitest-user and is
// kept between runs: its node_modules (the plugin, vitest, and the wrangler
// and workerd the plugin brings) are installed once from the registry, and
// a later run only swaps in the new tarball. The tarball's name carries a
// hash of its bytes, so npm cannot mistake a new build for the installed one
// (and the test checks the installed WASM is this build's).
import { before, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { COMPATIBILITY_DATE, ROOT } from "./harness.mjs";

const EXAMPLE = path.join(ROOT, "example/vitest-user");
const PROJECT = path.join(ROOT, "node_modules/.cache/baton-vitest-user");
const BIN = path.join(ROOT, "node_modules/.bin");
// npm and vitest run on the repo's Node 22 (the plugin's Miniflare needs it).
const ENV = {
  ...process.env,
  PATH: `${BIN}${path.delimiter}${process.env.PATH}`,
  CI: "true",
  WRANGLER_SEND_METRICS: "false",
};
/** The three tests of example/vitest-user/test/baton.test.ts, by their full names. */
const EXPECTED_TESTS = [
  "withKey runs two instances on one key one after the other, their fences increasing",
  "withKey ends a superseded instance without running its body",
  "serialize runs the newest revision of a serial group, skipping the one it replaced",
];

/** A bound on the whole vitest run: its three tests take seconds; a hang must not stall npm test. */
const VITEST_RUN_MS_MAX = 600_000;

function run(command, args, cwd) {
  try {
    return execFileSync(command, args, { cwd, env: ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) failed:\n${error.stdout}\n${error.stderr}`);
  }
}

let vitest;

test("the example runs on the repository's runtime: its pins and its compatibility date", () => {
  // The plugin's own wrangler can lag the one `npm install -D wrangler`
  // gives (its workerd then refuses a newer compatibility date): the
  // example's `overrides` give it the repository's pins (docs/testing.md).
  const { devDependencies } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8"));
  const example = JSON.parse(readFileSync(path.join(EXAMPLE, "package.json"), "utf8"));
  assert.deepEqual(
    example.overrides["@cloudflare/vitest-plugin"],
    { miniflare: devDependencies.miniflare, wrangler: devDependencies.wrangler },
    "example/vitest-user/package.json's overrides follow package.json's wrangler and miniflare",
  );
  const config = readFileSync(path.join(EXAMPLE, "wrangler.toml"), "utf8");
  assert.equal(config.match(/^compatibility_date = "([^"]+)"$/m)?.[1], COMPATIBILITY_DATE);
});

before(() => {
  assert.ok(existsSync(path.join(ROOT, "build/index_bg.wasm")), "build/ is missing: run `npm run build` first");
  // The tarball, named for its bytes.
  const scratch = mkdtempSync(path.join(tmpdir(), "baton-vitest-user-"));
  let tarball;
  try {
    // --ignore-scripts: the suite has built build/ already (prepack would rebuild it).
    const [info] = JSON.parse(run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", scratch], ROOT));
    const packed = path.join(scratch, info.filename);
    const hash = createHash("sha256").update(readFileSync(packed)).digest("hex").slice(0, 16);
    tarball = `baton-workflows-${hash}.tgz`;
    // The user's project, as the example has it, with the package from the tarball.
    mkdirSync(PROJECT, { recursive: true });
    for (const entry of readdirSync(PROJECT)) {
      if (!["node_modules", "package-lock.json"].includes(entry)) rmSync(path.join(PROJECT, entry), { recursive: true, force: true });
    }
    for (const entry of readdirSync(EXAMPLE)) {
      if (entry !== "node_modules") cpSync(path.join(EXAMPLE, entry), path.join(PROJECT, entry), { recursive: true });
    }
    renameSync(packed, path.join(PROJECT, tarball));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const manifest = JSON.parse(readFileSync(path.join(PROJECT, "package.json"), "utf8"));
  assert.ok(manifest.dependencies["baton-workflows"], "the example depends on baton-workflows");
  manifest.dependencies["baton-workflows"] = `file:./${tarball}`;
  writeFileSync(path.join(PROJECT, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"], PROJECT);
  vitest = path.join(PROJECT, "node_modules/vitest/vitest.mjs");
});

test("the scratch project runs this build of the package, installed from its tarball", () => {
  const installed = path.join(PROJECT, "node_modules/baton-workflows");
  assert.deepEqual(
    readFileSync(path.join(installed, "build/index_bg.wasm")),
    readFileSync(path.join(ROOT, "build/index_bg.wasm")),
    "node_modules/baton-workflows is not this build",
  );
  assert.ok(existsSync(path.join(installed, "migrations/0001_serial_queue.sql")), "the D1 migrations are installed");
});

test("the Worker and its tests compile with tsc --strict, typed by workers-types and the plugin", () => {
  // The repository's tsc over the project's own tsconfig.json (src/ and test/).
  run(path.join(BIN, "tsc"), ["-p", path.join(PROJECT, "tsconfig.json")], PROJECT);
});

test("the example's test/ setup compiles beside docs/deploying.md's embedded Worker, as testing.md says to copy it", () => {
  // A user who built the Worker from Deploying copies test/env.d.ts (which
  // imports the Worker's Env), test/apply-migrations.ts and tsconfig.json.
  const user = path.join(PROJECT, "deploying-user");
  rmSync(user, { recursive: true, force: true });
  mkdirSync(path.join(user, "src"), { recursive: true });
  mkdirSync(path.join(user, "test"), { recursive: true });
  const deploying = readFileSync(path.join(ROOT, "docs/deploying.md"), "utf8");
  const worker = deploying.match(/^```ts file=embedded\/src\/index\.ts\n([\s\S]*?)^```$/m)?.[1];
  assert.ok(worker, "docs/deploying.md has the embedded Worker's source");
  writeFileSync(path.join(user, "src/index.ts"), worker);
  for (const file of ["test/env.d.ts", "test/apply-migrations.ts", "tsconfig.json"]) {
    cpSync(path.join(EXAMPLE, file), path.join(user, file));
  }
  run(path.join(BIN, "tsc"), ["-p", path.join(user, "tsconfig.json")], user);
});

test("the user's suite passes under Cloudflare's Vitest plugin", () => {
  const results = path.join(PROJECT, "vitest-results.json");
  rmSync(results, { force: true });
  let output;
  let failed = null;
  try {
    output = execFileSync(path.join(BIN, "node"), [vitest, "run", "--reporter=default", "--reporter=json", `--outputFile.json=${results}`], {
      cwd: PROJECT,
      env: ENV,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      // A backstop for a run that never ends (each test has its own bound).
      timeout: VITEST_RUN_MS_MAX,
    });
  } catch (error) {
    failed = error;
    output = `${error.stdout}\n${error.stderr}`;
  }
  assert.ok(existsSync(results), `vitest wrote no results:\n${output}`);
  const report = JSON.parse(readFileSync(results, "utf8"));
  const outcomes = report.testResults.flatMap((file) =>
    file.assertionResults.map((t) => [t.fullName ?? [...t.ancestorTitles, t.title].join(" "), t.status]),
  );
  // Every expected test ran and passed, and nothing else was left out.
  assert.deepEqual(
    outcomes.sort(),
    EXPECTED_TESTS.map((name) => [name, "passed"]).sort(),
    `vitest's outcomes:\n${output}`,
  );
  assert.equal(failed, null, `vitest run failed:\n${output}`);
});
