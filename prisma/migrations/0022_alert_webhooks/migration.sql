-- Alert notifications (issue 17, point 3): each occurrence of an alert is recorded once (alert_occurrence, keyed
-- by its dedup key) by the first sweeper cycle that sees it, and posted once to each receiver configured in
-- alerts.webhooks through the outbox (ALERT_WEBHOOK dispatches, one per occurrence and receiver). A receiver is
-- known by its name; its URL and headers stay in the configuration (they may hold secrets).
--
-- Online-safe: new tables, nullable columns without defaults (catalog changes only), the dispatch constraints
-- replaced NOT VALID — validated, and the ALERT_WEBHOOK indexes built concurrently, by 0023. The lock timeout
-- keeps the ALTERs from queueing behind a long transaction and stalling every request behind them.
SET LOCAL lock_timeout = '5s';

-- The receivers the sweepers have seen configured, and since when: an alert already present when a receiver was
-- first configured is not sent to it (no flood of old alerts on the first start).
CREATE TABLE nifi_ops.alert_receiver (
    name          varchar(200) PRIMARY KEY,
    registered_at timestamptz  NOT NULL DEFAULT clock_timestamp()
);

-- One row per alert occurrence, written by whoever saw it first: what the webhooks post. An alert that clears
-- and comes back later has a new dedup key (src/domain/notifications/).
CREATE TABLE nifi_ops.alert_occurrence (
    dedup_key     varchar(100)  PRIMARY KEY,
    kind          varchar(40)   NOT NULL,
    severity      varchar(10)   NOT NULL,
    run_id        uuid,
    job_key       varchar(200),
    business_key  varchar(200),
    status        varchar(30),
    dispatch_id   uuid,
    partition_id  varchar(40),
    consumer      varchar(200),
    message       varchar(2000),
    -- the alert's own time (when the dispatch died, the run stopped moving, …)
    alert_at      timestamptz,
    raised_at     timestamptz   NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT ck_alert_occurrence_severity CHECK (severity IN ('ERROR', 'WARN'))
);
-- the retention of occurrences (the sweeper forgets those older than retention.ledger)
CREATE INDEX ix_alert_occurrence_raised ON nifi_ops.alert_occurrence (raised_at);

-- ALERT_WEBHOOK dispatches: one alert occurrence posted to one receiver, tied to no run (a run's end must not
-- cancel the call that reports it). At most one per receiver and occurrence: uq_load_dispatch_alert_webhook (0023).
ALTER TABLE nifi_ops.load_dispatch
    ADD COLUMN receiver varchar(200),
    ADD COLUMN alert_dedup_key varchar(100);
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_type
    CHECK (dispatch_type IN ('VALIDATE_RUN', 'REISSUE_PARTITION', 'GATE_READY', 'ALERT_WEBHOOK')) NOT VALID;
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_target;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_target CHECK (
    (dispatch_type = 'VALIDATE_RUN' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL)
    OR (dispatch_type = 'REISSUE_PARTITION' AND run_id IS NOT NULL AND partition_id IS NOT NULL AND consumer IS NULL
        AND receiver IS NULL)
    OR (dispatch_type = 'GATE_READY' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NOT NULL
        AND business_date IS NOT NULL AND readiness_version IS NOT NULL AND receiver IS NULL)
    OR (dispatch_type = 'ALERT_WEBHOOK' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NOT NULL AND alert_dedup_key IS NOT NULL)) NOT VALID;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT fk_load_dispatch_alert_occurrence
    FOREIGN KEY (alert_dedup_key) REFERENCES nifi_ops.alert_occurrence (dedup_key) ON DELETE RESTRICT NOT VALID;
