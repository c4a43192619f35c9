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
    r record;
    run_row record;
    counted record;
    -- the partitions of the current run that succeeded in this batch, settled after the run's last report
    done_ordinals integer[] := '{}';
    done_partitions text[] := '{}';
    done_rows bigint[] := '{}';
    done_files integer[] := '{}';
    done_bytes bigint[] := '{}';
    done_actors text[] := '{}';
BEGIN
    FOR r IN
        SELECT u.*, lag(u.run_id) OVER w IS DISTINCT FROM u.run_id AS first_of_run,
               lead(u.run_id) OVER w IS DISTINCT FROM u.run_id AS last_of_run
          FROM unnest(p_run_ids, p_partition_ids, p_claim_tokens, p_chunk_indexes, p_chunk_counts, p_fragment_identifiers,
                      p_hdfs_paths, p_record_counts, p_byte_counts, p_actors) WITH ORDINALITY
               AS u (run_id, partition_id, claim_token, chunk_index, chunk_count, fragment_identifier, hdfs_path,
                     record_count, byte_count, actor, i)
        WINDOW w AS (ORDER BY u.run_id, u.partition_id, u.chunk_index, u.i)
         ORDER BY u.run_id, u.partition_id, u.chunk_index, u.i
    LOOP
        IF r.first_of_run THEN
            SELECT l.status, l.hdfs_run_path INTO run_row FROM nifi_ops.load_run l WHERE l.run_id = r.run_id;
        END IF;
        counted := NULL;
        IF run_row.status = 'EXTRACTING' AND starts_with(r.hdfs_path, run_row.hdfs_run_path || '/') THEN
            -- report_chunk's fast path (migration 0008, read there) in one statement: the partition's counters
            -- move only for a chunk not recorded yet, and the chunk is recorded only when they moved
            WITH moved AS (
                UPDATE nifi_ops.load_partition p
                   SET received_chunks = p.received_chunks + 1, received_rows = p.received_rows + r.record_count,
                       received_bytes = p.received_bytes + COALESCE(r.byte_count, 0),
                       reported_chunk_count = CASE WHEN p.received_chunks = 0 THEN r.chunk_count ELSE p.reported_chunk_count END,
                       chunk_count_mismatches = CASE WHEN p.received_chunks = 0 THEN 0
                           ELSE p.chunk_count_mismatches + CASE WHEN r.chunk_count <> p.reported_chunk_count THEN 1 ELSE 0 END END,
                       heartbeat_at = clock_timestamp(),
                       status = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN 'SUCCESS' ELSE p.status END,
                       actual_row_count = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN p.received_rows + r.record_count ELSE p.actual_row_count END,
                       file_count = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN r.chunk_count ELSE p.file_count END,
                       fragment_count = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN r.chunk_count ELSE p.fragment_count END,
                       byte_count = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN p.received_bytes + COALESCE(r.byte_count, 0) ELSE p.byte_count END,
                       completed_at = CASE WHEN p.received_chunks + 1 = r.chunk_count THEN clock_timestamp() ELSE p.completed_at END
                 WHERE p.run_id = r.run_id AND p.partition_id = r.partition_id AND p.claim_token = r.claim_token
                   AND CASE WHEN p.status <> 'RUNNING' THEN false
                            WHEN p.received_chunks + 1 < r.chunk_count THEN true
                            ELSE p.received_chunks + 1 = r.chunk_count
                                 AND (p.received_chunks = 0 OR (p.reported_chunk_count = r.chunk_count AND p.chunk_count_mismatches = 0))
                                 AND p.received_rows + r.record_count = p.expected_row_count
                       END
                   AND NOT EXISTS (SELECT FROM nifi_ops.load_file f
                                    WHERE f.run_id = r.run_id AND f.partition_id = r.partition_id AND f.chunk_index = r.chunk_index)
                RETURNING p.received_chunks, p.status, p.received_rows, p.received_bytes
            ), recorded AS (
                INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_identifier, fragment_count,
                        hdfs_path, record_count, byte_count, status, reported_by)
                SELECT r.run_id, r.partition_id, r.chunk_index, r.fragment_identifier, r.chunk_count, r.hdfs_path,
                       r.record_count, r.byte_count, 'WRITTEN', r.actor
                  FROM moved
                ON CONFLICT ON CONSTRAINT load_file_pkey DO NOTHING
                RETURNING 1
            )
            SELECT m.received_chunks, m.status, m.received_rows, m.received_bytes, EXISTS (SELECT FROM recorded) AS recorded
              INTO counted FROM moved m;
            IF counted.recorded IS false THEN
                -- reported by another transaction that committed after this statement's snapshot was taken (a
                -- duplicate within this batch is seen by it): undo the batch; the caller's retry defers this report
                RAISE EXCEPTION 'chunk % of partition % was reported concurrently', r.chunk_index, r.partition_id
                    USING ERRCODE = 'serialization_failure';
            END IF;
        END IF;
        IF counted.status IS NULL THEN
            RETURN QUERY SELECT r.i::integer, 'DEFERRED', NULL::text, NULL::text, NULL::integer, false;
        ELSIF counted.status = 'SUCCESS' THEN
            done_ordinals := done_ordinals || r.i::integer; done_partitions := done_partitions || r.partition_id;
            done_rows := done_rows || counted.received_rows; done_files := done_files || counted.received_chunks;
            done_bytes := done_bytes || counted.received_bytes; done_actors := done_actors || r.actor;
        ELSE
            RETURN QUERY SELECT r.i::integer, 'PROGRESS', 'RUNNING', 'EXTRACTING', counted.received_chunks, false;
        END IF;
        IF r.last_of_run AND cardinality(done_ordinals) > 0 THEN
            RETURN QUERY SELECT * FROM nifi_ops.settle_partition_successes(r.run_id, done_ordinals,
                done_partitions, done_rows, done_files, done_bytes, done_actors);
            done_ordinals := '{}'; done_partitions := '{}'; done_rows := '{}'; done_files := '{}';
            done_bytes := '{}'; done_actors := '{}';
        END IF;
    END LOOP;
END
$$;
