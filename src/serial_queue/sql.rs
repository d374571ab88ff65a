//! The serial queue's SQL, run verbatim by the D1 shell and by the native
//! tests. Every value is a bound parameter; every read has a `LIMIT` or is
//! bounded by a unique index; each comment names the parameters.

/// The schema, as wrangler applies it (`wrangler d1 migrations apply`).
pub const MIGRATIONS: &[(&str, &str)] = &[(
    "0001_serial_queue.sql",
    include_str!("../../migrations/0001_serial_queue.sql"),
)];

/// ?1 group, ?2 instance id.
pub const READ_ENTRY: &str = "SELECT instance_id, revision, enqueued_at, state, heartbeat_at, \
     superseded_by, superseded_by_revision, finished_at FROM serial_queue \
     WHERE group_name = ?1 AND instance_id = ?2 LIMIT 1";

/// ?1 group.
pub const READ_HOLDER: &str = "SELECT instance_id, revision, enqueued_at, state, heartbeat_at, \
     superseded_by, superseded_by_revision, finished_at FROM serial_queue \
     WHERE group_name = ?1 AND state = 'holding' LIMIT 1";

/// ?1 group, ?2 instance id: the caller's row and the holder's, in one
/// round trip (one row when the caller holds).
pub const READ_ENTRY_AND_HOLDER: &str = "SELECT instance_id, revision, enqueued_at, state, \
     heartbeat_at, superseded_by, superseded_by_revision, finished_at FROM serial_queue \
     WHERE group_name = ?1 AND (instance_id = ?2 OR state = 'holding') LIMIT 2";

/// ?1 group, ?2 limit.
pub const READ_WAITING: &str = "SELECT instance_id, revision, enqueued_at, state, heartbeat_at, \
     superseded_by, superseded_by_revision, finished_at FROM serial_queue \
     WHERE group_name = ?1 AND state = 'waiting' ORDER BY seq LIMIT ?2";

/// ?1 group, ?2 limit: finished executions, newest first.
pub const READ_RECENT: &str = "SELECT instance_id, revision, enqueued_at, state, heartbeat_at, \
     superseded_by, superseded_by_revision, finished_at FROM serial_queue \
     WHERE group_name = ?1 AND state NOT IN ('waiting', 'holding') ORDER BY seq DESC LIMIT ?2";

/// ?1 group, ?2 limit (one more than the most waiters a group takes).
pub const COUNT_WAITING: &str = "SELECT COUNT(*) FROM (SELECT 1 FROM serial_queue \
     WHERE group_name = ?1 AND state = 'waiting' LIMIT ?2)";

// --- enqueue: one batch -------------------------------------------------

/// ?1 group, ?2 instance id, ?3 revision, ?4 now. A retried enqueue keeps
/// the original row (and its place).
pub const INSERT_ENTRY: &str = "INSERT INTO serial_queue \
     (group_name, instance_id, revision, state, enqueued_at) \
     VALUES (?1, ?2, ?3, 'waiting', ?4) ON CONFLICT (group_name, instance_id) DO NOTHING";

/// ?1 group, ?2 instance id, ?3 its revision, ?4 now. Supersedes every
/// waiter that arrived before the caller, provided the caller is itself
/// still waiting (a retried, already superseded enqueue supersedes no one).
pub const SUPERSEDE_OLDER: &str = "UPDATE serial_queue SET state = 'superseded', \
     superseded_by = ?2, superseded_by_revision = ?3, finished_at = ?4 \
     WHERE group_name = ?1 AND state = 'waiting' AND seq < \
     (SELECT seq FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 AND state = 'waiting') \
     RETURNING instance_id";

/// ?1 group, ?2 instance id, ?3 the current revision (the caller's), ?4 now.
/// Supersedes every waiter at another revision, whenever it arrived.
pub const SUPERSEDE_NOT_CURRENT: &str = "UPDATE serial_queue SET state = 'superseded', \
     superseded_by = ?2, superseded_by_revision = ?3, finished_at = ?4 \
     WHERE group_name = ?1 AND state = 'waiting' AND revision <> ?3 AND instance_id <> ?2 \
     AND EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \
     AND state = 'waiting') RETURNING instance_id";

/// ?1 group, ?2 how many finished rows to keep.
pub const PRUNE_FINISHED: &str = "DELETE FROM serial_queue WHERE group_name = ?1 \
     AND state NOT IN ('waiting', 'holding') AND seq <= (SELECT seq FROM serial_queue \
     WHERE group_name = ?1 AND state NOT IN ('waiting', 'holding') ORDER BY seq DESC \
     LIMIT 1 OFFSET ?2)";

// --- claim ---------------------------------------------------------------

/// ?1 group, ?2 instance id, ?3 now.
pub const TIME_OUT: &str = "UPDATE serial_queue SET state = 'timed_out', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'waiting'";

/// ?1 group, ?2 now, ?3 the oldest heartbeat still live (now - expiry).
/// Runs in the claim's batch, before [`CLAIM`].
pub const ABANDON_STALE_HOLDER: &str = "UPDATE serial_queue SET state = 'abandoned', \
     finished_at = ?2 WHERE group_name = ?1 AND state = 'holding' AND heartbeat_at < ?3";

/// ?1 group, ?2 instance id, ?3 now. The atomic claim: its change count (1
/// or 0) says whether the caller won.
pub const CLAIM: &str = "UPDATE serial_queue SET state = 'holding', heartbeat_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'waiting' \
     AND NOT EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND state = 'holding')";

// --- heartbeat and release -----------------------------------------------

/// ?1 group, ?2 instance id, ?3 now; changes 1 while the caller holds.
pub const HEARTBEAT: &str = "UPDATE serial_queue SET heartbeat_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding'";

/// ?1 group, ?2 instance id, ?3 now. From the holder or a waiter; returns a
/// row if it left, saying whether it held the group (only a claim sets
/// `heartbeat_at`, and releasing leaves it as it was).
pub const RELEASE: &str = "UPDATE serial_queue SET state = 'released', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state IN ('holding', 'waiting') \
     RETURNING heartbeat_at IS NOT NULL AS was_holding";

/// ?1 group, ?2 instance id, ?3 now: a waiter found dead when woken.
pub const ABANDON_WAITER: &str = "UPDATE serial_queue SET state = 'abandoned', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'waiting'";
