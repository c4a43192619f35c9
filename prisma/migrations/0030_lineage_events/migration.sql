-- OpenLineage run events (issue 30, point 1): each lineage moment of a run — extraction starts, the run ends, an
-- unknown publish is resolved — becomes one LINEAGE_EVENT call in the outbox, written by a trigger on load_run
-- (prisma/functions/06_lineage.sql) in the transaction of the move itself, and posted to lineage.url by the
-- dispatcher. The event's body is composed when it is sent, from the ledger and the worker's lineage settings
-- (src/domain/lineage/); the row holds what makes it one event: its run, its eventType and its time (created_at).
-- A run's end does not cancel them: they report that end.
--
-- Online-safe: a new table, a nullable column without a default (a catalog change only), the dispatch constraints
-- replaced NOT VALID — validated, and the one-event-per-run-and-type index built concurrently, by 0031.
SET LOCAL lock_timeout = '5s';

-- Whether lineage is on, as the workers' lineage.enabled says: the row exists while it is (a sweeper cycle writes or
-- removes it, src/domain/lineage/lineage-switch.ts). Without it the trigger writes nothing: off by default.
CREATE TABLE nifi_ops.lineage_delivery (
    singleton     boolean     PRIMARY KEY DEFAULT true,
    enabled_since timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT ck_lineage_delivery_singleton CHECK (singleton)
);

ALTER TABLE nifi_ops.load_dispatch ADD COLUMN lineage_event_type varchar(10);
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_lineage_event_type
    CHECK (lineage_event_type IN ('START', 'RUNNING', 'COMPLETE', 'ABORT', 'FAIL')) NOT VALID;

ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_type CHECK (dispatch_type IN (
    'VALIDATE_RUN',
    'REISSUE_PARTITION',
    'GATE_READY',
    'ALERT_WEBHOOK',
    'LINEAGE_EVENT'
)) NOT VALID;

-- one line per dispatch type: which subject columns it has
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_target;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_target CHECK (
    (dispatch_type = 'VALIDATE_RUN' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL)
    OR (dispatch_type = 'REISSUE_PARTITION' AND run_id IS NOT NULL AND partition_id IS NOT NULL AND consumer IS NULL
        AND receiver IS NULL)
    OR (dispatch_type = 'GATE_READY' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NOT NULL
        AND business_date IS NOT NULL AND readiness_version IS NOT NULL AND receiver IS NULL)
    OR (dispatch_type = 'ALERT_WEBHOOK' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NOT NULL AND alert_dedup_key IS NOT NULL)
    OR (dispatch_type = 'LINEAGE_EVENT' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL AND lineage_event_type IS NOT NULL)
) NOT VALID;
