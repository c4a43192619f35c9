-- Chunk reports update their partition row on every call, and a partition's completion updates its run
-- row. Those updates stay HOT (a new row version on the same page, no index insertions) only if no
-- indexed column changes and the page has room:
-- * heartbeat_at moves on every report, so it leaves the recovery index (the sweeper scans the few
--   RUNNING/RETRY partitions by status and filters on the heartbeat);
-- * both tables keep free room on each page for the next versions of their rows.
DROP INDEX nifi_ops.ix_load_partition_recovery;
CREATE INDEX ix_load_partition_recovery ON nifi_ops.load_partition (status) WHERE status IN ('RUNNING','RETRY');
ALTER TABLE nifi_ops.load_partition SET (fillfactor = 70);
ALTER TABLE nifi_ops.load_run SET (fillfactor = 50);
