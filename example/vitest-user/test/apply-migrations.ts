// Baton's serial queue keeps its state in D1: its tables, from the package's
// migrations (read in vitest.config.ts), before any test runs.
import { applyD1Migrations, env } from "cloudflare:test";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
