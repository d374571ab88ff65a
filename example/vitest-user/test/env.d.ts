// The type of `env` from "cloudflare:test": the Worker's own, plus the
// test-only migrations binding of vitest.config.ts.
import type { Env } from "../src/index";

declare module "cloudflare:test" {
  interface ProvidedEnv extends Env {
    TEST_MIGRATIONS: D1Migration[];
  }
}
