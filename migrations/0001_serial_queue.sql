-- The serial queue (contract §2): one row per execution of a serialized group.
-- Rows of finished executions stay for serialInspect's `recent`, pruned to a
-- bound per group (src/limits.rs, SERIAL_RECENT_PER_GROUP_MAX).
CREATE TABLE serial_queue (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  group_name TEXT NOT NULL,
  instance_id TEXT NOT NULL,
  revision TEXT NOT NULL,
  -- waiting | holding | superseded | timed_out | released | abandoned
  state TEXT NOT NULL,
  enqueued_at INTEGER NOT NULL,
  heartbeat_at INTEGER,
  superseded_by TEXT,
  superseded_by_revision TEXT,
  finished_at INTEGER
);
CREATE UNIQUE INDEX serial_queue_member ON serial_queue (group_name, instance_id);
CREATE INDEX serial_queue_by_state ON serial_queue (group_name, state, seq);
-- The invariant itself, enforced by the database: one holder per group.
CREATE UNIQUE INDEX serial_queue_one_holder ON serial_queue (group_name) WHERE state = 'holding';
