-- The business-date gate's ledger and its decisions, top to bottom: which attempts a job has for a business date
-- (external observations and Load Control's own runs), whether a consumer is ready, and how a change of readiness
-- is recorded once — in the transaction of the attempt that changed it, whoever made the change.
--
-- Where a run's observation state can change: a new run (a new attempt, RUNNING), and every status change that
-- moves it between RUNNING, SUCCEEDED and FAILED — made by TypeScript (src/domain/transitions.ts) and by the
-- SQL functions (report_chunk's FAILED_EXTRACT). External attempts change with recordObservation. Constraint
-- triggers on load_run and gate_observation cover them all, so no code path can forget to decide; the ones on
-- load_run fire only when the status itself changed, so a chunk report's counter updates of the run row pay
-- nothing. They are deferred: the decision is taken at COMMIT, after every row lock the transaction takes, so the
-- gate's locks always come last (partition → run → file → dispatch → gate) and a transaction that moves a run
-- several times decides once, on its final state.
--
-- Two transactions deciding the same consumer + date serialise on lock_gate_readiness; the readiness statement
-- runs after the lock, with a snapshot of its own (READ COMMITTED), so the later of two racing transactions sees
-- what the earlier committed: the last observation racing a newer attempt gives at most one ready decision, and
-- the last one recorded is what the ledger says. Readers of the gate's definition (the triggers) share a lock
-- that defineGate takes exclusively, so a gate defined while an attempt commits is decided by one of the two.
--
-- A decision NOTIFYs lc_readiness_changed (and load_dispatch, for a GATE_READY call) from here: PostgreSQL delivers
-- it only once the deciding transaction committed, and a decision is made in SQL that its TypeScript caller never
-- sees. Only the rare transaction that changes a decision pays NOTIFY's commit cost; a claim or a chunk report
-- never does (a report's FAILED_EXTRACT ends an attempt that already kept its date from being ready).
--
-- Applied by the migrate runner whenever this file changes (src/db/migrate.ts): every statement here can run again.
-- Re-creating the constraint triggers (CREATE OR REPLACE does not exist for them) locks load_run and gate_observation
-- for a moment, under the runner's lock timeout.

-- The business date a business key names: a calendar date written YYYY-MM-DD (as src/domain/gate/business-date.ts
-- decides), else NULL. Never an error, so a trigger can ask about any key.
CREATE OR REPLACE FUNCTION nifi_ops.calendar_date(p_text text) RETURNS date
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    y integer;
    m integer;
    d integer;
BEGIN
    -- one test at a time: make_date raises on what the test before it rules out
    IF p_text IS NULL OR p_text !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' THEN
        RETURN NULL;
    END IF;
    y := substr(p_text, 1, 4)::integer;
    m := substr(p_text, 6, 2)::integer;
    d := substr(p_text, 9, 2)::integer;
    IF y < 1 OR m < 1 OR m > 12 OR d < 1 THEN
        RETURN NULL;
    END IF;
    IF d > extract(day FROM make_date(y, m, 1) + interval '1 month' - interval '1 day') THEN
        RETURN NULL;
    END IF;
    RETURN make_date(y, m, d);
END
$$;

-- How a run status reads as an observation state (src/domain/gate/observation-states.ts): SUCCESS succeeded,
-- the failed statuses (states.ts FAILED_RUN_STATUSES, held equal by src/domain/states.test.ts) failed, every
-- active status (PUBLISHED included: target validation is still to come) is running.
CREATE OR REPLACE FUNCTION nifi_ops.run_observation_state(p_status text, OUT observation_state text)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    failed_run_statuses CONSTANT text[] := ARRAY['FAILED_MANIFEST', 'FAILED_EXTRACT', 'FAILED_STAGE_VALIDATION',
        'FAILED_PUBLISH', 'FAILED_TARGET_VALIDATION', 'FAILED_SNAPSHOT_EXPIRED', 'TIMED_OUT', 'CANCELLED'];
BEGIN
    observation_state := CASE WHEN p_status = 'SUCCESS' THEN 'SUCCEEDED'
                              WHEN p_status = ANY (failed_run_statuses) THEN 'FAILED'
                              ELSE 'RUNNING' END;
END
$$;

-- Every attempt of the jobs p_job_ids for one business date, from both sources. A run is an attempt of its job
-- for the date its business key names; attempt n is the job's n-th run for that key in start order.
CREATE OR REPLACE FUNCTION nifi_ops.gate_attempts(p_job_ids text[], p_business_date date)
RETURNS TABLE (job_id text, attempt integer, run_id text, state text, source text, started_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT o.job_id::text, o.attempt, o.run_id::text, o.state::text, 'EXTERNAL', o.started_at
      FROM nifi_ops.gate_observation o
     WHERE o.job_id = ANY (p_job_ids) AND o.business_date = p_business_date
    UNION ALL
    SELECT r.job_key::text, (row_number() OVER (PARTITION BY r.job_key ORDER BY r.started_at, r.run_id))::integer,
           r.run_id::text, nifi_ops.run_observation_state(r.status), 'LOAD_CONTROL', r.started_at
      FROM nifi_ops.load_run r
     WHERE r.job_key = ANY (p_job_ids) AND r.business_key = to_char(p_business_date, 'YYYY-MM-DD')
$$;

-- A consumer's readiness for a business date, in one statement: each required job with its greatest attempt for
-- the date (no row of attempt columns when it has none). The greatest attempt alone decides: a newer RUNNING or
-- FAILED attempt hides an older success. A consumer without a gate has no rows.
CREATE OR REPLACE FUNCTION nifi_ops.gate_readiness(p_consumer text, p_business_date date)
RETURNS TABLE (job_id text, attempt integer, run_id text, state text, source text, started_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH required AS (
        SELECT q.job_id::text FROM nifi_ops.gate_required_job q WHERE q.consumer = p_consumer
    ), latest AS (
        -- the same job id never has attempts from both sources (recordObservation refuses Load Control jobs);
        -- the source only makes the order total
        SELECT DISTINCT ON (a.job_id) a.*
          FROM nifi_ops.gate_attempts(ARRAY(SELECT job_id FROM required), p_business_date) a
         ORDER BY a.job_id, a.attempt DESC, a.source
    )
    SELECT q.job_id, l.attempt, l.run_id, l.state, l.source, l.started_at
      FROM required q LEFT JOIN latest l USING (job_id)
     ORDER BY q.job_id
$$;

-- The gate's transaction-scoped advisory locks (class 'GATE'; readiness decisions have a class of their own, so
-- a hash of consumer + date collides with no other lock). A collision only makes two keys wait for each other.
CREATE OR REPLACE FUNCTION nifi_ops.lock_gate_definitions(p_exclusive boolean) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_exclusive THEN
        PERFORM pg_advisory_xact_lock(1195463749, 0);
    ELSE
        PERFORM pg_advisory_xact_lock_shared(1195463749, 0);
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION nifi_ops.lock_gate_publication(p_consumer text, p_business_date date) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1195463749, hashtext(p_consumer || '|' || to_char(p_business_date, 'YYYY-MM-DD')))
$$;

CREATE OR REPLACE FUNCTION nifi_ops.lock_gate_readiness(p_consumer text, p_business_date date) RETURNS void
LANGUAGE sql AS $$
    SELECT pg_advisory_xact_lock(1380271193, hashtext(p_consumer || '|' || to_char(p_business_date, 'YYYY-MM-DD')))
$$;

-- The backfill started with pushReadiness false, not yet released, whose run made a decision (its cause) or stands in
-- its evidence: such a decision is recorded but neither called nor announced. NULL when no backfill holds it.
CREATE OR REPLACE FUNCTION nifi_ops.backfill_holding_readiness(p_cause jsonb, p_evidence jsonb) RETURNS uuid
LANGUAGE sql STABLE AS $$
    SELECT b.backfill_id
      FROM nifi_ops.load_run r
      JOIN nifi_ops.load_backfill b ON b.backfill_id = r.backfill_id
     WHERE NOT b.push_readiness AND b.readiness_released_at IS NULL
       -- an external attempt's runId is any text: only Load Control's may reach the cast. PostgreSQL 18 plans a SQL
       -- function's body with its arguments as constants and folds the cause's cast before the WHERE can drop it
       -- (recordObservation answered 500 for run id 'run-upstream-…'); the CASE's false condition folds first
       AND r.run_id = ANY (ARRAY(
           SELECT CASE WHEN p_cause ->> 'source' = 'LOAD_CONTROL' THEN (p_cause ->> 'runId')::uuid END
            WHERE p_cause ->> 'source' = 'LOAD_CONTROL'
           UNION ALL
           SELECT CASE WHEN e ->> 'source' = 'LOAD_CONTROL' THEN (e ->> 'runId')::uuid END
             FROM jsonb_array_elements(p_evidence) e WHERE e ->> 'source' = 'LOAD_CONTROL'))
     ORDER BY b.created_at, b.backfill_id
     LIMIT 1
$$;

-- Decides a consumer's readiness for a business date: when it differs from the latest recorded decision — `ready`
-- changed, or the evidence of a ready date (a newer successful attempt) — records the next version, and when the
-- gate has a receiver, its GATE_READY call in the outbox — of a not-ready decision only for a receiver in Load
-- Control's own format (an Airflow asset event or a Dagster materialization says the asset was updated, and
-- neither product can take one back). A date never ready records nothing. Returns the new version, or NULL when
-- nothing changed.
CREATE OR REPLACE FUNCTION nifi_ops.decide_readiness(p_consumer text, p_business_date date, p_cause jsonb) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    now_ready boolean;
    now_evidence jsonb;
    recorded record;
    next_version integer;
    receiver text;
    receiver_format text;
    held_by uuid;
BEGIN
    PERFORM nifi_ops.lock_gate_readiness(p_consumer, p_business_date);
    -- after the lock: this statement's snapshot sees what an earlier holder of the lock committed
    SELECT COALESCE(bool_and(COALESCE(r.state = 'SUCCEEDED', false)), false),
           COALESCE(jsonb_agg(jsonb_build_object('jobId', r.job_id, 'attempt', r.attempt, 'runId', r.run_id,
                                                 'source', r.source) ORDER BY r.job_id), '[]'::jsonb)
      INTO now_ready, now_evidence
      FROM nifi_ops.gate_readiness(p_consumer, p_business_date) r;
    IF NOT now_ready THEN
        now_evidence := '[]'::jsonb;
    END IF;

    SELECT d.version, d.ready, d.evidence INTO recorded
      FROM nifi_ops.gate_readiness_decision d
     WHERE d.consumer = p_consumer AND d.business_date = p_business_date
     ORDER BY d.version DESC LIMIT 1;
    IF NOT FOUND THEN
        IF NOT now_ready THEN
            RETURN NULL;
        END IF;
        next_version := 1;
    ELSIF recorded.ready = now_ready AND recorded.evidence = now_evidence THEN
        RETURN NULL;
    ELSE
        next_version := recorded.version + 1;
    END IF;

    held_by := nifi_ops.backfill_holding_readiness(p_cause, now_evidence);
    INSERT INTO nifi_ops.gate_readiness_decision (consumer, business_date, version, ready, evidence, cause, held_by_backfill)
    VALUES (p_consumer, p_business_date, next_version, now_ready, now_evidence, p_cause, held_by);
    IF held_by IS NOT NULL THEN
        -- recorded, not pushed: release_backfill_readiness pushes it when the operator releases the backfill
        RETURN next_version;
    END IF;
    SELECT g.notify_url, g.notify_format INTO receiver, receiver_format FROM nifi_ops.gate g WHERE g.consumer = p_consumer;
    IF receiver IS NOT NULL AND (now_ready OR receiver_format IS NULL) THEN
        INSERT INTO nifi_ops.load_dispatch (dispatch_id, dispatch_type, consumer, business_date, readiness_version)
        VALUES (gen_random_uuid(), 'GATE_READY', p_consumer, p_business_date, next_version);
        PERFORM pg_notify('load_dispatch', p_consumer);
    END IF;
    PERFORM pg_notify('lc_readiness_changed', p_consumer || ' ' || to_char(p_business_date, 'YYYY-MM-DD'));
    RETURN next_version;
END
$$;

-- An operator released a backfill's held readiness (releaseBackfillReadiness): for each consumer and business date it
-- held, the current decision — when this backfill still holds it (a later decision was pushed, or is another
-- backfill's to release) — gets the GATE_READY call and the readinessChanged notice it did not get, once: the
-- unique index on GATE_READY calls keeps a second release from calling again. Returns how many were pushed.
CREATE OR REPLACE FUNCTION nifi_ops.release_backfill_readiness(p_backfill_id uuid) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    held record;
    current record;
    receiver text;
    receiver_format text;
    pushed integer := 0;
BEGIN
    FOR held IN
        SELECT DISTINCT d.consumer, d.business_date FROM nifi_ops.gate_readiness_decision d
         WHERE d.held_by_backfill = p_backfill_id ORDER BY d.consumer, d.business_date
    LOOP
        PERFORM nifi_ops.lock_gate_readiness(held.consumer, held.business_date);
        SELECT d.version, d.ready, d.held_by_backfill INTO current FROM nifi_ops.gate_readiness_decision d
         WHERE d.consumer = held.consumer AND d.business_date = held.business_date
         ORDER BY d.version DESC LIMIT 1;
        CONTINUE WHEN current.held_by_backfill IS DISTINCT FROM p_backfill_id;
        -- as decide_readiness: an orchestrator's receiver is called with ready decisions only
        SELECT g.notify_url, g.notify_format INTO receiver, receiver_format FROM nifi_ops.gate g WHERE g.consumer = held.consumer;
        IF receiver IS NOT NULL AND (current.ready OR receiver_format IS NULL) THEN
            INSERT INTO nifi_ops.load_dispatch (dispatch_id, dispatch_type, consumer, business_date, readiness_version)
            VALUES (gen_random_uuid(), 'GATE_READY', held.consumer, held.business_date, current.version)
            ON CONFLICT DO NOTHING;
            PERFORM pg_notify('load_dispatch', held.consumer);
        END IF;
        PERFORM pg_notify('lc_readiness_changed', held.consumer || ' ' || to_char(held.business_date, 'YYYY-MM-DD'));
        pushed := pushed + 1;
    END LOOP;
    RETURN pushed;
END
$$;

-- An attempt of a job for a business date changed: decide every gate that requires the job, in consumer order.
CREATE OR REPLACE FUNCTION nifi_ops.decide_readiness_of_job(p_job_id text, p_business_date date, p_cause jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    required record;
BEGIN
    PERFORM nifi_ops.lock_gate_definitions(false);
    FOR required IN
        SELECT q.consumer FROM nifi_ops.gate_required_job q WHERE q.job_id = p_job_id ORDER BY q.consumer
    LOOP
        PERFORM nifi_ops.decide_readiness(required.consumer, p_business_date, p_cause);
    END LOOP;
END
$$;

-- A run was created (a new attempt) or its status changed between observation states.
CREATE OR REPLACE FUNCTION nifi_ops.gate_run_attempt_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    business_date date;
BEGIN
    IF TG_OP = 'UPDATE' AND nifi_ops.run_observation_state(OLD.status) = nifi_ops.run_observation_state(NEW.status) THEN
        RETURN NULL;
    END IF;
    business_date := nifi_ops.calendar_date(NEW.business_key);
    IF business_date IS NOT NULL THEN
        PERFORM nifi_ops.decide_readiness_of_job(NEW.job_key, business_date,
            jsonb_build_object('source', 'LOAD_CONTROL', 'jobId', NEW.job_key, 'runId', NEW.run_id, 'runStatus', NEW.status));
    END IF;
    RETURN NULL;
END
$$;

-- An external attempt was recorded or its state changed.
CREATE OR REPLACE FUNCTION nifi_ops.gate_observation_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nifi_ops.decide_readiness_of_job(NEW.job_id, NEW.business_date,
        jsonb_build_object('source', 'EXTERNAL', 'jobId', NEW.job_id, 'attempt', NEW.attempt, 'runId', NEW.run_id,
                           'state', NEW.state));
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS tr_load_run_gate_attempt_created ON nifi_ops.load_run;
CREATE CONSTRAINT TRIGGER tr_load_run_gate_attempt_created
    AFTER INSERT ON nifi_ops.load_run
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION nifi_ops.gate_run_attempt_changed();

DROP TRIGGER IF EXISTS tr_load_run_gate_attempt_changed ON nifi_ops.load_run;
CREATE CONSTRAINT TRIGGER tr_load_run_gate_attempt_changed
    AFTER UPDATE OF status ON nifi_ops.load_run
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION nifi_ops.gate_run_attempt_changed();

DROP TRIGGER IF EXISTS tr_gate_observation_recorded ON nifi_ops.gate_observation;
CREATE CONSTRAINT TRIGGER tr_gate_observation_recorded
    AFTER INSERT ON nifi_ops.gate_observation
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION nifi_ops.gate_observation_changed();

DROP TRIGGER IF EXISTS tr_gate_observation_changed ON nifi_ops.gate_observation;
CREATE CONSTRAINT TRIGGER tr_gate_observation_changed
    AFTER UPDATE OF state ON nifi_ops.gate_observation
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (OLD.state IS DISTINCT FROM NEW.state)
    EXECUTE FUNCTION nifi_ops.gate_observation_changed();

-- An expected-by deadline: p_time on the day p_business_date + p_days_after, wall-clock time in the IANA zone
-- p_time_zone. A time the clocks skip (the hour lost when they go forward) is read with the offset before the
-- change (02:30 in New York on 2026-03-08 is 03:30 EDT); a time they repeat (the hour when they go back) is the
-- second one, in the offset after the change (01:30 in New York on 2026-11-01 is 01:30 EST).
CREATE OR REPLACE FUNCTION nifi_ops.observation_deadline(p_business_date date, p_days_after integer, p_time time,
                                                         p_time_zone text) RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT ((p_business_date + p_days_after) + p_time) AT TIME ZONE p_time_zone
$$;

-- Whether PostgreSQL knows the time zone (its tz database may lag the API's): defineGate refuses a zone it does
-- not know before anything is written, so the sweeper never meets one.
CREATE OR REPLACE FUNCTION nifi_ops.is_time_zone(p_time_zone text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM now() AT TIME ZONE p_time_zone;
    RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
    RETURN false;
END
$$;
