-- load-control: no-transaction
-- The constraints 0030 added NOT VALID, validated now: VALIDATE CONSTRAINT scans load_dispatch under SHARE UPDATE
-- EXCLUSIVE, which lets its reads and writes go on. Then at most one event per run and eventType, built
-- concurrently (load_dispatch takes writes meanwhile); the trigger's INSERT … ON CONFLICT DO NOTHING relies on it.
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_lineage_event_type;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_target;
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.uq_load_dispatch_lineage_event;
CREATE UNIQUE INDEX CONCURRENTLY uq_load_dispatch_lineage_event
    ON nifi_ops.load_dispatch (run_id, lineage_event_type) WHERE dispatch_type = 'LINEAGE_EVENT';
