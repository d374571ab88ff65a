-- The P2 baseline's table (bench/js-queue.mjs): the serial queue's shape.
CREATE TABLE IF NOT EXISTS q (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  grp TEXT NOT NULL, id TEXT NOT NULL, rev TEXT NOT NULL, state TEXT NOT NULL,
  enqueued_at INTEGER NOT NULL, heartbeat_at INTEGER, by_id TEXT, by_rev TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS q_member ON q (grp, id);
CREATE INDEX IF NOT EXISTS q_state ON q (grp, state, seq);
