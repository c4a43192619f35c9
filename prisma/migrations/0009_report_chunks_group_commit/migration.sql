-- Group commit for reportChunk: the API sends the reports that arrive while earlier ones are in flight as one
-- call of report_chunks, one statement and one commit for all of them. Each report is decided as report_chunk's
-- fast path decides it; a report the fast path does not take (a replay, a refusal, a chunk that fails its
-- partition, a run or partition that has moved on) is answered DEFERRED and sent alone through report_chunk
-- after this batch committed, as if it had arrived just after it.
--
-- Lock order: the reports are taken in (run, partition, chunk) order, and a run's row is locked once, after
-- the last partition of that run in the batch. Every batch takes its locks in that one order, and a single
-- report (partition row, then its run's row) never waits for a partition while holding a run row, so batches
-- cannot deadlock each other or single reports.

-- The run's side of partitions that have just become SUCCESS (their rows are locked by the caller): its
-- counters and, when the last one succeeded, the run's completion with its VALIDATE_RUN outbox row. Run-row
-- updates serialise, so exactly one caller can see "every partition succeeded".
CREATE FUNCTION nifi_ops.count_run_successes(
    p_run_id uuid, p_partitions integer, p_rows bigint, p_actor text,
    OUT run_status text, OUT run_completed boolean
) LANGUAGE plpgsql AS $$
DECLARE
    totals record;
BEGIN
    UPDATE nifi_ops.load_run
       SET success_partition_count = success_partition_count + p_partitions, extracted_count = extracted_count + p_rows
     WHERE run_id = p_run_id
    RETURNING status, success_partition_count, expected_partition_count, extracted_count, source_count INTO totals;

    run_completed := totals.status = 'EXTRACTING' AND totals.success_partition_count = totals.expected_partition_count
                     AND totals.extracted_count = totals.source_count;
    IF NOT run_completed THEN
        run_status := totals.status;
        RETURN;
    END IF;
    UPDATE nifi_ops.load_run
       SET status = 'EXTRACTED_VALIDATED', extract_completed_at = clock_timestamp(),
           heartbeat_at = clock_timestamp(), version_no = version_no + 1
     WHERE run_id = p_run_id AND status = 'EXTRACTING';
    INSERT INTO nifi_ops.load_dispatch (dispatch_id, run_id, dispatch_type)
    VALUES (gen_random_uuid(), p_run_id, 'VALIDATE_RUN')
    ON CONFLICT (run_id) WHERE dispatch_type = 'VALIDATE_RUN' DO NOTHING;
    PERFORM nifi_ops.record_api_event('INFO', 'EXTRACT_VALIDATED', p_run_id, NULL, p_actor,
        p_row_count => totals.extracted_count);
    run_status := 'EXTRACTED_VALIDATED';
END
$$;

-- One partition's success, as report_chunk decides it: its event, then the run's side.
CREATE OR REPLACE FUNCTION nifi_ops.count_partition_success(
    p_run_id uuid, p_partition_id text, p_rows bigint, p_files integer, p_bytes bigint, p_actor text,
    OUT run_status text, OUT run_completed boolean
) LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nifi_ops.record_api_event('INFO', 'PARTITION_SUCCESS', p_run_id, p_partition_id, p_actor,
        p_row_count => p_rows, p_details => jsonb_build_object('files', p_files, 'bytes', p_bytes));
    SELECT s.run_status, s.run_completed INTO run_status, run_completed
      FROM nifi_ops.count_run_successes(p_run_id, 1, p_rows, p_actor) s;
END
$$;

-- The partitions of one run that succeeded in a batch (their rows are locked by the caller): their
-- PARTITION_SUCCESS events, as record_api_event writes them, in one INSERT; then the run's side, once. The
-- last of them completes the run when it is complete.
CREATE FUNCTION nifi_ops.settle_partition_successes(
    p_run_id uuid, p_ordinals integer[], p_partition_ids text[], p_rows bigint[], p_files integer[], p_bytes bigint[],
    p_actors text[]
) RETURNS TABLE (ordinal integer, outcome text, partition_status text, run_status text, received_chunks integer,
                 validation_scheduled boolean)
LANGUAGE plpgsql AS $$
DECLARE
    n integer := cardinality(p_ordinals);
    success record;
BEGIN
    INSERT INTO nifi_ops.load_event (event_id, event_level, event_name, run_id, job_key, business_key,
        partition_id, process_group, processor_name, row_count, details, actor)
    SELECT gen_random_uuid(), 'INFO', 'PARTITION_SUCCESS', p_run_id, r.job_key, r.business_key, s.partition_id,
        'LOAD_CONTROL_API', 'partition_success', s.rows, jsonb_build_object('files', s.files, 'bytes', s.bytes), s.actor
    FROM unnest(p_partition_ids, p_rows, p_files, p_bytes, p_actors) AS s (partition_id, rows, files, bytes, actor)
    LEFT JOIN nifi_ops.load_run r ON r.run_id = p_run_id;
    SELECT * INTO success FROM nifi_ops.count_run_successes(p_run_id, n, (SELECT sum(r) FROM unnest(p_rows) r)::bigint, p_actors[n]);
    RETURN QUERY
        SELECT s.o, CASE WHEN success.run_completed AND s.k = n THEN 'RUN_COMPLETE' ELSE 'PARTITION_SUCCESS' END,
               'SUCCESS', success.run_status, s.files, success.run_completed AND s.k = n
          FROM unnest(p_ordinals, p_files) WITH ORDINALITY AS s (o, files, k);
END
$$;

CREATE FUNCTION nifi_ops.report_chunks(
    p_run_ids uuid[], p_partition_ids text[], p_claim_tokens uuid[], p_chunk_indexes integer[], p_chunk_counts integer[],
    p_fragment_identifiers text[], p_hdfs_paths text[], p_record_counts bigint[], p_byte_counts bigint[], p_actors text[]
) RETURNS TABLE (ordinal integer, outcome text, partition_status text, run_status text, received_chunks integer,
                 validation_scheduled boolean)
LANGUAGE plpgsql AS $$
DECLARE
    report record;
    run_row record;
    new_received integer;
    new_status text;
    new_rows bigint;
    new_bytes bigint;
    -- the partitions of the current run that succeeded in this batch, settled after the run's last report
    done_ordinals integer[] := '{}';
    done_partitions text[] := '{}';
    done_rows bigint[] := '{}';
    done_files integer[] := '{}';
    done_bytes bigint[] := '{}';
    done_actors text[] := '{}';
BEGIN
    FOR report IN
        SELECT o AS i, lag(p_run_ids[o]) OVER w IS DISTINCT FROM p_run_ids[o] AS first_of_run,
               lead(p_run_ids[o]) OVER w IS DISTINCT FROM p_run_ids[o] AS last_of_run
          FROM generate_subscripts(p_run_ids, 1) AS o
        WINDOW w AS (ORDER BY p_run_ids[o], p_partition_ids[o], p_chunk_indexes[o], o)
         ORDER BY p_run_ids[o], p_partition_ids[o], p_chunk_indexes[o], o
    LOOP
        IF report.first_of_run THEN
            SELECT r.status, r.hdfs_run_path INTO run_row FROM nifi_ops.load_run r WHERE r.run_id = p_run_ids[report.i];
        END IF;
        <<decide>>
        DECLARE
            i integer := report.i;
        BEGIN
            -- report_chunk's fast path (migration 0008), read there; what it does not take is deferred
            IF run_row.status IS DISTINCT FROM 'EXTRACTING' OR NOT starts_with(p_hdfs_paths[i], run_row.hdfs_run_path || '/')
               OR EXISTS (SELECT FROM nifi_ops.load_file f WHERE f.run_id = p_run_ids[i] AND f.partition_id = p_partition_ids[i]
                                                               AND f.chunk_index = p_chunk_indexes[i]) THEN
                RETURN QUERY SELECT i, 'DEFERRED', NULL::text, NULL::text, NULL::integer, false;
                EXIT decide;
            END IF;
            UPDATE nifi_ops.load_partition p
               SET received_chunks = p.received_chunks + 1, received_rows = p.received_rows + p_record_counts[i],
                   received_bytes = p.received_bytes + COALESCE(p_byte_counts[i], 0),
                   reported_chunk_count = CASE WHEN p.received_chunks = 0 THEN p_chunk_counts[i] ELSE p.reported_chunk_count END,
                   chunk_count_mismatches = CASE WHEN p.received_chunks = 0 THEN 0
                       ELSE p.chunk_count_mismatches + CASE WHEN p_chunk_counts[i] <> p.reported_chunk_count THEN 1 ELSE 0 END END,
                   heartbeat_at = clock_timestamp(),
                   status = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN 'SUCCESS' ELSE p.status END,
                   actual_row_count = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN p.received_rows + p_record_counts[i] ELSE p.actual_row_count END,
                   file_count = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN p_chunk_counts[i] ELSE p.file_count END,
                   fragment_count = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN p_chunk_counts[i] ELSE p.fragment_count END,
                   byte_count = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN p.received_bytes + COALESCE(p_byte_counts[i], 0) ELSE p.byte_count END,
                   completed_at = CASE WHEN p.received_chunks + 1 = p_chunk_counts[i] THEN clock_timestamp() ELSE p.completed_at END
             WHERE p.run_id = p_run_ids[i] AND p.partition_id = p_partition_ids[i] AND p.claim_token = p_claim_tokens[i]
               AND CASE WHEN p.status <> 'RUNNING' THEN false
                        WHEN p.received_chunks + 1 < p_chunk_counts[i] THEN true
                        ELSE p.received_chunks + 1 = p_chunk_counts[i]
                             AND (p.received_chunks = 0 OR (p.reported_chunk_count = p_chunk_counts[i] AND p.chunk_count_mismatches = 0))
                             AND p.received_rows + p_record_counts[i] = p.expected_row_count
                   END
            RETURNING p.received_chunks, p.status, p.received_rows, p.received_bytes INTO new_received, new_status, new_rows, new_bytes;
            IF NOT FOUND THEN
                RETURN QUERY SELECT i, 'DEFERRED', NULL::text, NULL::text, NULL::integer, false;
                EXIT decide;
            END IF;
            INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_identifier, fragment_count,
                    hdfs_path, record_count, byte_count, status, reported_by)
            VALUES (p_run_ids[i], p_partition_ids[i], p_chunk_indexes[i], p_fragment_identifiers[i], p_chunk_counts[i],
                    p_hdfs_paths[i], p_record_counts[i], p_byte_counts[i], 'WRITTEN', p_actors[i])
            ON CONFLICT ON CONSTRAINT load_file_pkey DO NOTHING;
            IF NOT FOUND THEN
                -- reported by another transaction that committed after the lookup above (a duplicate within this
                -- batch is found by the lookup): undo the batch; the caller's retry defers this report
                RAISE EXCEPTION 'chunk % of partition % was reported concurrently', p_chunk_indexes[i], p_partition_ids[i]
                    USING ERRCODE = 'serialization_failure';
            END IF;
            IF new_status = 'SUCCESS' THEN
                done_ordinals := done_ordinals || i; done_partitions := done_partitions || p_partition_ids[i];
                done_rows := done_rows || new_rows; done_files := done_files || new_received;
                done_bytes := done_bytes || new_bytes; done_actors := done_actors || p_actors[i];
            ELSE
                RETURN QUERY SELECT i, 'PROGRESS', 'RUNNING', 'EXTRACTING', new_received, false;
            END IF;
        END;
        IF report.last_of_run AND cardinality(done_ordinals) > 0 THEN
            RETURN QUERY SELECT * FROM nifi_ops.settle_partition_successes(p_run_ids[report.i], done_ordinals,
                done_partitions, done_rows, done_files, done_bytes, done_actors);
            done_ordinals := '{}'; done_partitions := '{}'; done_rows := '{}'; done_files := '{}';
            done_bytes := '{}'; done_actors := '{}';
        END IF;
    END LOOP;
END
$$;
