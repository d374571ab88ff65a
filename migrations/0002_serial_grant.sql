-- Contract §2a: per waiter, the Workflow binding it is checked and woken
-- through and whether it registered with grant; per grant, the group's fence.
-- Rows written before this migration read as registered without either
-- (the default binding, no grant) and as holding no fence.
-- workflow: the binding named at enqueue; NULL is WORKFLOW_BINDING.
ALTER TABLE serial_queue ADD COLUMN workflow TEXT;
-- turn_prefix: set when registered with grant (TURN_EVENT_TYPE then); the
-- registration's turn event type is turn_prefix || '-serial-' || seq, so it
-- is unique per registration (seq is never reused: AUTOINCREMENT).
ALTER TABLE serial_queue ADD COLUMN turn_prefix TEXT;
-- fence: the group's fence when this execution was granted the group. The
-- group's fence is the highest one among its rows; pruning keeps that row.
ALTER TABLE serial_queue ADD COLUMN fence INTEGER;
CREATE INDEX serial_queue_fence ON serial_queue (group_name, fence);
