-- Events written by the API's SQL functions (load_event). Applied by the migrate runner whenever this file
-- changes (src/db/migrate.ts): every statement here can run again.

-- Every API-side event row: job and business keys come from the run, process group is the API's.
CREATE OR REPLACE FUNCTION nifi_ops.record_api_event(
    p_level text, p_name text, p_run_id uuid, p_partition_id text, p_actor text,
    p_row_count bigint DEFAULT NULL, p_error_code text DEFAULT NULL, p_message text DEFAULT NULL,
    p_details jsonb DEFAULT '{}'::jsonb, p_error_class text DEFAULT NULL, p_attempt_no integer DEFAULT NULL
) RETURNS uuid LANGUAGE sql AS $$
    INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id, job_key, business_key,
        partition_id, process_group, processor_name, attempt_no, row_count, error_class, error_code, message,
        details, actor)
    SELECT gen_random_uuid(), p_level, p_name, p_run_id, r.job_key, r.business_key, p_partition_id,
        'LOAD_CONTROL_API', lower(p_name), p_attempt_no, p_row_count, p_error_class, p_error_code,
        NULLIF(left(p_message, 2000), ''), COALESCE(p_details, '{}'::jsonb), p_actor
    FROM (SELECT 1) one LEFT JOIN nifi_ops.load_run r ON r.run_id = p_run_id
    RETURNING event_id
$$;

-- Sets who the current transaction acts for (load_event's actor_auth, actor_issuer and actor_subject take it as
-- their defaults) and returns p_actor, so a single-statement hot path sets it in the argument list of its call:
-- arguments are evaluated before the function they are passed to runs.
CREATE OR REPLACE FUNCTION nifi_ops.acting_as(p_actor text, p_auth text, p_issuer text, p_subject text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM set_config('load_control.actor_auth', COALESCE(p_auth, ''), true),
            set_config('load_control.actor_issuer', COALESCE(p_issuer, ''), true),
            set_config('load_control.actor_subject', COALESCE(p_subject, ''), true);
    RETURN p_actor;
END
$$;

-- The same for a batch of one caller's calls (report_chunks' p_actors).
CREATE OR REPLACE FUNCTION nifi_ops.acting_as_all(p_actors text[], p_auth text, p_issuer text, p_subject text)
RETURNS text[] LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM nifi_ops.acting_as(NULL::text, p_auth, p_issuer, p_subject);
    RETURN p_actors;
END
$$;
