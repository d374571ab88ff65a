//! The serial queue's SQL, run verbatim by the D1 shell and by the native
//! tests and simulation (rusqlite). Every value is a bound parameter; every
//! read has a `LIMIT` or is bounded by a unique index; each comment names
//! the parameters.
//!
//! The rules live in the `WHERE` clauses: every write is conditional on the
//! state it expects, so a batch decided on rows that have since changed does
//! nothing wrong, and a bound (the waiters per group) is checked by the
//! statement that would break it, inside the transaction, not by a count
//! read a round trip earlier. Statements that return rows return whole rows
//! ([`super::Row`]), so one row type reads every result.

/// The schema, as wrangler applies it (`wrangler d1 migrations apply`).
pub const MIGRATIONS: &[(&str, &str)] = &[
    (
        "0001_serial_queue.sql",
        include_str!("../../migrations/0001_serial_queue.sql"),
    ),
    (
        "0002_serial_grant.sql",
        include_str!("../../migrations/0002_serial_grant.sql"),
    ),
    (
        "0003_serial_list.sql",
        include_str!("../../migrations/0003_serial_list.sql"),
    ),
];

/// The columns of [`super::Row`], in one place.
macro_rules! columns {
    () => {
        "seq, group_name, instance_id, revision, state, enqueued_at, heartbeat_at, \
         superseded_by, superseded_by_revision, finished_at, workflow, turn_prefix, fence"
    };
}

/// The columns of [`super::Row`], as the statements name them (the D1
/// shell keeps only these, `meta.changes` and the results' own fields
/// when it reads a batch's results).
pub const COLUMNS: &str = columns!();

// --- reads ----------------------------------------------------------------

/// ?1 group, ?2 instance id.
pub const READ_ENTRY: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 LIMIT 1"
);

/// ?1 group.
pub const READ_HOLDER: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM serial_queue WHERE group_name = ?1 AND state = 'holding' LIMIT 1"
);

/// ?1 group, ?2 limit: waiters in hand-on order.
pub const READ_WAITING: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM serial_queue WHERE group_name = ?1 AND state = 'waiting' ORDER BY seq LIMIT ?2"
);

/// ?1 group, ?2 limit: finished executions, newest first.
pub const READ_RECENT: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM serial_queue WHERE group_name = ?1 AND state NOT IN ('waiting', 'holding') \
     ORDER BY seq DESC LIMIT ?2"
);

/// `serialList` (contract §10): ?1 the last group of the previous page
/// ('' for the first), ?2 how many groups to read. The groups with a
/// holder or a waiter after ?1, in name order, each with its holder's
/// instance id (or NULL), its waiters and its earliest waiter's
/// `enqueued_at` (or NULL). One statement over the partial index of live
/// rows (migrations/0003_serial_list.sql), named so the planner cannot
/// pick an index that also holds the groups' history.
pub const LIST_GROUPS: &str = "SELECT group_name, \
     MAX(CASE WHEN state = 'holding' THEN instance_id END) AS holder, \
     SUM(state = 'waiting') AS waiting, \
     MIN(CASE WHEN state = 'waiting' THEN enqueued_at END) AS oldest_since \
     FROM serial_queue INDEXED BY serial_queue_busy \
     WHERE state IN ('waiting', 'holding') AND group_name > ?1 \
     GROUP BY group_name ORDER BY group_name LIMIT ?2";

// --- enqueue: one batch ---------------------------------------------------

/// ?1 group, ?2 instance id, ?3 revision, ?4 now, ?5 the most waiters a
/// group holds, ?6 its Workflow binding (NULL: the default), ?7 its turn
/// prefix (NULL: registered without grant). Inserts only below the bound,
/// counted in the same transaction, so concurrent enqueues cannot pass it
/// together. A retried enqueue keeps the original row (its place, its
/// binding and whether it has grant: the registering call fixes those).
pub const INSERT_WAITER: &str = "INSERT INTO serial_queue \
     (group_name, instance_id, revision, state, enqueued_at, workflow, turn_prefix) \
     SELECT ?1, ?2, ?3, 'waiting', ?4, ?6, ?7 \
     WHERE (SELECT COUNT(*) FROM (SELECT 1 FROM serial_queue \
     WHERE group_name = ?1 AND state = 'waiting' LIMIT ?5)) < ?5 \
     ON CONFLICT (group_name, instance_id) DO NOTHING";

