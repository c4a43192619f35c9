-- Resuming a failed run, and a run's tags and NiFi flow version (issue 28, points 2 and 6).
-- Online-safe: nullable columns without defaults (catalog changes only); the indexes come concurrently in 0038.
-- The lock timeout keeps the ALTERs from queueing behind a long transaction and stalling every request behind them.
SET LOCAL lock_timeout = '5s';

-- A run's tags: a JSON object of key → value (createRun's `tags`), searched with @> (the GIN index of 0038).
-- NULL for runs created before tags existed, '{}' for a run created without any.
ALTER TABLE nifi_ops.load_run ADD COLUMN tags jsonb;
ALTER TABLE nifi_ops.load_run ADD CONSTRAINT ck_load_run_tags CHECK (tags IS NULL OR jsonb_typeof(tags) = 'object') NOT VALID;

-- The NiFi flow that ran it: its registry client, bucket, flow id and version, as PG-10 sends them.
ALTER TABLE nifi_ops.load_run
    ADD COLUMN flow_registry varchar(200),
    ADD COLUMN flow_bucket varchar(200),
    ADD COLUMN flow_id varchar(200),
    ADD COLUMN flow_version varchar(100);

-- A resumed run's partition that succeeded in an earlier attempt and was carried over: the attempt whose
-- extraction wrote its files (its load_file rows stay that run's). NULL for a partition extracted by its own run.
ALTER TABLE nifi_ops.load_partition ADD COLUMN carried_from_run_id uuid;
