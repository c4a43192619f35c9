-- Orchestrator formats for a gate's receiver (issue 30): its GATE_READY calls may be an Airflow 3 asset event or a
-- Dagster asset materialization instead of Load Control's own body. notify_format NULL is that own (GENERIC)
-- body, as every gate defined before this migration has; notify_asset names the orchestrator's asset: Airflow's
-- numeric asset id, or Dagster's asset key with "/" between its parts.
--
-- Online-safe: nullable columns without defaults (catalog changes only), the constraint NOT VALID, validated by
-- 0033. The lock timeout keeps the ALTERs from queueing behind a long transaction.
SET LOCAL lock_timeout = '5s';

ALTER TABLE nifi_ops.gate
    ADD COLUMN notify_format varchar(10),
    ADD COLUMN notify_asset varchar(500);
ALTER TABLE nifi_ops.gate ADD CONSTRAINT ck_gate_notify_format CHECK (
    (notify_format IS NULL AND notify_asset IS NULL)
    OR (notify_format = 'AIRFLOW' AND notify_url IS NOT NULL AND notify_asset ~ '^[1-9][0-9]{0,14}$')
    OR (notify_format = 'DAGSTER' AND notify_url IS NOT NULL AND notify_asset ~ '^[A-Za-z0-9_]{1,100}(/[A-Za-z0-9_]{1,100}){0,9}$')
) NOT VALID;
