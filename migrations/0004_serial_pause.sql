-- Contract §11: an operator pauses and resumes a serial group. One row per
-- group that was ever paused. A group never paused has none, and its claims
-- and releases find no row to read (the lookup by this table's key is all
-- they add). While paused_at is set, no claim succeeds and a freed group is
-- handed to nobody. A waiter's timeout runs from the later of its enqueue
-- and resumed_at. Rows written by 0001 to 0003 are untouched: every group
-- starts unpaused, its waiters timed from their enqueue.
-- paused_at: ms since the epoch of the first pause since the last resume,
-- NULL while not paused. paused_reason: the operator's words (at most 512
-- UTF-8 bytes), or NULL. resumed_at: ms since the epoch of the last resume,
-- NULL if never resumed.
CREATE TABLE serial_group (
  group_name TEXT PRIMARY KEY NOT NULL,
  paused_at INTEGER,
  paused_reason TEXT,
  resumed_at INTEGER
);
