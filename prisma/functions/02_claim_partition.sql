-- claimPartition in one statement, one round trip (src/domain/partitions/claim-partition.ts calls it).
-- Lock order everywhere: partition rows → run row → file rows → dispatch rows.

-- claimPartition (ref §3.6). Refusals are results (claimed = false), never errors.
CREATE OR REPLACE FUNCTION nifi_ops.claim_partition(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_worker_node text, p_actor text
) RETURNS TABLE (outcome text, claimed boolean, run_status text, partition_status text, attempt integer)
LANGUAGE plpgsql AS $$
DECLARE
    part nifi_ops.load_partition%ROWTYPE;
    current_run_status text;
    -- the lists of the same names in src/domain/states.ts (src/domain/states.test.ts holds them equal)
    claimable_partition_statuses CONSTANT text[] := ARRAY['PENDING', 'RETRY'];
    ackable_dispatch_statuses CONSTANT text[] := ARRAY['PENDING', 'SENT', 'DEAD'];
BEGIN
    SELECT * INTO part FROM nifi_ops.load_partition
     WHERE run_id = p_run_id AND partition_id = p_partition_id FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM nifi_ops.load_run WHERE run_id = p_run_id) THEN
            RETURN QUERY SELECT 'PARTITION_NOT_FOUND', false, NULL::text, NULL::text, NULL::integer;
        ELSE
            RETURN QUERY SELECT 'RUN_NOT_FOUND', false, NULL::text, NULL::text, NULL::integer;
        END IF;
        RETURN;
    END IF;
    PERFORM nifi_ops.fault_point('claim_partition');

    -- FOR SHARE: claims of one run do not queue behind each other, but a run transition (which takes
    -- the row exclusively) cannot interleave with a claim that saw the run EXTRACTING.
    SELECT status INTO current_run_status FROM nifi_ops.load_run WHERE run_id = p_run_id FOR SHARE;

    IF current_run_status <> 'EXTRACTING' THEN
        RETURN QUERY SELECT 'OK', false, current_run_status, part.status::text, part.attempt_count;
        RETURN;
    END IF;

    IF part.status = 'RUNNING' AND part.claim_token = p_claim_token THEN
        -- the same worker retrying after a lost response
        UPDATE nifi_ops.load_partition SET heartbeat_at = clock_timestamp()
         WHERE run_id = p_run_id AND partition_id = p_partition_id;
        RETURN QUERY SELECT 'OK', true, current_run_status, part.status::text, part.attempt_count;
        RETURN;
    END IF;

    IF part.status <> ALL (claimable_partition_statuses) THEN
        RETURN QUERY SELECT 'OK', false, current_run_status, part.status::text, part.attempt_count;
        RETURN;
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

    RETURN QUERY SELECT 'OK', true, current_run_status, 'RUNNING'::text, part.attempt_count + 1;
END
$$;
