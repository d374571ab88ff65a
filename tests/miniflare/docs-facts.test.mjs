// What the docs tell a user to set up agrees with what the code needs, read
// from the pages themselves: the README's install commands, the bindings
// its examples use against docs/deploying.md's configs, `npm start --
// embedded` against the standalone example, and a project built from
// Deploying against example/vitest-user's tests. Each test is a finding
// of the docs review a user hit (docs/deploying.md, the README).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "./harness.mjs";
import { codeBlocks } from "./docs-blocks.mjs";

const read = (file) => readFileSync(path.join(ROOT, file), "utf8");
const { version } = JSON.parse(read("package.json"));

/** docs/deploying.md's ```toml file=NAME blocks, by NAME. */
function deployingBlocks() {
  const blocks = new Map();
  for (const m of read("docs/deploying.md").matchAll(/^```(?:toml|ts) file=(\S+)\n([\s\S]*?)^```$/gm)) blocks.set(m[1], m[2]);
  return blocks;
}

/** The bindings a wrangler config declares: Durable Objects, Workflows, services, D1. */
function bindingsOf(toml) {
  const names = new Set();
  for (const m of toml.matchAll(/^\[\[(durable_objects\.bindings|workflows|services|d1_databases)\]\]\n((?:(?!\[).*\n?)*)/gm)) {
    const name = m[2].match(/^(?:name|binding) = "([^"]+)"/m)?.[1];
    if (name) names.add(name);
  }
  return names;
}

function migrationsOf(toml) {
  return [...toml.matchAll(/^\[\[migrations\]\]\ntag = "([^"]+)"\nnew_sqlite_classes = \[([^\]]*)\]/gm)].map((m) => [m[1], m[2]]);
}

test("the README's install section packs this version from a checkout and installs that tarball", () => {
  const readme = read("README.md");
  const install = readme.slice(readme.indexOf("## Install"), readme.indexOf("\n## ", readme.indexOf("## Install") + 1));
  const commands = install.match(/```sh\n([\s\S]*?)```/)?.[1] ?? "";
  assert.match(commands, /\bnpm pack\b/, "the install section builds the package with npm pack");
  assert.match(commands, new RegExp(`npm install \\S*baton-workflows-${version.replaceAll(".", "\\.")}\\.tgz`), `it installs baton-workflows-${version}.tgz`);
  assert.doesNotMatch(commands, /npm install baton-workflows(\s|$)/, "npm install baton-workflows cannot work while the package is not on the registry");
  assert.match(install, /not on the npm registry/);
});

test("every page installs this version's tarball, and none says npm install baton-workflows while it is unpublished", () => {
  const wrong = [];
  for (const page of ["README.md", ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]) {
    const text = read(page);
    for (const [tgz] of text.matchAll(/baton-workflows-[\w.-]+?\.tgz/g)) {
      if (tgz !== `baton-workflows-${version}.tgz`) wrong.push(`${page}: ${tgz}`);
    }
    for (const [, commands] of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
      if (/npm (?:install|i) (?:-\w+ )*baton-workflows(\s|$)/.test(commands)) wrong.push(`${page}: npm install baton-workflows`);
    }
  }
  assert.deepEqual(wrong, []);
});

test("every binding the README's examples use is bound by docs/deploying.md's configs, embedded and standalone", () => {
  const used = new Set();
  for (const block of codeBlocks("README.md")) {
    for (const m of block.text.matchAll(/\benv\.([A-Z][A-Z_]*)\b/g)) used.add(m[1]);
  }
  assert.ok(used.has("COORDINATOR") && used.has("RUNS"), `bindings found in the README: ${[...used]}`);
  // The README's Workflows are the user's own (REPORT); Baton's are fixed.
  const own = new Set(["REPORT", "DEPLOY"]);
  const blocks = deployingBlocks();
  const modes = {
    embedded: bindingsOf(blocks.get("embedded/wrangler.toml")),
    standalone: bindingsOf(blocks.get("standalone/my-worker/wrangler.toml")),
  };
  const missing = [];
  for (const [mode, bound] of Object.entries(modes)) {
    for (const name of used) if (!own.has(name) && !bound.has(name)) missing.push(`${mode}: ${name}`);
  }
  assert.deepEqual(missing, [], "bindings the README uses that the mode's config lacks");
  // Embedded has no service binding: the README must not use env.BATON.
  assert.ok(!modes.embedded.has("BATON"));
  assert.ok(!used.has("BATON"), "the README's examples use env.BATON, which embedded mode does not have");
});

test("npm start -- embedded runs the same example: every binding, class and Workflow of the standalone pair", () => {
  const embedded = read("example/embedded.toml");
  const bound = bindingsOf(embedded);
  const wanted = new Set([...bindingsOf(read("example/wrangler.toml")), ...bindingsOf(read("wrangler.toml"))]);
  // Standalone, the example reaches Baton by a service binding and Baton
  // its Workflow as WORKFLOW; embedded, batonService and EXAMPLE stand in.
  for (const name of ["BATON", "WORKFLOW"]) wanted.delete(name);
  assert.deepEqual([...wanted].filter((n) => !bound.has(n)), [], "example/embedded.toml lacks bindings the standalone pair has");
  const classes = [...read("js/worker.mjs").matchAll(/^export class (\w+) extends DurableObject\b/gm)].map((m) => m[1]);
  const reexported = read("example/embedded.mjs").match(/^export \{ ([^}]+) \} from "baton-workflows\/worker";$/m)?.[1].split(/,\s*/) ?? [];
  assert.deepEqual(classes.filter((c) => !reexported.includes(c)), [], "example/embedded.mjs re-exports every Durable Object class");
  const workflows = [...embedded.matchAll(/^class_name = "(\w+Workflow)"$/gm)].map((m) => m[1]);
  const embeddedModule = read("example/embedded.mjs");
  for (const workflow of workflows) assert.match(embeddedModule, new RegExp(`\\b${workflow}\\b`), `example/embedded.mjs exports ${workflow}`);
  assert.match(embedded, /^WORKFLOW_BINDINGS = "EXAMPLE,ROLLBACK"$/m);
});

test("the example's migrations are docs/deploying.md's, tag for tag (a tag is applied once, its classes fixed)", () => {
  assert.deepEqual(migrationsOf(read("example/embedded.toml")), migrationsOf(deployingBlocks().get("embedded/wrangler.toml")));
});

test("example/vitest-user's tests fit a project built from docs/deploying.md: Env exported, typescript installed", () => {
  const envImport = read("example/vitest-user/test/env.d.ts").match(/import type \{ Env[^}]*\} from "\.\.\/src\/index"/);
  assert.ok(envImport, "test/env.d.ts imports the Worker's Env");
  assert.match(deployingBlocks().get("embedded/src/index.ts"), /^export interface Env \{/m, "Deploying's Worker exports its Env");
  const example = JSON.parse(read("example/vitest-user/package.json"));
  assert.ok(example.devDependencies.typescript, "the example's tsconfig.json runs tsc: typescript is a dev dependency");
  assert.match(read("docs/testing.md"), /npm install -D [^\n]*\btypescript\b/, "testing.md's install step installs typescript");
  assert.equal(example.dependencies["baton-workflows"], `^${version}`, "the example depends on this version");
});
