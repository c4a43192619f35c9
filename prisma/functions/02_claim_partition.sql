-- claimPartition in one statement, one round trip (src/domain/partitions/claim-partition.ts calls
-- claim_partition_within_pool).
-- Lock order everywhere: partition rows → run row → source pool row → file rows → dispatch rows.

-- claimPartition (ref §3.6). Refusals are results (claimed = false), never errors. A job in a source pool
-- (README "Source pools") is admitted only while its pool has fewer RUNNING partitions than its limit: outcome
-- POOL_FULL, with the pool and the seconds to wait, otherwise. The pool's row stays locked from the count to the
-- commit, so claims of one pool are admitted one after the other and never over the limit.
CREATE OR REPLACE FUNCTION nifi_ops.claim_partition_within_pool(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_worker_node text, p_actor text
) RETURNS TABLE (outcome text, claimed boolean, run_status text, partition_status text, attempt integer,
                 pool_name text, retry_after_seconds integer)
LANGUAGE plpgsql AS $$
DECLARE
    part nifi_ops.load_partition%ROWTYPE;
    current_run_status text;
    run_job_key text;
    pool nifi_ops.source_pool%ROWTYPE;
    pool_running integer;
    -- the lists of the same names in src/domain/states.ts (src/domain/states.test.ts holds them equal)
    claimable_partition_statuses CONSTANT text[] := ARRAY['PENDING', 'RETRY'];
    ackable_dispatch_statuses CONSTANT text[] := ARRAY['PENDING', 'SENT', 'DEAD'];
BEGIN
    SELECT * INTO part FROM nifi_ops.load_partition
     WHERE run_id = p_run_id AND partition_id = p_partition_id FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM nifi_ops.load_run WHERE run_id = p_run_id) THEN
            RETURN QUERY SELECT 'PARTITION_NOT_FOUND', false, NULL::text, NULL::text, NULL::integer, NULL::text, NULL::integer;
        ELSE
            RETURN QUERY SELECT 'RUN_NOT_FOUND', false, NULL::text, NULL::text, NULL::integer, NULL::text, NULL::integer;
        END IF;
        RETURN;
    END IF;
    PERFORM nifi_ops.fault_point('claim_partition');

    -- FOR SHARE: claims of one run do not queue behind each other, but a run transition (which takes
    -- the row exclusively) cannot interleave with a claim that saw the run EXTRACTING.
    SELECT r.status, r.job_key INTO current_run_status, run_job_key FROM nifi_ops.load_run r WHERE r.run_id = p_run_id FOR SHARE;

    IF current_run_status <> 'EXTRACTING' THEN
        RETURN QUERY SELECT 'OK', false, current_run_status, part.status::text, part.attempt_count, NULL::text, NULL::integer;
        RETURN;
    END IF;

    IF part.status = 'RUNNING' AND part.claim_token = p_claim_token THEN
        -- the same worker retrying after a lost response
        UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp()
         WHERE run_id = p_run_id AND partition_id = p_partition_id;
        RETURN QUERY SELECT 'OK', true, current_run_status, part.status::text, part.attempt_count, NULL::text, NULL::integer;
        RETURN;
    END IF;

    IF part.status <> ALL (claimable_partition_statuses) THEN
        RETURN QUERY SELECT 'OK', false, current_run_status, part.status::text, part.attempt_count, NULL::text, NULL::integer;
        RETURN;
    END IF;

    SELECT sp.* INTO pool FROM nifi_ops.source_pool sp
      JOIN nifi_ops.source_pool_job j ON j.pool_name = sp.pool_name
     WHERE j.job_key = run_job_key
       FOR UPDATE OF sp;
    IF FOUND THEN
        PERFORM nifi_ops.fault_point('claim_partition_pool');
        -- a new statement, a new snapshot: it sees every claim of the pool committed before this one got the lock
        SELECT count(*) INTO pool_running FROM nifi_ops.load_partition p
          JOIN nifi_ops.load_run r ON r.run_id = p.run_id
          JOIN nifi_ops.source_pool_job j ON j.job_key = r.job_key
         WHERE p.status = 'RUNNING' AND j.pool_name = pool.pool_name;
        IF pool_running >= pool.max_running THEN
            RETURN QUERY SELECT 'POOL_FULL', false, current_run_status, part.status::text, part.attempt_count,
                pool.pool_name::text, pool.retry_after_seconds;
            RETURN;
        END IF;
    END IF;

    UPDATE nifi_ops.load_partition
       SET status = 'RUNNING', attempt_count = attempt_count + 1, claim_token = p_claim_token,
           worker_node = p_worker_node, claimed_by = p_actor, started_at = COALESCE(started_at, clock_timestamp()),
           heartbeat_at = clock_timestamp(), error_code = NULL, error_message = NULL
     WHERE run_id = p_run_id AND partition_id = p_partition_id;

    IF part.status = 'RETRY' THEN
        -- claiming a reissued partition is the ACK of every reissue call for it
        UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp()
         WHERE run_id = p_run_id AND partition_id = p_partition_id
           AND dispatch_type = 'REISSUE_PARTITION' AND status = ANY (ackable_dispatch_statuses);
    END IF;

    PERFORM nifi_ops.record_api_event('INFO', 'PARTITION_STARTED', p_run_id, p_partition_id, p_actor,
        p_details => jsonb_build_object('workerNode', p_worker_node, 'attempt', part.attempt_count + 1),
        p_attempt_no => part.attempt_count + 1);

    RETURN QUERY SELECT 'OK', true, current_run_status, 'RUNNING'::text, part.attempt_count + 1, pool.pool_name::text, NULL::integer;
END
$$;

-- The previous release's call, with its result type (a prepared `SELECT *` of a running process must keep its
-- columns through a rolling upgrade); its claims respect the pools too, refused as claimed = false.
CREATE OR REPLACE FUNCTION nifi_ops.claim_partition(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_worker_node text, p_actor text
) RETURNS TABLE (outcome text, claimed boolean, run_status text, partition_status text, attempt integer)
LANGUAGE sql AS $$
    SELECT c.outcome, c.claimed, c.run_status, c.partition_status, c.attempt
      FROM nifi_ops.claim_partition_within_pool(p_run_id, p_partition_id, p_claim_token, p_worker_node, p_actor) c
$$;
