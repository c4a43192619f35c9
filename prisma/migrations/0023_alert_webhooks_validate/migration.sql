-- load-control: no-transaction
-- The constraints 0022 added NOT VALID, validated now: VALIDATE CONSTRAINT scans load_dispatch under SHARE UPDATE
-- EXCLUSIVE, which lets its reads and writes go on. Then at most one ALERT_WEBHOOK call per receiver and alert
-- occurrence, and the newest-first list of them, built concurrently (load_dispatch takes writes meanwhile).
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_target;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT fk_load_dispatch_alert_occurrence;
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.uq_load_dispatch_alert_webhook;
CREATE UNIQUE INDEX CONCURRENTLY uq_load_dispatch_alert_webhook
    ON nifi_ops.load_dispatch (receiver, alert_dedup_key) WHERE dispatch_type = 'ALERT_WEBHOOK';
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.ix_load_dispatch_alert_webhook_created;
CREATE INDEX CONCURRENTLY ix_load_dispatch_alert_webhook_created
    ON nifi_ops.load_dispatch (created_at DESC) WHERE dispatch_type = 'ALERT_WEBHOOK';
