-- load-control: no-transaction
-- The purge takes its next run, oldest end first, from the runs not purged yet that may be purged once old
-- enough: not a SUCCESS run nobody cleaned up (src/domain/retention/purge.ts states this predicate word for word).
-- Purged runs leave the index, so it holds about retention.ledger's worth of runs plus the few active ones
-- however long the history grows. completed_at, cleaned_at and purged_at change once per run each, so
-- chunk reports' updates of the run row stay as HOT as they were. Built concurrently: load_run takes writes
-- meanwhile.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_purge;
CREATE INDEX CONCURRENTLY ix_load_run_purge ON nifi_ops.load_run (completed_at, run_id)
    WHERE purged_at IS NULL AND (cleaned_at IS NOT NULL OR status <> 'SUCCESS');
