-- The business-date gate (issue 4): upstream jobs' attempts per business date (observations), which
-- jobs a consumer needs (gates), and what a consumer published for a date together with the exact
-- upstream runs that authorised it (publications and their evidence).
--
-- Load Control's own runs are observations too, but they are not copied here: the gate reads them from
-- nifi_ops.load_run in the same statement (src/domain/gate/ledger.ts), so they can never disagree.

-- One attempt of an external upstream job for one business date. The attempt ordinal is the producer's;
-- the business date is always given explicitly, never derived from started_at or from the clock.
CREATE TABLE nifi_ops.gate_observation (
    job_id            varchar(200)  NOT NULL,
    business_date     date          NOT NULL,
    attempt           integer       NOT NULL,
    run_id            varchar(200)  NOT NULL,
    state             varchar(20)   NOT NULL,
    started_at        timestamptz   NOT NULL,
    -- when the attempt was first reported, and when and by whom its current state was reported
    first_observed_at timestamptz   NOT NULL DEFAULT clock_timestamp(),
    observed_at       timestamptz   NOT NULL DEFAULT clock_timestamp(),
    observed_by       varchar(200)  NOT NULL,
    PRIMARY KEY (job_id, business_date, attempt),
    CONSTRAINT ck_gate_observation_state CHECK (state IN ('RUNNING','SUCCEEDED','FAILED')),
    CONSTRAINT ck_gate_observation_attempt CHECK (attempt >= 1)
);

-- A consumer and the exact set of upstream jobs it needs for each business date. A Load Control job
-- may be bound to one gate: its createRun and claimPublish then wait for the gate.
CREATE TABLE nifi_ops.gate (
    consumer      varchar(200)  PRIMARY KEY,
    bound_job_key varchar(200),
    defined_at    timestamptz   NOT NULL DEFAULT clock_timestamp(),
    defined_by    varchar(200)  NOT NULL
);
CREATE UNIQUE INDEX uq_gate_bound_job_key ON nifi_ops.gate (bound_job_key) WHERE bound_job_key IS NOT NULL;

CREATE TABLE nifi_ops.gate_required_job (
    consumer varchar(200)  NOT NULL REFERENCES nifi_ops.gate (consumer) ON DELETE CASCADE,
    job_id   varchar(200)  NOT NULL,
    PRIMARY KEY (consumer, job_id)
);
CREATE INDEX ix_gate_required_job_job ON nifi_ops.gate_required_job (job_id);

-- At most one publication per consumer and business date; output_hash is the SHA-256 of the output's
-- canonical jsonb text, which is what an identical retry is recognised by.
CREATE TABLE nifi_ops.gate_publication (
    consumer      varchar(200)  NOT NULL REFERENCES nifi_ops.gate (consumer) ON DELETE RESTRICT,
    business_date date          NOT NULL,
    output        jsonb         NOT NULL,
    output_hash   char(64)      NOT NULL,
    published_by  varchar(200)  NOT NULL,
    published_at  timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (consumer, business_date)
);

-- The upstream attempts that authorised a publication: written in the publication's transaction.
CREATE TABLE nifi_ops.gate_publication_evidence (
    consumer      varchar(200)  NOT NULL,
    business_date date          NOT NULL,
    job_id        varchar(200)  NOT NULL,
    attempt       integer       NOT NULL,
    run_id        varchar(200)  NOT NULL,
    PRIMARY KEY (consumer, business_date, job_id),
    FOREIGN KEY (consumer, business_date) REFERENCES nifi_ops.gate_publication (consumer, business_date) ON DELETE RESTRICT
);

-- The upstream attempts that authorised a gated Load Control run's publish claim: written in the
-- claimPublish transaction, so a run in PUBLISHING always has its evidence.
CREATE TABLE nifi_ops.gate_publish_claim_evidence (
    run_id          uuid          NOT NULL REFERENCES nifi_ops.load_run (run_id) ON DELETE RESTRICT,
    job_id          varchar(200)  NOT NULL,
    consumer        varchar(200)  NOT NULL REFERENCES nifi_ops.gate (consumer) ON DELETE RESTRICT,
    business_date   date          NOT NULL,
    publish_token   uuid          NOT NULL,
    attempt         integer       NOT NULL,
    upstream_run_id varchar(200)  NOT NULL,
    recorded_at     timestamptz   NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (run_id, job_id)
);

-- Load Control runs as observations: the attempts of a job for a business date are its runs with that
-- business key, in start order.
CREATE INDEX ix_load_run_job_business_started ON nifi_ops.load_run (job_key, business_key, started_at, run_id);

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'load_control_api') THEN
        GRANT SELECT, INSERT, UPDATE ON nifi_ops.gate_observation, nifi_ops.gate, nifi_ops.gate_publication,
            nifi_ops.gate_publication_evidence, nifi_ops.gate_publish_claim_evidence TO load_control_api;
        GRANT SELECT, INSERT, DELETE ON nifi_ops.gate_required_job TO load_control_api;
    END IF;
END
$$;
