-- Source pools (README "Source pools"): a named limit of RUNNING partitions shared by the jobs assigned to it, so
-- that one Oracle is not overrun by all the jobs that read it. claim_partition admits a claim only while the
-- pool has a free slot, holding the pool's row locked while it counts (prisma/functions/02_claim_partition.sql).
-- New tables: nothing existing is locked or rewritten.
CREATE TABLE nifi_ops.source_pool (
    pool_name            varchar(100) PRIMARY KEY,
    max_running          integer      NOT NULL CONSTRAINT ck_source_pool_max_running CHECK (max_running >= 0),
    -- what a refused claim is told to wait before it tries again
    retry_after_seconds  integer      NOT NULL DEFAULT 30
                                      CONSTRAINT ck_source_pool_retry_after CHECK (retry_after_seconds BETWEEN 1 AND 3600),
    created_at           timestamptz  NOT NULL DEFAULT clock_timestamp(),
    updated_at           timestamptz  NOT NULL DEFAULT clock_timestamp(),
    updated_by           varchar(200) NOT NULL
);

-- A job is in at most one pool; a job in none is not limited.
CREATE TABLE nifi_ops.source_pool_job (
    job_key      varchar(200) PRIMARY KEY,
    pool_name    varchar(100) NOT NULL REFERENCES nifi_ops.source_pool (pool_name),
    assigned_at  timestamptz  NOT NULL DEFAULT clock_timestamp(),
    assigned_by  varchar(200) NOT NULL
);
CREATE INDEX ix_source_pool_job_pool ON nifi_ops.source_pool_job (pool_name);