/// ?1 group, ?2 instance id, ?3 its revision, ?4 now. Supersedes every
/// waiter that arrived before the caller, provided the caller is itself
/// still waiting at that revision (a retried, already superseded enqueue
/// supersedes no one).
pub const SUPERSEDE_OLDER: &str = concat!(
    "UPDATE serial_queue SET state = 'superseded', \
     superseded_by = ?2, superseded_by_revision = ?3, finished_at = ?4 \
     WHERE group_name = ?1 AND state = 'waiting' AND seq < \
     (SELECT seq FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \
     AND state = 'waiting' AND revision = ?3) RETURNING ",
    columns!()
);

/// ?1 group, ?2 instance id, ?3 the current revision (the caller's), ?4
/// now. Supersedes every waiter at another revision, whenever it arrived.
pub const SUPERSEDE_NOT_CURRENT: &str = concat!(
    "UPDATE serial_queue SET state = 'superseded', \
     superseded_by = ?2, superseded_by_revision = ?3, finished_at = ?4 \
     WHERE group_name = ?1 AND state = 'waiting' AND revision <> ?3 AND instance_id <> ?2 \
     AND EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \
     AND state = 'waiting' AND revision = ?3) RETURNING ",
    columns!()
);

/// ?1 group, ?2 instance id, ?3 how many finished rows to keep, ?4 the
/// caller's revision. Runs only when the caller's enqueue took: its row
/// waits at the revision it names (a refused one, at another revision,
/// changes nothing). The row with the group's highest fence stays whatever
/// its age: the group's fence is read from it (`next_fence!`), and must
/// never go back.
pub const PRUNE_FINISHED: &str = "DELETE FROM serial_queue WHERE group_name = ?1 \
     AND state NOT IN ('waiting', 'holding') AND seq <= (SELECT seq FROM serial_queue \
     WHERE group_name = ?1 AND state NOT IN ('waiting', 'holding') ORDER BY seq DESC \
     LIMIT 1 OFFSET ?3) AND seq IS NOT (SELECT seq FROM serial_queue WHERE group_name = ?1 \
     AND fence IS NOT NULL ORDER BY fence DESC LIMIT 1) \
     AND EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \
     AND state = 'waiting' AND revision = ?4)";

// --- claim: one batch -----------------------------------------------------

/// The claimer waits at ?5 (any revision if NULL): a claim on enqueue
/// claims only at the revision the enqueue names.
macro_rules! at_revision {
    () => {
        "revision = IFNULL(?5, revision)"
    };
}

/// ?1 group, ?2 instance id, ?3 now, ?4 the oldest heartbeat still live,
/// ?5 the claimer's revision or NULL. A holder gone stale is abandoned when
/// a waiter claims (runs before [`CLAIM`] in its batch, so any holder
/// [`CLAIM`] then sees is live).
pub const ABANDON_STALE_HOLDER: &str = concat!(
    "UPDATE serial_queue SET state = 'abandoned', finished_at = ?3 \
     WHERE group_name = ?1 AND state = 'holding' AND heartbeat_at < ?4 AND \
     EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND instance_id = ?2 \
     AND state = 'waiting' AND ",
    at_revision!(),
    ")",
    " RETURNING ",
    columns!()
);

/// Whether the group has a holder: ?1 group.
macro_rules! held {
    () => {
        "EXISTS (SELECT 1 FROM serial_queue WHERE group_name = ?1 AND state = 'holding')"
    };
}

/// Whether the caller's row (?2) moves in [`CLAIM`]: it waits (at ?5),
/// and either nobody holds the group or it has waited since before ?4.
macro_rules! claimable {
    () => {
        concat!(
            "(instance_id = ?2 AND state = 'waiting' AND ",
            at_revision!(),
            " AND (enqueued_at < ?4 OR NOT ",
            held!(),
            "))"
        )
    };
}

/// The fence the group's next grant gets: one above the highest any of its
/// rows holds (1 for its first), ?1 group. Read through the
/// `serial_queue_fence` index; the row holding the highest is never pruned.
macro_rules! next_fence {
    () => {
        "(SELECT IFNULL(MAX(fence), 0) + 1 FROM serial_queue WHERE group_name = ?1)"
    };
}

