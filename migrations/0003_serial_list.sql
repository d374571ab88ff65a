-- Contract §10: serialList pages the groups that have a holder or a waiter,
-- by name. This index holds only those rows (a finished execution leaves
-- it), in group order, with every column the list reads: a page seeks to
-- its cursor and reads the live rows of its groups alone, however many
-- groups are idle or how much history they keep.
CREATE INDEX serial_queue_busy ON serial_queue (group_name, state, enqueued_at, instance_id)
  WHERE state IN ('waiting', 'holding');
