-- Operating many loads (issue 28, points 1 and 3): a job that can be paused, and backfills of a business-date range
-- that Load Control starts through the outbox (START_LOAD calls to NiFi's PG-05), never more than a backfill's
-- max_concurrent dates at once, with their readiness decisions optionally held until an operator releases them.
--
-- Online-safe: new tables, nullable columns without defaults (catalog changes only) and the dispatch constraints
-- replaced NOT VALID — validated, and the START_LOAD unique index built concurrently, by 0035. The lock timeout
-- keeps the ALTERs from queueing behind a long transaction and stalling every request behind them.
SET LOCAL lock_timeout = '5s';

-- A job, known by its runs until something needs a row of its own: pausing it, or a backfill of it. createRun
-- inserts the row on demand and reads it FOR SHARE, so a pause waits for the createRuns in flight.
CREATE TABLE nifi_ops.load_job (
    job_key       varchar(200)  PRIMARY KEY,
    -- all three set while paused, all NULL otherwise
    paused_at     timestamptz,
    paused_by     varchar(200),
    pause_reason  varchar(2000),
    created_at    timestamptz   NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT ck_load_job_pause CHECK (
        (paused_at IS NULL AND paused_by IS NULL AND pause_reason IS NULL)
        OR (paused_at IS NOT NULL AND paused_by IS NOT NULL AND pause_reason IS NOT NULL))
);

-- A backfill: one job's business dates from_date..to_date, started max_concurrent at a time in date_order.
CREATE TABLE nifi_ops.load_backfill (
    backfill_id             uuid          PRIMARY KEY,
    job_key                 varchar(200)  NOT NULL REFERENCES nifi_ops.load_job (job_key) ON DELETE RESTRICT,
    from_date               date          NOT NULL,
    to_date                 date          NOT NULL,
    reprocess               varchar(10)   NOT NULL,
    max_concurrent          integer       NOT NULL,
    date_order              varchar(20)   NOT NULL,
    push_readiness          boolean       NOT NULL,
    status                  varchar(20)   NOT NULL,
    created_by              varchar(200)  NOT NULL,
    created_at              timestamptz   NOT NULL DEFAULT clock_timestamp(),
    paused_at               timestamptz,
    ended_at                timestamptz,
    -- pushReadiness false: when an operator released its held readiness decisions (releaseBackfillReadiness)
    readiness_released_at   timestamptz,
    readiness_released_by   varchar(200),
    CONSTRAINT ck_load_backfill_status CHECK (status IN ('RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED')),
    CONSTRAINT ck_load_backfill_range CHECK (from_date <= to_date),
    CONSTRAINT ck_load_backfill_reprocess CHECK (reprocess IN ('MISSING', 'FAILED', 'ALL')),
    CONSTRAINT ck_load_backfill_order CHECK (date_order IN ('OLDEST_FIRST', 'NEWEST_FIRST')),
    CONSTRAINT ck_load_backfill_max_concurrent CHECK (max_concurrent >= 1)
);
CREATE INDEX ix_load_backfill_job ON nifi_ops.load_backfill (job_key, created_at DESC);

-- Each business date of a backfill: its place in the start order, where it stands, and the run it started.
CREATE TABLE nifi_ops.load_backfill_date (
    backfill_id    uuid          NOT NULL REFERENCES nifi_ops.load_backfill (backfill_id) ON DELETE RESTRICT,
    business_date  date          NOT NULL,
    position       integer       NOT NULL,
    status         varchar(20)   NOT NULL,
    -- why it was skipped, failed or cancelled (SUCCEEDED_BEFORE, ACTIVE_RUN, RUN_FAILED_EXTRACT, START_LOAD_DEAD, …)
    reason         varchar(200),
    run_id         uuid,
    updated_at     timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (backfill_id, business_date),
    CONSTRAINT ck_load_backfill_date_status CHECK (status IN (
        'QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED', 'CANCELLED'))
);

-- A backfill's runs are marked as such; a START_LOAD call names its backfill and business date.
ALTER TABLE nifi_ops.load_run ADD COLUMN backfill_id uuid;
ALTER TABLE nifi_ops.load_dispatch ADD COLUMN backfill_id uuid;

-- A readiness decision a backfill with push_readiness false made (its run caused it, or is in its evidence) and
-- which was therefore neither called nor announced: releaseBackfillReadiness pushes the latest of each date once.
ALTER TABLE nifi_ops.gate_readiness_decision ADD COLUMN held_by_backfill uuid;

ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_type
    CHECK (dispatch_type IN ('VALIDATE_RUN', 'REISSUE_PARTITION', 'GATE_READY', 'ALERT_WEBHOOK', 'LINEAGE_EVENT',
        'START_LOAD')) NOT VALID;
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_target;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_target CHECK (
    (dispatch_type = 'VALIDATE_RUN' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL AND backfill_id IS NULL)
    OR (dispatch_type = 'REISSUE_PARTITION' AND run_id IS NOT NULL AND partition_id IS NOT NULL AND consumer IS NULL
        AND receiver IS NULL AND backfill_id IS NULL)
    OR (dispatch_type = 'GATE_READY' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NOT NULL
        AND business_date IS NOT NULL AND readiness_version IS NOT NULL AND receiver IS NULL AND backfill_id IS NULL)
    OR (dispatch_type = 'ALERT_WEBHOOK' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NOT NULL AND alert_dedup_key IS NOT NULL AND backfill_id IS NULL)
    OR (dispatch_type = 'LINEAGE_EVENT' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL AND lineage_event_type IS NOT NULL AND backfill_id IS NULL)
    OR (dispatch_type = 'START_LOAD' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NULL
        AND receiver IS NULL AND backfill_id IS NOT NULL AND business_date IS NOT NULL)) NOT VALID;
