-- load-control: no-transaction
-- The constraints 0034 added NOT VALID, validated now: VALIDATE CONSTRAINT scans load_dispatch under SHARE UPDATE
-- EXCLUSIVE, which lets its reads and writes go on. Then at most one START_LOAD call per backfill date, and a
-- backfill's runs by backfill, built concurrently (load_dispatch and load_run take writes meanwhile).
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_target;
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.uq_load_dispatch_start_load;
CREATE UNIQUE INDEX CONCURRENTLY uq_load_dispatch_start_load
    ON nifi_ops.load_dispatch (backfill_id, business_date) WHERE dispatch_type = 'START_LOAD';
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_run_backfill;
CREATE INDEX CONCURRENTLY ix_load_run_backfill ON nifi_ops.load_run (backfill_id) WHERE backfill_id IS NOT NULL;
