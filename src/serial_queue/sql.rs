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
    (
        "0004_serial_pause.sql",
        include_str!("../../migrations/0004_serial_pause.sql"),
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

/// The columns of [`super::GroupRow`] (`serial_group`), in one place.
macro_rules! group_columns {
    () => {
        "group_name, paused_at, paused_reason, resumed_at"
    };
}

/// The columns of [`super::GroupRow`], as the steering statements return them.
pub const GROUP_COLUMNS: &str = group_columns!();

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

/// ?1 group: its steering row (contract §11), if it was ever paused.
pub const READ_GROUP: &str = concat!(
    "SELECT ",
    group_columns!(),
    " FROM serial_group WHERE group_name = ?1 LIMIT 1"
);

/// `serialList` (contract §10): ?1 the last group of the previous page
/// ('' for the first), ?2 how many groups to read. The groups with a
/// holder or a waiter after ?1, in name order, each with its holder's
/// instance id (or NULL), its waiters, its earliest waiter's
/// `enqueued_at` (or NULL) and whether it is paused (§11: one lookup by
/// key per group of the page). One statement over the partial index of live
/// rows (migrations/0003_serial_list.sql), named so the planner cannot
/// pick an index that also holds the groups' history.
pub const LIST_GROUPS: &str = "SELECT group_name, \
     MAX(CASE WHEN state = 'holding' THEN instance_id END) AS holder, \
     SUM(state = 'waiting') AS waiting, \
     MIN(CASE WHEN state = 'waiting' THEN enqueued_at END) AS oldest_since, \
     EXISTS (SELECT 1 FROM serial_group AS steering \
     WHERE steering.group_name = serial_queue.group_name \
     AND steering.paused_at IS NOT NULL) AS paused \
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

/// Whether an operator paused the group (contract §11), ?1 group. The
/// one rule of a pause, in the two statements that let a waiter in:
/// [`CLAIM`] moves nobody (no hold, no time-out) and [`HAND_OVER`] hands
/// the group to nobody while it holds. A group never paused has no
/// `serial_group` row: this is one lookup by key that finds none.
macro_rules! paused {
    () => {
        "EXISTS (SELECT 1 FROM serial_group WHERE group_name = ?1 AND paused_at IS NOT NULL)"
    };
}

/// When a waiter's timeout starts (contract §11): the later of its
/// enqueue and the group's last resume, so time paused does not count.
/// ?1 group; a group never resumed has no `resumed_at` (0).
macro_rules! waits_since {
    () => {
        "MAX(enqueued_at, IFNULL((SELECT resumed_at FROM serial_group WHERE group_name = ?1), 0))"
    };
}

/// Whether the caller's row (?2) moves in [`CLAIM`]: it waits (at ?5),
/// the group is not paused, and either nobody holds the group or it has
/// waited since before ?4.
macro_rules! claimable {
    () => {
        concat!(
            "(instance_id = ?2 AND state = 'waiting' AND ",
            at_revision!(),
            " AND NOT ",
            paused!(),
            " AND (",
            waits_since!(),
            " < ?4 OR NOT ",
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

/// The hand-over by grant and the read of the first waiter, with
/// `$only_if` (a condition on ?1 group, ?2 now) as a further condition of
/// both: ?1 group, ?2 now. See [`HAND_OVER`].
macro_rules! hand_over {
    ($($only_if:literal)?) => {
        concat!(
            "UPDATE serial_queue SET state = CASE WHEN ",
            granted!(),
            " THEN 'holding' ELSE state END, heartbeat_at = CASE WHEN ",
            granted!(),
            " THEN ?2 ELSE heartbeat_at END, fence = CASE WHEN ",
            granted!(),
            " THEN ",
            next_fence!(),
            " ELSE fence END WHERE group_name = ?1 AND NOT ",
            paused!(),
            $(" AND ", $only_if,)?
            " AND seq = (SELECT seq FROM serial_queue \
             WHERE group_name = ?1 AND state = 'waiting' ORDER BY seq LIMIT 1) RETURNING ",
            columns!()
        )
    };
}

/// ?1 group, ?2 now. The hand-off by grant, and the read of the group's
/// first waiter (the one a claim would let in first), in one statement:
/// when nobody holds the group and that waiter registered with grant, it
/// becomes the holder, its heartbeat counted from now, with the group's
/// next fence; either way its row comes back (set to itself when it stays
/// waiting), so a release is one statement shorter than a hand-over and a
/// read (a batch's cost is per statement, as for [`CLAIM`]). A paused
/// group returns no row: it goes on to nobody.
pub const HAND_OVER: &str = hand_over!();

/// [`HAND_OVER`] in a resume's batch ([`RESUME`] first): only if that
/// resume applied (it set `resumed_at` to ?2), so a resume of a group that
/// was not paused changes nothing.
pub const HAND_OVER_ON_RESUME: &str =
    hand_over!("EXISTS (SELECT 1 FROM serial_group WHERE group_name = ?1 AND resumed_at = ?2)");

// --- steering (contract §11) ----------------------------------------------

/// ?1 group, ?2 now, ?3 the reason or NULL. Pauses the group: a first
/// pause since ?2, a second one keeps its `since` and takes the new reason.
pub const PAUSE: &str = concat!(
    "INSERT INTO serial_group (group_name, paused_at, paused_reason) VALUES (?1, ?2, ?3) \
     ON CONFLICT (group_name) DO UPDATE SET paused_at = IFNULL(paused_at, excluded.paused_at), \
     paused_reason = excluded.paused_reason RETURNING ",
    group_columns!()
);

/// ?1 group, ?2 now. Resumes a paused group, its waiters' timeouts
/// counted from ?2; returns the row when it was paused (none otherwise).
pub const RESUME: &str = concat!(
    "UPDATE serial_group SET paused_at = NULL, paused_reason = NULL, resumed_at = ?2 \
     WHERE group_name = ?1 AND paused_at IS NOT NULL RETURNING ",
    group_columns!()
);

// --- heartbeat and release ------------------------------------------------

/// ?1 group, ?2 instance id, ?3 now; changes 1 while the caller holds.
pub const HEARTBEAT: &str = "UPDATE serial_queue SET heartbeat_at = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state = 'holding'";

/// ?1 group, ?2 instance id, ?3 binding: §1a, the instance (waiting or
/// holding) was found through this binding; changes nothing once it is
/// the one remembered.
pub const REBIND: &str = "UPDATE serial_queue SET workflow = ?3 \
     WHERE group_name = ?1 AND instance_id = ?2 AND state IN ('holding', 'waiting') \
     AND workflow IS NOT ?3";

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
    READ_GROUP,
    HAND_OVER_ON_RESUME,
    PAUSE,
    RESUME,
];
