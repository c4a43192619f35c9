-- The gate pushes and watches (issue 15): readiness decided once per consumer + business date, with a version;
-- an optional receiver per gate called through the outbox (GATE_READY); per required job an optional
-- expected-by deadline that the sweeper checks once per job and date. The decisions are made by the triggers
-- of prisma/functions/05_gate_readiness.sql.
--
-- Online-safe: new tables, nullable columns without defaults (catalog changes only), run_id's NOT NULL
-- dropped (catalog only) and the dispatch constraints replaced NOT VALID — validated, and the GATE_READY
-- unique index built concurrently, by 0018. The lock timeout keeps the ALTERs from queueing behind a long
-- transaction and stalling every request behind them.
SET LOCAL lock_timeout = '5s';

-- Where a gate's decisions are delivered (an http(s) URL), or NULL: no calls.
ALTER TABLE nifi_ops.gate ADD COLUMN notify_url varchar(2000);

-- A required job's expected-by deadline for business date D: expected_time on the day D + expected_days_after,
-- a wall-clock time in the IANA zone expected_time_zone (D+1 06:00 Asia/Seoul). expected_since: when this
-- expectation was set; deadlines that passed before it are not checked.
ALTER TABLE nifi_ops.gate_required_job
    ADD COLUMN expected_days_after smallint,
    ADD COLUMN expected_time time(0),
    ADD COLUMN expected_time_zone varchar(64),
    ADD COLUMN expected_since timestamptz;
ALTER TABLE nifi_ops.gate_required_job ADD CONSTRAINT ck_gate_required_job_expected_by CHECK (
    (expected_days_after IS NULL AND expected_time IS NULL AND expected_time_zone IS NULL AND expected_since IS NULL)
    OR (expected_days_after BETWEEN 0 AND 31 AND expected_time IS NOT NULL AND expected_time_zone IS NOT NULL
        AND expected_since IS NOT NULL)) NOT VALID;

-- Every change of a consumer's readiness for a business date, once: version 1 is the first time it was ready,
-- each later version a change of `ready` or of the evidence (the latest attempt of each required job). A date
-- never ready has no row. The latest version is the current decision.
CREATE TABLE nifi_ops.gate_readiness_decision (
    consumer      varchar(200)  NOT NULL REFERENCES nifi_ops.gate (consumer) ON DELETE RESTRICT,
    business_date date          NOT NULL,
    version       integer       NOT NULL,
    ready         boolean       NOT NULL,
    -- [{jobId, attempt, runId, source}] of the required jobs when ready, else []
    evidence      jsonb         NOT NULL,
    -- what made the decision: {source, jobId, runId, …} of the attempt, or the gate's definition
    cause         jsonb         NOT NULL,
    decided_at    timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer, business_date, version),
    CONSTRAINT ck_gate_readiness_decision_version CHECK (version >= 1),
    CONSTRAINT ck_gate_readiness_decision_evidence CHECK (jsonb_typeof(evidence) = 'array' AND (ready OR evidence = '[]'::jsonb))
);

-- The sweeper's check of an expected-by deadline, once per job and business date: what the job's latest attempt
-- was when the first deadline for it passed. OBSERVATION_MISSING and OBSERVATION_LATE are alerts; MET is kept so
-- that the next cycle does not look again.
CREATE TABLE nifi_ops.gate_deadline_check (
    job_id        varchar(200)  NOT NULL,
    business_date date          NOT NULL,
    outcome       varchar(30)   NOT NULL,
    -- the gate whose deadline passed first, and that deadline
    consumer      varchar(200)  NOT NULL,
    deadline      timestamptz   NOT NULL,
    -- the latest attempt at the check (none for OBSERVATION_MISSING)
    attempt       integer,
    run_id        varchar(200),
    state         varchar(20),
    checked_at    timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job_id, business_date),
    CONSTRAINT ck_gate_deadline_check_outcome CHECK (outcome IN ('MET', 'OBSERVATION_MISSING', 'OBSERVATION_LATE'))
);
-- the monitor summary's OBSERVATION_MISSING / OBSERVATION_LATE alerts of the recent window
CREATE INDEX ix_gate_deadline_check_alerts ON nifi_ops.gate_deadline_check (checked_at) WHERE outcome <> 'MET';

-- GATE_READY dispatches: a call to a gate's receiver for one decision (consumer, business date, version), tied to
-- no run. Each decision is called once: uq_load_dispatch_gate_ready (0018).
ALTER TABLE nifi_ops.load_dispatch
    ALTER COLUMN run_id DROP NOT NULL,
    ADD COLUMN consumer varchar(200),
    ADD COLUMN business_date date,
    ADD COLUMN readiness_version integer;
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_type
    CHECK (dispatch_type IN ('VALIDATE_RUN', 'REISSUE_PARTITION', 'GATE_READY')) NOT VALID;
ALTER TABLE nifi_ops.load_dispatch DROP CONSTRAINT ck_load_dispatch_partition;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT ck_load_dispatch_target CHECK (
    (dispatch_type = 'VALIDATE_RUN' AND run_id IS NOT NULL AND partition_id IS NULL AND consumer IS NULL)
    OR (dispatch_type = 'REISSUE_PARTITION' AND run_id IS NOT NULL AND partition_id IS NOT NULL AND consumer IS NULL)
    OR (dispatch_type = 'GATE_READY' AND run_id IS NULL AND partition_id IS NULL AND consumer IS NOT NULL
        AND business_date IS NOT NULL AND readiness_version IS NOT NULL)) NOT VALID;
ALTER TABLE nifi_ops.load_dispatch ADD CONSTRAINT fk_load_dispatch_readiness_decision
    FOREIGN KEY (consumer, business_date, readiness_version)
    REFERENCES nifi_ops.gate_readiness_decision (consumer, business_date, version) ON DELETE RESTRICT NOT VALID;
