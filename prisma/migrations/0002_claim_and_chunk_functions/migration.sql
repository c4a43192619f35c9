-- The two hot paths of extraction, each one SQL function so that a call is one round trip.
-- Lock order everywhere: partition rows → run row → file rows → dispatch rows.

-- Every API-side event row: job and business keys come from the run, process group is the API's.
CREATE FUNCTION nifi_ops.record_api_event(
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

-- claimPartition (ref §3.6). Refusals are results (claimed = false), never errors.
CREATE FUNCTION nifi_ops.claim_partition(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_worker_node text, p_actor text
) RETURNS TABLE (outcome text, claimed boolean, run_status text, partition_status text, attempt integer)
LANGUAGE plpgsql AS $$
DECLARE
    part nifi_ops.load_partition%ROWTYPE;
    current_run_status text;
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

    IF part.status NOT IN ('PENDING', 'RETRY') THEN
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
           AND dispatch_type = 'REISSUE_PARTITION' AND status IN ('PENDING', 'SENT', 'DEAD');
    END IF;

    PERFORM nifi_ops.record_api_event('INFO', 'PARTITION_STARTED', p_run_id, p_partition_id, p_actor,
        p_details => jsonb_build_object('workerNode', p_worker_node, 'attempt', part.attempt_count + 1),
        p_attempt_no => part.attempt_count + 1);

    RETURN QUERY SELECT 'OK', true, current_run_status, 'RUNNING'::text, part.attempt_count + 1;
END
$$;

-- reportChunk (ref §3.7), with constant cost: the partition's counters move by the delta of the upsert,
-- and the run row is touched only when the partition's outcome changes. The run-row UPDATE increments
-- the success counter and returns the new totals; run-row updates serialise, so exactly one report can
-- see "every partition succeeded" and complete extraction (and write the VALIDATE_RUN outbox row).
CREATE FUNCTION nifi_ops.report_chunk(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_chunk_index integer, p_chunk_count integer,
    p_fragment_identifier text, p_hdfs_path text, p_record_count bigint, p_byte_count bigint, p_actor text
) RETURNS TABLE (outcome text, partition_status text, run_status text, received_chunks integer,
                 validation_scheduled boolean, partition_outcome text)
LANGUAGE plpgsql AS $$
DECLARE
    part nifi_ops.load_partition%ROWTYPE;
    run_row record;
    old_file nifi_ops.load_file%ROWTYPE;
    has_old boolean;
    was_written boolean;
    changed boolean;
    others integer;
    told_count integer;
    mismatches integer;
    new_received integer;
    new_rows bigint;
    new_bytes bigint;
    totals record;
    detail text;
BEGIN
    SELECT * INTO part FROM nifi_ops.load_partition
     WHERE run_id = p_run_id AND partition_id = p_partition_id FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM nifi_ops.load_run WHERE run_id = p_run_id) THEN
            RETURN QUERY SELECT 'PARTITION_NOT_FOUND', NULL::text, NULL::text, NULL::integer, false, NULL::text;
        ELSE
            RETURN QUERY SELECT 'RUN_NOT_FOUND', NULL::text, NULL::text, NULL::integer, false, NULL::text;
        END IF;
        RETURN;
    END IF;

    -- unlocked read: the run row is locked only below, when this report changes the partition's outcome
    SELECT status, hdfs_run_path INTO run_row FROM nifi_ops.load_run WHERE run_id = p_run_id;

    IF part.claim_token IS DISTINCT FROM p_claim_token THEN
        RETURN QUERY SELECT 'CLAIM_MISMATCH', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text;
        RETURN;
    END IF;

    IF run_row.hdfs_run_path IS NULL OR NOT starts_with(p_hdfs_path, run_row.hdfs_run_path || '/') THEN
        RETURN QUERY SELECT 'HDFS_PATH_OUTSIDE_RUN', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text;
        RETURN;
    END IF;

    SELECT * INTO old_file FROM nifi_ops.load_file
     WHERE run_id = p_run_id AND partition_id = p_partition_id AND chunk_index = p_chunk_index;
    has_old := FOUND;
    was_written := has_old AND old_file.status = 'WRITTEN';
    changed := NOT has_old
        OR old_file.fragment_count <> p_chunk_count OR old_file.hdfs_path <> p_hdfs_path
        OR old_file.record_count <> p_record_count OR old_file.byte_count IS DISTINCT FROM p_byte_count;

    IF part.status = 'SUCCESS' AND changed THEN
        RETURN QUERY SELECT 'CHUNK_CONFLICT', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text;
        RETURN;
    END IF;

    IF changed OR NOT was_written THEN
        INSERT INTO nifi_ops.load_file AS f (run_id, partition_id, chunk_index, fragment_identifier, fragment_count,
                hdfs_path, record_count, byte_count, status, reported_by)
        VALUES (p_run_id, p_partition_id, p_chunk_index, p_fragment_identifier, p_chunk_count, p_hdfs_path,
                p_record_count, p_byte_count, 'WRITTEN', p_actor)
        ON CONFLICT (run_id, partition_id, chunk_index) DO UPDATE
           SET fragment_identifier = EXCLUDED.fragment_identifier, fragment_count = EXCLUDED.fragment_count,
               hdfs_path = EXCLUDED.hdfs_path, record_count = EXCLUDED.record_count,
               byte_count = EXCLUDED.byte_count, status = 'WRITTEN', updated_at = clock_timestamp(),
               reported_by = EXCLUDED.reported_by;

        -- remove the old row's contribution, add the new one; the first chunk tells the chunk count
        others := part.received_chunks - CASE WHEN was_written THEN 1 ELSE 0 END;
        told_count := CASE WHEN others = 0 THEN p_chunk_count ELSE part.reported_chunk_count END;
        mismatches := CASE WHEN others = 0 THEN 0
                           ELSE part.chunk_count_mismatches
                                - CASE WHEN was_written AND old_file.fragment_count <> told_count THEN 1 ELSE 0 END
                      END
                      + CASE WHEN p_chunk_count <> told_count THEN 1 ELSE 0 END;
        new_received := others + 1;
        new_rows := part.received_rows - CASE WHEN was_written THEN old_file.record_count ELSE 0 END + p_record_count;
        new_bytes := part.received_bytes - CASE WHEN was_written THEN COALESCE(old_file.byte_count, 0) ELSE 0 END
                     + COALESCE(p_byte_count, 0);
    ELSE
        told_count := part.reported_chunk_count;
        mismatches := part.chunk_count_mismatches;
        new_received := part.received_chunks;
        new_rows := part.received_rows;
        new_bytes := part.received_bytes;
    END IF;

    -- record only: the run or the partition has moved on, or chunks are still missing
    IF run_row.status <> 'EXTRACTING' OR part.status <> 'RUNNING' OR new_received < p_chunk_count THEN
        UPDATE nifi_ops.load_partition
           SET received_chunks = new_received, received_rows = new_rows, received_bytes = new_bytes,
               reported_chunk_count = told_count, chunk_count_mismatches = mismatches, heartbeat_at = clock_timestamp()
         WHERE run_id = p_run_id AND partition_id = p_partition_id;
        RETURN QUERY SELECT CASE WHEN run_row.status = 'EXTRACTING' THEN 'PROGRESS' ELSE 'IGNORED' END,
            part.status::text, run_row.status::text, new_received, false, NULL::text;
        RETURN;
    END IF;

    -- Every WRITTEN chunk told the same count n, indexes are unique and below n, and there are n of them:
    -- so they are exactly 0..n-1.
    IF new_received = told_count AND mismatches = 0 AND new_rows = part.expected_row_count THEN
        UPDATE nifi_ops.load_partition
           SET status = 'SUCCESS', received_chunks = new_received, received_rows = new_rows, received_bytes = new_bytes,
               reported_chunk_count = told_count, chunk_count_mismatches = 0, actual_row_count = new_rows,
               file_count = new_received, fragment_count = new_received, byte_count = new_bytes,
               completed_at = clock_timestamp(), heartbeat_at = clock_timestamp()
         WHERE run_id = p_run_id AND partition_id = p_partition_id;
        PERFORM nifi_ops.record_api_event('INFO', 'PARTITION_SUCCESS', p_run_id, p_partition_id, p_actor,
            p_row_count => new_rows, p_details => jsonb_build_object('files', new_received, 'bytes', new_bytes));

        UPDATE nifi_ops.load_run
           SET success_partition_count = success_partition_count + 1, extracted_count = extracted_count + new_rows
         WHERE run_id = p_run_id
        RETURNING status, success_partition_count, expected_partition_count, extracted_count, source_count INTO totals;

        IF totals.status = 'EXTRACTING' AND totals.success_partition_count = totals.expected_partition_count
           AND totals.extracted_count = totals.source_count THEN
            UPDATE nifi_ops.load_run
               SET status = 'EXTRACTED_VALIDATED', extract_completed_at = clock_timestamp(),
                   heartbeat_at = clock_timestamp(), version_no = version_no + 1
             WHERE run_id = p_run_id AND status = 'EXTRACTING';
            INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type)
            VALUES (gen_random_uuid(), p_run_id, 'VALIDATE_RUN')
            ON CONFLICT (run_id) WHERE dispatch_type = 'VALIDATE_RUN' DO NOTHING;
            PERFORM nifi_ops.record_api_event('INFO', 'EXTRACT_VALIDATED', p_run_id, NULL, p_actor,
                p_row_count => totals.extracted_count);
            RETURN QUERY SELECT 'RUN_COMPLETE', 'SUCCESS'::text, 'EXTRACTED_VALIDATED'::text, new_received, true, 'SUCCESS'::text;
            RETURN;
        END IF;
        RETURN QUERY SELECT 'PARTITION_SUCCESS', 'SUCCESS'::text, totals.status::text, new_received, false, 'SUCCESS'::text;
        RETURN;
    END IF;

    detail := format('files=%s chunkCount=%s chunkCountMismatches=%s rows=%s expected=%s',
                     new_received, p_chunk_count, mismatches, new_rows, part.expected_row_count);
    UPDATE nifi_ops.load_partition
       SET status = 'FAILED', received_chunks = new_received, received_rows = new_rows, received_bytes = new_bytes,
           reported_chunk_count = told_count, chunk_count_mismatches = mismatches, completed_at = clock_timestamp(),
           heartbeat_at = clock_timestamp(), error_code = 'ROW_COUNT_MISMATCH', error_message = detail
     WHERE run_id = p_run_id AND partition_id = p_partition_id;
    PERFORM nifi_ops.record_api_event('ERROR', 'PARTITION_FAILED', p_run_id, p_partition_id, p_actor,
        p_row_count => new_rows, p_error_code => 'ROW_COUNT_MISMATCH', p_message => detail);

    UPDATE nifi_ops.load_run SET failed_partition_count = failed_partition_count + 1
     WHERE run_id = p_run_id
    RETURNING status INTO totals;
    IF totals.status = 'EXTRACTING' THEN
        UPDATE nifi_ops.load_run
           SET status = 'FAILED_EXTRACT', error_stage = 'PARTITION_GATE', error_code = 'ROW_COUNT_MISMATCH',
               error_message = left('partition ' || p_partition_id || ': ' || detail, 2000),
               completed_at = clock_timestamp(), heartbeat_at = clock_timestamp(), version_no = version_no + 1
         WHERE run_id = p_run_id AND status = 'EXTRACTING'
        RETURNING status INTO totals;
        PERFORM nifi_ops.record_api_event('ERROR', 'RUN_FAILED', p_run_id, p_partition_id, p_actor,
            p_error_code => 'ROW_COUNT_MISMATCH', p_message => detail,
            p_details => jsonb_build_object('stage', 'PARTITION_GATE', 'from', 'EXTRACTING', 'to', 'FAILED_EXTRACT'));
    END IF;
    RETURN QUERY SELECT 'PARTITION_FAILED', 'FAILED'::text, totals.status::text, new_received, false, 'FAILED'::text;
END
$$;
