// The npm package's entry: helpers for Workflow code and Workers.
export { withKey, TURN_EVENT_TYPE } from "./with-key.mjs";
export { serialize, RunSkipped, SerialQueueTimedOut, SerialQueueLostHold } from "./serialize.mjs";
export { withRateLimit, PermitPool, RateLimitTimeout, RateLimitMaxWait } from "./rate-limit.mjs";
export { debounce, startAt, debounceFlush, debounceCancel, debounceInspect } from "./debounce.mjs";
export { startOnce, awaitRun, runReporter, reportRun } from "./runs.mjs";
export { coordinated } from "./coordinated.mjs";
