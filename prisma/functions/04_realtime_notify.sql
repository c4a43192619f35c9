-- Realtime: committed changes wake the API processes' listeners (src/realtime/). Payloads carry ids
-- only (NOTIFY payloads are limited to 8000 bytes and are delivered on commit); listeners re-read rows.
--
-- lc_run_changed (payload: run_id) — a run's status, cleanup or purge changed, one of its dispatches changed
--   status, its metrics were written, or an alert about it was recorded. Chunk and claim progress do not
--   notify here: NOTIFY serialises commits, so the API coalesces progress and notifies outside those
--   hot transactions (src/realtime/progress.ts). The rare hot-path statements that do change a status
--   (the report that completes or fails extraction, the claim that ACKs a reissue) notify like any other.
-- lc_alert (payload: event_id) — a WARN or ERROR event was recorded: the alert list may have changed.
--
-- PostgreSQL folds identical notifications of one transaction into one, so a transaction touching a
-- run and several of its dispatches sends one lc_run_changed for it.
--
-- Applied by the migrate runner whenever this file changes (src/db/migrate.ts): every statement here can run again.

CREATE OR REPLACE FUNCTION nifi_ops.notify_run_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- a GATE_READY call belongs to no run (its decision notifies lc_readiness_changed, 05_gate_readiness.sql)
    IF NEW.run_id IS NOT NULL THEN
        PERFORM pg_notify('lc_run_changed', NEW.run_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER tr_load_run_created_notify
    AFTER INSERT ON nifi_ops.load_run
    FOR EACH ROW EXECUTE FUNCTION nifi_ops.notify_run_changed();

-- the run-row counter updates of chunk reports (success_partition_count, extracted_count) do not notify;
-- a purge of the run's details (purged_at, src/domain/purge/) does
CREATE OR REPLACE TRIGGER tr_load_run_changed_notify
    AFTER UPDATE OF status, cleaned_at, purged_at ON nifi_ops.load_run
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.cleaned_at IS DISTINCT FROM NEW.cleaned_at
          OR OLD.purged_at IS DISTINCT FROM NEW.purged_at)
    EXECUTE FUNCTION nifi_ops.notify_run_changed();

CREATE OR REPLACE TRIGGER tr_load_dispatch_created_notify
    AFTER INSERT ON nifi_ops.load_dispatch
    FOR EACH ROW EXECUTE FUNCTION nifi_ops.notify_run_changed();

-- leases and backoff (attempt_count, next_attempt_at) do not notify; status changes do
CREATE OR REPLACE TRIGGER tr_load_dispatch_changed_notify
    AFTER UPDATE OF status ON nifi_ops.load_dispatch
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION nifi_ops.notify_run_changed();

CREATE OR REPLACE TRIGGER tr_load_validation_notify
    AFTER INSERT OR UPDATE ON nifi_ops.load_validation
    FOR EACH ROW EXECUTE FUNCTION nifi_ops.notify_run_changed();

CREATE OR REPLACE FUNCTION nifi_ops.notify_alert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('lc_alert', NEW.event_id::text);
    IF NEW.run_id IS NOT NULL THEN
        PERFORM pg_notify('lc_run_changed', NEW.run_id::text);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER tr_load_event_alert_notify
    AFTER INSERT ON nifi_ops.load_event
    FOR EACH ROW
    WHEN (NEW.event_level IN ('WARN', 'ERROR'))
    EXECUTE FUNCTION nifi_ops.notify_alert();
