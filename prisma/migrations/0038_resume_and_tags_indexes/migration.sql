-- load-control: no-transaction
-- 0037's tags constraint validated (a scan under SHARE UPDATE EXCLUSIVE: reads and writes go on), then its
-- indexes built concurrently: runs by tag (runs(filter: {tags}), `load-control runs --tag`), and the attempt
-- that resumed a run (load_run.retry_of_run_id: the newer-attempt check, and cleanup, which leaves a resumed
-- run's shared HDFS path to its last attempt).
ALTER TABLE nifi_ops.load_run VALIDATE CONSTRAINT ck_load_run_tags;
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_tags;
CREATE INDEX CONCURRENTLY ix_load_run_tags ON nifi_ops.load_run USING gin (tags jsonb_path_ops);
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_retry_of;
CREATE INDEX CONCURRENTLY ix_load_run_retry_of ON nifi_ops.load_run (retry_of_run_id) WHERE retry_of_run_id IS NOT NULL;