/// ?1 group, ?2 instance id, ?3 now, ?4 the latest enqueue that may still
/// wait (now - waiter timeout), ?5 the claimer's revision or NULL. The atomic claim: a waiter takes the group
/// only while nobody holds it, with the group's next fence; behind a holder
/// (live, after [`ABANDON_STALE_HOLDER`]), a waiter that has waited too
/// long times out instead. It also returns the caller's row and the
/// holder's, as they are after it (one row when the caller holds): the
/// holder's row is matched only to be returned, its values set to
/// themselves. One statement for all of it, as a batch's cost is per
/// statement (D1 counts that row as written). No order of the rows breaks
/// "one holder per group" midway: the caller becomes the holder only when
/// no row was holding.
pub const CLAIM: &str = concat!(
    "UPDATE serial_queue SET state = CASE WHEN ",
    claimable!(),
    " THEN CASE WHEN ",
    held!(),
    " THEN 'timed_out' ELSE 'holding' END ELSE state END, heartbeat_at = CASE WHEN ",
    claimable!(),
    " AND NOT ",
    held!(),
    " THEN ?3 ELSE heartbeat_at END, fence = CASE WHEN ",
    claimable!(),
    " AND NOT ",
    held!(),
    " THEN ",
    next_fence!(),
    " ELSE fence END, finished_at = CASE WHEN ",
    claimable!(),
    " AND ",
    held!(),
    " THEN ?3 ELSE finished_at END \
     WHERE group_name = ?1 AND (instance_id = ?2 OR state = 'holding') RETURNING ",
    columns!()
);

/// ?1 group, ?2 instance id, ?3 now, ?4 the heartbeat it was seen with. A
/// holder its Workflow reported dead loses the group, provided it still
/// holds with that heartbeat: one that heartbeat or left since the status
/// was read is not touched.
pub const ABANDON_DEAD_HOLDER: &str = concat!(
    "UPDATE serial_queue SET state = 'abandoned', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding' AND heartbeat_at = ?4 \
     RETURNING ",
    columns!()
);

/// The first waiter (?1 group) takes the group by grant: it registered
/// with grant and nobody holds the group.
macro_rules! granted {
    () => {
        concat!("turn_prefix IS NOT NULL AND NOT ", held!())
    };
}

/// ?1 group, ?2 now. The hand-off by grant, and the read of the group's
/// first waiter (the one a claim would let in first), in one statement:
/// when nobody holds the group and that waiter registered with grant, it
/// becomes the holder, its heartbeat counted from now, with the group's
/// next fence; either way its row comes back (set to itself when it stays
/// waiting), so a release is one statement shorter than a hand-over and a
/// read (a batch's cost is per statement, as for [`CLAIM`]).
pub const HAND_OVER: &str = concat!(
    "UPDATE serial_queue SET state = CASE WHEN ",
    granted!(),
    " THEN 'holding' ELSE state END, heartbeat_at = CASE WHEN ",
    granted!(),
    " THEN ?2 ELSE heartbeat_at END, fence = CASE WHEN ",
    granted!(),
    " THEN ",
    next_fence!(),
    " ELSE fence END WHERE group_name = ?1 AND seq = (SELECT seq FROM serial_queue \
     WHERE group_name = ?1 AND state = 'waiting' ORDER BY seq LIMIT 1) RETURNING ",
    columns!()
);

// --- heartbeat and release ------------------------------------------------

/// ?1 group, ?2 instance id, ?3 now; changes 1 while the caller holds.
pub const HEARTBEAT: &str = "UPDATE serial_queue SET heartbeat_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding'";

/// ?1 group, ?2 instance id, ?3 now. From the holder or a waiter; returns
/// the row if it left (only a grant sets `heartbeat_at`, so a returned row
/// with one held the group).
pub const RELEASE: &str = concat!(
    "UPDATE serial_queue SET state = 'released', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state IN ('holding', 'waiting') RETURNING ",
    columns!()
);

/// ?1 group, ?2 instance id, ?3 now: a waiter found dead when woken.
pub const ABANDON_WAITER: &str = "UPDATE serial_queue SET state = 'abandoned', finished_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'waiting'";

/// Every statement, for the tests that check each uses an index.
pub const ALL: &[&str] = &[
    READ_ENTRY,
    READ_HOLDER,
    READ_WAITING,
    READ_RECENT,
    INSERT_WAITER,
    SUPERSEDE_OLDER,
    SUPERSEDE_NOT_CURRENT,
    PRUNE_FINISHED,
    ABANDON_STALE_HOLDER,
    CLAIM,
    ABANDON_DEAD_HOLDER,
    HAND_OVER,
    HEARTBEAT,
    RELEASE,
    ABANDON_WAITER,
];
