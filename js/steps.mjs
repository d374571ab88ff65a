// The one way the helpers call Baton from Workflow code: each call is a
// durable step with bounded retries, and a `BatonError` (bad input, which is
// bad on every retry) ends the step at once as a NonRetryableError.
import { NonRetryableError } from "cloudflare:workflows";

/** Returns `call(name, method)`, which runs `method` as the step `name`. */
export function batonSteps(step, retries) {
  const config = { retries, timeout: "1 minute" };
  return (name, method) =>
    step.do(name, config, async () => {
      try {
        return await method();
      } catch (error) {
        if (String(error?.message).startsWith("BatonError:")) {
          throw new NonRetryableError(error.message);
        }
        throw error;
      }
    });
}
