-- What happens when a chunk is reported, and when the last chunk of a run arrives, top to bottom.
--
-- The API (src/domain/chunks/chunk-reporter.ts) sends a report alone through report_chunk when nothing else
-- is in flight, and the reports that arrive while one is in flight together through report_chunks: one
-- statement, one commit for all of them (group commit). Each report in a batch is decided as report_chunk's
-- fast path decides it; a report the fast path does not take (a replay, a refusal, a chunk that fails its
-- partition, a run or partition that has moved on) is answered DEFERRED and sent alone through report_chunk
-- after the batch committed, as if it had arrived just after it. Both take the same fast path, advance_partition.
-- A lone report is not sent as a batch of one: that costs more (bench/report-chunk, one connection, medians of
-- 3 rounds of 3,200 reports: a new chunk 531 → 666 µs of backend CPU and 0.90 → 1.12 ms p50; a replay, which
-- the batch defers to report_chunk, 416 → 659 µs).
--
-- Cost is constant per report: a partition's counters move by the delta of the report, and the run row is
-- touched only when a partition's outcome changes. Run-row updates serialise, so exactly one report can see
-- "every partition succeeded" and complete extraction, writing the VALIDATE_RUN outbox row (count_run_successes).
--
-- Lock order: partition row → run row → file rows, on every path. A batch takes its reports in (run,
-- partition, chunk) order and locks a run's row once, after the last partition of that run in the batch; a
-- single report (partition row, then its run's row) never waits for a partition while holding a run row, so
-- batches cannot deadlock each other or single reports.
--
-- Applied by the migrate runner whenever this file changes (src/db/migrate.ts): every statement here can run again.

CREATE OR REPLACE FUNCTION nifi_ops.report_chunks(
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
        -- a row of nulls with the fields read below: a record never assigned has no fields to read, and a
        -- report of a run that has moved on assigns it nothing
        SELECT NULL::integer AS received_chunks, NULL::text AS status, NULL::bigint AS received_rows,
               NULL::bigint AS received_bytes INTO counted;
        IF run_row.status = 'EXTRACTING' AND starts_with(r.hdfs_path, run_row.hdfs_run_path || '/') THEN
            SELECT * INTO counted FROM nifi_ops.advance_partition(r.run_id, r.partition_id, r.claim_token, r.chunk_index,
                r.chunk_count, r.fragment_identifier, r.hdfs_path, r.record_count, r.byte_count, r.actor);
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

-- The fast path, shared by report_chunks and report_chunk: a new chunk of a RUNNING partition (of an
-- EXTRACTING run, which the caller checked) that either does not complete the partition or completes it
-- successfully. One UPDATE locks the partition row and moves its counters (no separate FOR UPDATE), so the row
-- lock is held only from here to COMMIT; its condition is re-checked on the row as locked, so only one report
-- can turn a partition SUCCESS; the chunk is recorded only when the counters moved. The CASE keeps the planner
-- on the primary key: with `status = 'RUNNING'` as a plain condition it may pick the partial recovery index
-- and scan every running partition of every run. Not taken (a replay, a refusal, a chunk that would fail its
-- partition, a partition that has moved on): every OUT parameter is NULL and nothing changed.
CREATE OR REPLACE FUNCTION nifi_ops.advance_partition(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_chunk_index integer, p_chunk_count integer,
    p_fragment_identifier text, p_hdfs_path text, p_record_count bigint, p_byte_count bigint, p_actor text,
    OUT received_chunks integer, OUT status text, OUT received_rows bigint, OUT received_bytes bigint
) LANGUAGE plpgsql AS $$
DECLARE
    was_recorded boolean;
BEGIN
    WITH moved AS (
        UPDATE nifi_ops.load_partition p
           SET received_chunks = p.received_chunks + 1, received_rows = p.received_rows + p_record_count,
               received_bytes = p.received_bytes + COALESCE(p_byte_count, 0),
               -- the first chunk tells the chunk count; later ones that disagree are counted
               reported_chunk_count = CASE WHEN p.received_chunks = 0 THEN p_chunk_count ELSE p.reported_chunk_count END,
               chunk_count_mismatches = CASE WHEN p.received_chunks = 0 THEN 0
                   ELSE p.chunk_count_mismatches + CASE WHEN p_chunk_count <> p.reported_chunk_count THEN 1 ELSE 0 END END,
               heartbeat_at = clock_timestamp(),
               -- the chunk that completes it (the condition below made that a success)
               status = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN 'SUCCESS' ELSE p.status END,
               actual_row_count = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN p.received_rows + p_record_count ELSE p.actual_row_count END,
               file_count = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN p_chunk_count ELSE p.file_count END,
               fragment_count = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN p_chunk_count ELSE p.fragment_count END,
               byte_count = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN p.received_bytes + COALESCE(p_byte_count, 0) ELSE p.byte_count END,
               completed_at = CASE WHEN p.received_chunks + 1 = p_chunk_count THEN clock_timestamp() ELSE p.completed_at END
         WHERE p.run_id = p_run_id AND p.partition_id = p_partition_id AND p.claim_token = p_claim_token
           AND CASE WHEN p.status <> 'RUNNING' THEN false
                    WHEN p.received_chunks + 1 < p_chunk_count THEN true
                    -- as the general path decides: every chunk told the same count n, there are n of them, and
                    -- their rows add up to the partition's expected count
                    ELSE p.received_chunks + 1 = p_chunk_count
                         AND (p.received_chunks = 0 OR (p.reported_chunk_count = p_chunk_count AND p.chunk_count_mismatches = 0))
                         AND p.received_rows + p_record_count = p.expected_row_count
               END
           AND NOT EXISTS (SELECT FROM nifi_ops.load_file f
                            WHERE f.run_id = p_run_id AND f.partition_id = p_partition_id AND f.chunk_index = p_chunk_index)
        RETURNING p.received_chunks, p.status, p.received_rows, p.received_bytes
    ), recorded AS (
        INSERT INTO nifi_ops.load_file (run_id, partition_id, chunk_index, fragment_identifier, fragment_count,
                hdfs_path, record_count, byte_count, status, reported_by)
        SELECT p_run_id, p_partition_id, p_chunk_index, p_fragment_identifier, p_chunk_count, p_hdfs_path,
               p_record_count, p_byte_count, 'WRITTEN', p_actor
          FROM moved
        ON CONFLICT ON CONSTRAINT load_file_pkey DO NOTHING
        RETURNING 1
    )
    SELECT m.received_chunks, m.status, m.received_rows, m.received_bytes, EXISTS (SELECT FROM recorded)
      INTO received_chunks, status, received_rows, received_bytes, was_recorded FROM moved m;
    IF was_recorded IS false THEN
        -- the same chunk, reported by another transaction that committed after this statement's snapshot was
        -- taken (a duplicate within one batch is seen by it): the counters above counted it twice. Undo the
        -- statement; the caller's retry takes the general path (a batch's retry defers the report).
        RAISE EXCEPTION 'chunk % of partition % was reported concurrently', p_chunk_index, p_partition_id
            USING ERRCODE = 'serialization_failure';
    END IF;
END
$$;

-- The partitions of one run that succeeded in a batch (their rows are locked by the caller): their
-- PARTITION_SUCCESS events, as record_api_event writes them, in one INSERT; then the run's side, once. The
-- last of them completes the run when it is complete.
CREATE OR REPLACE FUNCTION nifi_ops.settle_partition_successes(
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

-- The run's side of partitions that have just become SUCCESS (their rows are locked by the caller): its
-- counters and, when the last one succeeded, the run's completion with its VALIDATE_RUN outbox row. Run-row
-- updates serialise, so exactly one caller can see "every partition succeeded".
CREATE OR REPLACE FUNCTION nifi_ops.count_run_successes(
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
    PERFORM nifi_ops.fault_point('count_run_successes');

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

-- A report on its own (ref §3.7). The function returns one row through OUT parameters instead of RETURNS
-- TABLE, so a call builds no result set. Most reports take the fast path without a separate row lock: new
-- chunks that leave their partition RUNNING or make it SUCCESS (measured with pgbench, 32 clients on the
-- embedded server, progress only: 8 partitions 2,020 → 3,400 calls/s, 10,000 partitions 4,300 → 5,580).
CREATE OR REPLACE FUNCTION nifi_ops.report_chunk(
    p_run_id uuid, p_partition_id text, p_claim_token uuid, p_chunk_index integer, p_chunk_count integer,
    p_fragment_identifier text, p_hdfs_path text, p_record_count bigint, p_byte_count bigint, p_actor text,
    OUT outcome text, OUT partition_status text, OUT run_status text, OUT received_chunks integer,
    OUT validation_scheduled boolean, OUT partition_outcome text
) LANGUAGE plpgsql AS $$
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
    new_status text;
    success record;
    totals record;
    detail text;
    moved record;
BEGIN
    -- the fast path (advance_partition) for most reports; the general path below for the rest
    SELECT status, hdfs_run_path INTO run_row FROM nifi_ops.load_run WHERE run_id = p_run_id;
    IF run_row.status = 'EXTRACTING' AND starts_with(p_hdfs_path, run_row.hdfs_run_path || '/') THEN
        SELECT * INTO moved FROM nifi_ops.advance_partition(p_run_id, p_partition_id, p_claim_token, p_chunk_index,
            p_chunk_count, p_fragment_identifier, p_hdfs_path, p_record_count, p_byte_count, p_actor);
        IF moved.status = 'SUCCESS' THEN
            SELECT * INTO success FROM nifi_ops.count_partition_success(p_run_id, p_partition_id, moved.received_rows,
                moved.received_chunks, moved.received_bytes, p_actor);
            outcome := CASE WHEN success.run_completed THEN 'RUN_COMPLETE' ELSE 'PARTITION_SUCCESS' END;
            partition_status := 'SUCCESS'; run_status := success.run_status; received_chunks := moved.received_chunks;
            validation_scheduled := success.run_completed; partition_outcome := 'SUCCESS';
            RETURN;
        ELSIF moved.status IS NOT NULL THEN
            outcome := 'PROGRESS'; partition_status := 'RUNNING'; run_status := 'EXTRACTING';
            received_chunks := moved.received_chunks; validation_scheduled := false;
            RETURN;
        END IF;
    END IF;

    -- General path: replays, refusals, a chunk that fails its partition, and runs or partitions that have moved
    -- on, decided under the partition-row lock.
    SELECT * INTO part FROM nifi_ops.load_partition
     WHERE run_id = p_run_id AND partition_id = p_partition_id FOR UPDATE;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM nifi_ops.load_run WHERE run_id = p_run_id) THEN
            SELECT 'PARTITION_NOT_FOUND', NULL::text, NULL::text, NULL::integer, false, NULL::text
              INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
        ELSE
            SELECT 'RUN_NOT_FOUND', NULL::text, NULL::text, NULL::integer, false, NULL::text
              INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
        END IF;
        RETURN;
    END IF;
    PERFORM nifi_ops.fault_point('report_chunk_locked');

    -- unlocked read: the run row is locked only below, when this report changes the partition's outcome
    SELECT status, hdfs_run_path INTO run_row FROM nifi_ops.load_run WHERE run_id = p_run_id;

    IF part.claim_token IS DISTINCT FROM p_claim_token THEN
        SELECT 'CLAIM_MISMATCH', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text
          INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
        RETURN;
    END IF;

    IF run_row.hdfs_run_path IS NULL OR NOT starts_with(p_hdfs_path, run_row.hdfs_run_path || '/') THEN
        SELECT 'HDFS_PATH_OUTSIDE_RUN', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text
          INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
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
        SELECT 'CHUNK_CONFLICT', part.status::text, run_row.status::text, part.received_chunks, false, NULL::text
          INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
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
        SELECT CASE WHEN run_row.status = 'EXTRACTING' THEN 'PROGRESS' ELSE 'IGNORED' END,
            part.status::text, run_row.status::text, new_received, false, NULL::text
          INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
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
        SELECT * INTO success FROM nifi_ops.count_partition_success(p_run_id, p_partition_id, new_rows, new_received, new_bytes, p_actor);
        outcome := CASE WHEN success.run_completed THEN 'RUN_COMPLETE' ELSE 'PARTITION_SUCCESS' END;
        partition_status := 'SUCCESS'; run_status := success.run_status; received_chunks := new_received;
        validation_scheduled := success.run_completed; partition_outcome := 'SUCCESS';
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
    SELECT 'PARTITION_FAILED', 'FAILED'::text, totals.status::text, new_received, false, 'FAILED'::text
      INTO outcome, partition_status, run_status, received_chunks, validation_scheduled, partition_outcome;
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
