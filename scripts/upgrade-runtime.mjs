// `npm run upgrade-runtime`: moves the pins to the newest wrangler (or the
// version given: `npm run upgrade-runtime -- 4.170.0`), the Miniflare that
// wrangler depends on, and every compatibility date to the date of the
// workerd that wrangler ships. Then `npm test` says whether Baton still works
// on the runtime users get today.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** Every file with a `compatibility_date = "..."` line (docs/deploying.md's blocks among them). */
const DATED = ["wrangler.toml", "example/wrangler.toml", "example/embedded.toml", "example/vitest-user/wrangler.toml", "docs/deploying.md"];
/** The user's test suite, whose Vitest plugin is given the same wrangler and Miniflare (docs/testing.md). */
const VITEST_USER = "example/vitest-user/package.json";

const npm = (...args) => execFileSync("npm", args, { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });

const wanted = process.argv[2] ?? "latest";
const wrangler = JSON.parse(npm("view", `wrangler@${wanted}`, "version", "dependencies", "--json"));
const { miniflare, workerd } = wrangler.dependencies;
const [, y, m, d] = workerd.match(/^1\.(\d{4})(\d{2})(\d{2})\./) ?? [];
if (!y) throw new Error(`wrangler ${wrangler.version} depends on workerd ${workerd}: not 1.YYYYMMDD.N`);
const date = `${y}-${m}-${d}`;

console.log(`wrangler ${wrangler.version}, miniflare ${miniflare}, workerd ${workerd} (compatibility date ${date})`);
npm("install", "--no-audit", "--no-fund", "--save-dev", "--save-exact", `wrangler@${wrangler.version}`, `miniflare@${miniflare}`);
for (const file of DATED) {
  const text = readFileSync(path.join(ROOT, file), "utf8");
  writeFileSync(path.join(ROOT, file), text.replace(/^compatibility_date = "[^"]+"$/gm, `compatibility_date = "${date}"`));
}
const suite = JSON.parse(readFileSync(path.join(ROOT, VITEST_USER), "utf8"));
suite.overrides["@cloudflare/vitest-plugin"] = { miniflare, wrangler: wrangler.version };
writeFileSync(path.join(ROOT, VITEST_USER), `${JSON.stringify(suite, null, 2)}\n`);
console.log("pins and dates moved; run `npm test` to see whether Baton works on them");
