// The baseline's own Worker (bench/miniflare.mjs binds it as "plain"), so
// that the plain JavaScript Coordinator can also be reached the way Baton's
// is: a Durable Object of another script.
export { PlainCoordinator } from "./plain-coordinator.mjs";

export default {
  fetch() {
    return new Response("the bench's baseline Worker", { status: 404 });
  },
};
