// The example with Baton embedded (`npm start -- embedded`): one Worker that
// re-exports Baton's Durable Object classes and runs the example Workflows and
// HTTP surface of ./worker.mjs unchanged. That code is written for
// standalone Baton, reached through the service binding `BATON`; here
// `batonService(env, ctx)` stands in for that binding (the queue's RPC
// methods and Baton's fetch, run in this Worker), so nothing else differs.
import { batonService } from "baton-workflows/worker";
import standalone, { ExampleWorkflow as StandaloneWorkflow, RollbackWorkflow } from "./worker.mjs";

export { BusyList, Coordinator, Debouncer, RateLimiter, Runs } from "baton-workflows/worker";
export { RollbackWorkflow };

const embedded = (env, ctx) => ({ ...env, BATON: batonService(env, ctx) });

export class ExampleWorkflow extends StandaloneWorkflow {
  constructor(ctx, env) {
    super(ctx, embedded(env, ctx));
  }
}

export default {
  fetch(request, env, ctx) {
    return standalone.fetch(request, embedded(env, ctx), ctx);
  },
};
