-- Retention of the ledger (src/domain/retention/): a run whose details were purged keeps its load_run row as
-- its summary, stamped with when its files, partitions, validations, dispatches and events were deleted.
-- A nullable column without a default is a catalog change only (no table rewrite); the lock timeout keeps
-- the ALTER from queueing behind a long transaction on load_run and stalling every request behind it.
SET LOCAL lock_timeout = '5s';
ALTER TABLE nifi_ops.load_run ADD COLUMN purged_at timestamptz;
