// A user's Worker project as docs/deploying.md tells a user to make one,
// for the suites that test the package as a user gets it (package.test.mjs,
// docs-run.test.mjs): the package packed with `npm pack` and installed from
// the tarball, docs/deploying.md's own config blocks, `wrangler deploy
// --dry-run` to bundle, and the bundle run in Miniflare.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import path from "node:path";
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT } from "./harness.mjs";

export const FIXTURES = path.join(ROOT, "tests/miniflare/user-project");
export const BIN = path.join(ROOT, "node_modules/.bin");
// npm and wrangler run on the repo's Node 22, quietly and without prompts.
export const ENV = {
  ...process.env,
  PATH: `${BIN}${path.delimiter}${process.env.PATH}`,
  CI: "true",
  WRANGLER_SEND_METRICS: "false",
};

export function run(command, args, cwd) {
  try {
    return execFileSync(command, args, { cwd, env: ENV, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (error) {
    throw new Error(`${command} ${args.join(" ")} (in ${cwd}) failed:\n${error.stdout}\n${error.stderr}`);
  }
}

/**
 * `npm pack` of this checkout into `dir` (--ignore-scripts: the suite has
 * built build/ already; prepack would rebuild it): `{ tarball, files }`.
 */
export function pack(dir) {
  const [info] = JSON.parse(run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dir], ROOT));
  return { tarball: path.join(dir, info.filename), files: info.files.map((f) => f.path) };
}

/** docs/deploying.md's config and code blocks: ```toml file=NAME ... ``` (or ts) by NAME. */
export function deployingBlocks() {
  const text = readFileSync(path.join(ROOT, "docs", "deploying.md"), "utf8");
  const blocks = new Map();
  for (const match of text.matchAll(/^```(?:toml|ts) file=(\S+)\n([\s\S]*?)^```$/gm)) {
    blocks.set(match[1], match[2]);
  }
  return blocks;
}

export function block(name) {
  const text = deployingBlocks().get(name);
  assert.ok(text, `docs/deploying.md should have a block \`\`\`toml (or ts) file=${name}`);
  return text;
}

/**
 * A user's Worker project `name` in `scratch`: its package.json, the packed
 * `baton-workflows` installed from `tarball`, `src/index.ts` from the
 * fixture `source` (if given), and a tsconfig for `tsc --strict`.
 */
export function userProject(scratch, tarball, name, source) {
  const dir = path.join(scratch, name);
  mkdirSync(path.join(dir, "src"), { recursive: true });
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name, private: true, type: "module" }, null, 2));
  run("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball], dir);
  if (source) copyFileSync(path.join(FIXTURES, source), path.join(dir, "src/index.ts"));
  copyFileSync(path.join(FIXTURES, "tsconfig.json"), path.join(dir, "tsconfig.json"));
  // The user's own dev dependency for types; linked, not downloaded again.
  mkdirSync(path.join(dir, "node_modules/@cloudflare"), { recursive: true });
  symlinkSync(path.join(ROOT, "node_modules/@cloudflare/workers-types"), path.join(dir, "node_modules/@cloudflare/workers-types"));
  return dir;
}

/** `wrangler deploy --dry-run` with `config` as the project's wrangler.toml; returns its output. */
export function dryRun(dir, config) {
  writeFileSync(path.join(dir, "wrangler.toml"), config);
  rmSync(path.join(dir, "out"), { recursive: true, force: true });
  return run(path.join(BIN, "wrangler"), ["deploy", "--dry-run", "--outdir", "out"], dir);
}

/**
 * Miniflare's options for the project in `dir` as wrangler bundled it into
 * `out/` (the last dryRun), with the bindings of its wrangler.toml. wrangler
 * still answers in Miniflare 4's shape; `miniflare()` converts it.
 */
export function bundledOptions(dir, bindings = {}) {
  const config = path.join(dir, "wrangler.toml");
  const { workerOptions, main } = unstable_getMiniflareWorkerOptions(config);
  const out = path.join(dir, "out");
  const entry = path.basename(main).replace(/\.(ts|mjs)$/, ".js");
  // Every file of the bundle as a module, the entry first (Miniflare 5 has
  // no module rules: each module is listed with its type).
  const files = readdirSync(out, { recursive: true }).filter((f) => /\.(js|wasm)$/.test(f) && f !== entry);
  const modules = [entry, ...files].map((file) => ({
    type: file.endsWith(".wasm") ? "CompiledWasm" : "ESModule",
    path: path.join(out, file),
  }));
  return {
    ...workerOptions,
    name: readFileSync(config, "utf8").match(/^name = "(.+)"$/m)[1],
    modulesRoot: out,
    modules,
    bindings: { ...workerOptions.bindings, ...bindings },
  };
}

/** A Miniflare 5 of the Workers `workers` (wrangler's Miniflare 4 shape), with `shared` options of its own. */
export function miniflare(workers, shared = {}) {
  return new Miniflare({ ...convertV4MiniflareOptions({ workers }), ...shared });
}
