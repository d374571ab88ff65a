// The type of `env` from "cloudflare:test" (`Cloudflare.Env`): the Worker's
// own bindings, plus the test-only migrations binding of vitest.config.ts.
import type { Env as WorkerEnv } from "../src/index";

declare global {
  namespace Cloudflare {
    interface Env extends WorkerEnv {
      TEST_MIGRATIONS: import("cloudflare:test").D1Migration[];
    }
  }
}
