-- OpenLineage run events (src/domain/lineage/): the outbox rows that say a run reached a lineage moment, written
-- in the transaction of the move itself by a trigger on load_run, so no code path can forget one — TypeScript's
-- transitions (src/domain/transitions.ts) and the SQL functions' alike (report_chunk's FAILED_EXTRACT). The body of
-- an event is composed when the dispatcher sends it; the row is its identity: one per run and eventType
-- (uq_load_dispatch_lineage_event), its time the row's created_at.
--
-- Only while nifi_ops.lineage_delivery has its row (lineage.enabled): off, a move writes nothing.
--
-- Applied by the migrate runner whenever this file changes (src/db/migrate.ts): every statement here can run again.

-- The event a run's move makes, or NULL: the SQL copy of states.ts lineageEventType (held equal by states.test.ts).
CREATE OR REPLACE FUNCTION nifi_ops.lineage_event_type(p_from text, p_to text, OUT lineage_event_type text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    observation_state text := nifi_ops.run_observation_state(p_to);
BEGIN
    lineage_event_type := CASE WHEN p_from = 'PUBLISH_UNKNOWN' AND p_to = 'PUBLISHED' THEN 'RUNNING'
                               WHEN p_to = 'EXTRACTING' THEN 'START'
                               WHEN p_to = 'SUCCESS' THEN 'COMPLETE'
                               WHEN p_to = 'CANCELLED' THEN 'ABORT'
                               WHEN observation_state = 'FAILED' THEN 'FAIL' END;
END
$$;

-- A run without a START gets it with its next event: one that ended before extraction started (a refused manifest,
-- a cancel, a timeout), or was under way when lineage was turned on. OpenLineage asks for one START and one of
-- COMPLETE, ABORT, FAIL per run.
CREATE OR REPLACE FUNCTION nifi_ops.write_lineage_event() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    event_type text := nifi_ops.lineage_event_type(OLD.status, NEW.status);
BEGIN
    IF event_type IS NULL OR NOT EXISTS (SELECT 1 FROM nifi_ops.lineage_delivery) THEN
        RETURN NULL;
    END IF;
    PERFORM nifi_ops.fault_point('write_lineage_event');
    IF event_type <> 'START' THEN
        INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, lineage_event_type)
        VALUES (gen_random_uuid(), NEW.run_id, 'LINEAGE_EVENT', 'START')
        ON CONFLICT DO NOTHING;
    END IF;
    INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type, lineage_event_type)
    VALUES (gen_random_uuid(), NEW.run_id, 'LINEAGE_EVENT', event_type)
    ON CONFLICT DO NOTHING;
    PERFORM pg_notify('load_dispatch', NEW.run_id::text);
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER tr_load_run_lineage_event
    AFTER UPDATE OF status ON nifi_ops.load_run
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION nifi_ops.write_lineage_event();
