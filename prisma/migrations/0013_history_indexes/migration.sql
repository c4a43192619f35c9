-- load-control: no-transaction
-- Indexes for a ledger with a year of history behind it (bench/history: 36,500 runs, 8.3 M partitions, 20.5 M
-- files, 16.7 M events). Each one is there for a plan EXPLAIN (ANALYZE, BUFFERS) showed on that ledger; the
-- numbers are before -> after. Built concurrently: the tables take writes meanwhile. The partial ones hold only
-- the few rows they are for (alert events, unfinished partitions, the outbox backlog), so they cost the hot
-- paths next to nothing, and none of them covers a column a chunk report's partition update changes.

-- monitorSummary's CLEANUP_FAILED, DEPENDENCIES_NOT_READY and CHUNK_CONFLICT alerts (event_name = … AND
-- event_time >= 24 hours ago): three parallel sequential scans of load_event, with JIT, 6,960 -> 31 ms.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_event_alert_kinds;
CREATE INDEX CONCURRENTLY ix_load_event_alert_kinds ON nifi_ops.load_event (event_name, event_time)
    WHERE event_name IN ('CLEANUP_FAILED', 'DEPENDENCIES_NOT_READY', 'CHUNK_CONFLICT');

-- The sweeper's ended-runs rule (unfinished partitions of terminal runs, src/domain/sweeper/ended-runs.ts) and
-- lockRunsWithPartitions: a nested loop probing ix_load_partition_status once per terminal run, 610 -> 36 ms.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_partition_unfinished;
CREATE INDEX CONCURRENTLY ix_load_partition_unfinished ON nifi_ops.load_partition (run_id, partition_id)
    WHERE status IN ('PENDING', 'RUNNING', 'RETRY');

-- monitorSummary's dispatch counts and DISPATCH_DEAD alerts, and the worker's backlog gauges (status PENDING,
-- SENT or DEAD; ix_load_dispatch_due leaves DEAD out): a sequential scan of load_dispatch, 7.7 -> 0.06 ms.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_dispatch_backlog;
CREATE INDEX CONCURRENTLY ix_load_dispatch_backlog ON nifi_ops.load_dispatch (status)
    WHERE status IN ('PENDING', 'SENT', 'DEAD');

-- monitorSummary's recent runs and RUN_FAILED alerts (COALESCE(completed_at, heartbeat_at) within 24 hours,
-- src/domain/monitor/monitor-summary.ts): a sequential scan of load_run, 26 -> 0.3 ms.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_ended;
CREATE INDEX CONCURRENTLY ix_load_run_ended ON nifi_ops.load_run ((COALESCE(completed_at, heartbeat_at)));

-- runs(filter: {businessKey}), newest first: a full scan of ix_load_run_job_business_started (its leading
-- column is job_key) and a sort, 4.6 -> 0.12 ms for a business date half a year back.
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_business_started;
CREATE INDEX CONCURRENTLY ix_load_run_business_started ON nifi_ops.load_run (business_key, started_at DESC, run_id DESC);
