// Cloudflare's Vitest plugin runs the tests inside the Workers runtime, with
// the Worker of wrangler.toml (Baton's classes, the two Workflows, D1).
// Baton's D1 migrations come from the installed package, applied to each
// test's database by test/apply-migrations.ts.
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "node_modules/baton-workflows/migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: { bindings: { TEST_MIGRATIONS: migrations } },
      }),
    ],
    test: {
      setupFiles: ["./test/apply-migrations.ts"],
      // A bound on a hang, not a speed check: the Workflows wait on each
      // other through Baton, and a wrong hand-off would wait forever.
      testTimeout: 60_000,
    },
  };
});
