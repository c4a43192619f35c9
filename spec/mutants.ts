// Mutants that must die: realistic small bugs in the SQL functions and the domain, each the kind of change a
// reviewer could miss (a lock removed, a CAS made blind, a guard dropped or widened), and the tests that must
// fail when it is applied. `npm run mutants` (scripts/mutants.ts) applies each to a scratch copy of the tree and
// runs its tests there; spec/mutants.test.ts keeps every `find` unique in its file, so the catalogue cannot
// silently stop applying as the code moves.

export interface Mutant {
  id: string;
  /** What the bug is, as a reviewer would say it. */
  bug: string;
  file: string;
  /** Exact text that occurs once in the file … */
  find: string;
  /** … and what it becomes. */
  replace: string;
  /** Test files (from the repository's root) that must fail; the first is expected to kill it fastest. */
  tests: string[];
  /** Only the tests whose names match (vitest -t), to keep a run short. */
  testNamePattern?: string;
}

const REPORT_CHUNK_SQL = 'prisma/functions/03_report_chunk.sql';
const CLAIM_SQL = 'prisma/functions/02_claim_partition.sql';

export const MUTANTS: Mutant[] = [
  {
    id: 'run-counters-lost-update',
    bug: "the run's success counters read by a plain SELECT and written back, as if the run-row lock were gone",
    file: REPORT_CHUNK_SQL,
    find: `    UPDATE nifi_ops.load_run
       SET success_partition_count = success_partition_count + p_partitions, extracted_count = extracted_count + p_rows
     WHERE run_id = p_run_id
    RETURNING status, success_partition_count, expected_partition_count, extracted_count, source_count INTO totals;`,
    replace: `    SELECT status, success_partition_count + p_partitions AS success_partition_count, expected_partition_count,
           extracted_count + p_rows AS extracted_count, source_count INTO totals
      FROM nifi_ops.load_run WHERE run_id = p_run_id;
    UPDATE nifi_ops.load_run
       SET success_partition_count = totals.success_partition_count, extracted_count = totals.extracted_count
     WHERE run_id = p_run_id;`,
    tests: ['test/process/races.test.ts'],
    testNamePattern: 'last chunks of every partition',
  },
  {
    id: 'success-partition-recounted',
    bug: 'a replayed chunk of a SUCCESS partition goes on to the completion step and is counted again',
    file: REPORT_CHUNK_SQL,
    find: `IF run_row.status <> 'EXTRACTING' OR part.status <> 'RUNNING' OR new_received < p_chunk_count THEN`,
    replace: `IF run_row.status <> 'EXTRACTING' OR new_received < p_chunk_count THEN`,
    tests: ['test/process/races.test.ts'],
    testNamePattern: 'replayed chunk of a SUCCESS partition',
  },
  {
    id: 'completion-never-decided',
    bug: 'the completion test compares the success counter off by one, so no run ever completes',
    file: REPORT_CHUNK_SQL,
    find: `run_completed := totals.status = 'EXTRACTING' AND totals.success_partition_count = totals.expected_partition_count`,
    replace: `run_completed := totals.status = 'EXTRACTING' AND totals.success_partition_count > totals.expected_partition_count`,
    tests: ['test/domain/chunks/chunks.test.ts'],
  },
  {
    id: 'start-validation-second-winner',
    bug: "startValidation's status check widened: a duplicate VALIDATE_RUN call starts a second validation flow",
    file: 'src/domain/validation/start-validation.ts',
    find: `      from: ['EXTRACTED_VALIDATED'],
      to: 'STAGE_VALIDATING',`,
    replace: `      from: ['EXTRACTED_VALIDATED', 'STAGE_VALIDATING'],
      to: 'STAGE_VALIDATING',`,
    tests: ['test/domain/validation/validation.test.ts'],
  },
  {
    id: 'partition-success-ignores-rows',
    bug: "the fast path makes a partition SUCCESS without checking that its chunks' rows add up",
    file: REPORT_CHUNK_SQL,
    find: `                         AND p.received_rows + p_record_count = p.expected_row_count`,
    replace: ``,
    tests: ['test/domain/chunks/chunks.test.ts', 'test/domain/runs/received-rows.test.ts'],
  },
  {
    id: 'late-report-token-ignored',
    bug: "the fast path accepts a chunk whatever its claim token, so a reissued partition's old owner still counts",
    file: REPORT_CHUNK_SQL,
    find: ` AND p.partition_id = p_partition_id AND p.claim_token = p_claim_token`,
    replace: ` AND p.partition_id = p_partition_id`,
    tests: ['test/domain/partitions/reissue-partition.test.ts', 'test/domain/chunks/chunks.test.ts'],
  },
  {
    id: 'batch-first-of-run-null',
    bug: "IS DISTINCT FROM → <> in the batch's run boundaries: the first report of a batch (lag is NULL) never loads its run",
    file: REPORT_CHUNK_SQL,
    find: `lag(u.run_id) OVER w IS DISTINCT FROM u.run_id AS first_of_run`,
    replace: `lag(u.run_id) OVER w <> u.run_id AS first_of_run`,
    tests: ['test/domain/chunks/chunk-reporter.test.ts'],
  },
  {
    id: 'claim-without-partition-lock',
    bug: 'claimPartition reads the partition without FOR UPDATE, so two claimers can both see it PENDING',
    file: CLAIM_SQL,
    find: `     WHERE run_id = p_run_id AND partition_id = p_partition_id FOR UPDATE;`,
    replace: `     WHERE run_id = p_run_id AND partition_id = p_partition_id;`,
    tests: ['test/process/races.test.ts'],
    testNamePattern: 'claims of one partition',
  },
  {
    id: 'claim-pool-without-lock',
    bug: "claimPartition counts its source pool's RUNNING partitions without locking the pool's row, so concurrent claimers all see the same free slots",
    file: CLAIM_SQL,
    find: `       FOR UPDATE OF sp;`,
    replace: `       ;`,
    tests: ['test/domain/pools/source-pool-admission-race.test.ts'],
  },
  {
    id: 'claim-while-run-not-extracting',
    bug: "claimPartition's run-status guard widened: partitions of a cancelled or failed run can still be claimed",
    file: CLAIM_SQL,
    find: `    IF current_run_status <> 'EXTRACTING' THEN`,
    replace: `    IF current_run_status IS NULL THEN`,
    tests: ['test/domain/chunks/chunks.test.ts'],
    testNamePattern: 'once the run is not extracting',
  },
  {
    id: 'publish-claim-any-token',
    bug: 'claimPublish answers claimed to any token while the run is PUBLISHING',
    file: 'src/domain/publish/claim-publish.ts',
    find: `return { claimed: run.publishToken === cmd.publishToken, runStatus: run.status };`,
    replace: `return { claimed: true, runStatus: run.status };`,
    tests: ['test/domain/publish/publish.test.ts'],
  },
  {
    id: 'publish-result-token-unchecked',
    bug: 'reportPublishResult accepts a result from a caller that does not hold the publish token',
    file: 'src/domain/publish/report-publish-result.ts',
    find: `  if (run.publishToken !== cmd.publishToken) throw new DomainError('PUBLISH_TOKEN_MISMATCH');`,
    replace: ``,
    tests: ['test/domain/publish/publish.test.ts'],
  },
  {
    id: 'stale-publish-failed',
    bug: 'the sweeper turns a stale PUBLISHING into FAILED_PUBLISH, freeing the key for a new run beside a zombie INSERT OVERWRITE',
    file: 'src/domain/sweeper/stale-publishing.ts',
    find: `      to: 'PUBLISH_UNKNOWN',`,
    replace: `      to: 'FAILED_PUBLISH',`,
    tests: ['test/api/sweeper/sweeper.test.ts'],
  },
  {
    id: 'stale-partition-test-widened',
    bug: "the sweeper's stale test drops the threshold: every RUNNING partition is stale",
    file: 'src/domain/sweeper/stale-partitions.ts',
    find: `(p.status = 'RUNNING' AND p.heartbeat_at < clock_timestamp() - make_interval(secs => \${staleSeconds}::float8))`,
    replace: `(p.status = 'RUNNING' AND p.heartbeat_at < clock_timestamp())`,
    tests: ['test/api/sweeper/sweeper.test.ts'],
  },
  {
    id: 'transition-blind-update',
    bug: "the one door's conditional UPDATE made blind: a status change no longer checks the status it leaves",
    file: 'src/domain/transitions.ts',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the text is source code holding a template literal
    find: 'const status = Prisma.sql`t.status = ANY(${[...move.from]}::text[])`;',
    replace: 'const status = Prisma.sql`true`;',
    tests: ['test/domain/operator/operator.test.ts', 'test/domain/publish/publish.test.ts'],
  },
  {
    id: 'cancel-guard-widened',
    bug: 'cancelRun refuses only PUBLISH_UNKNOWN: a PUBLISHING run can be cancelled under its publisher',
    file: 'src/domain/operator/cancel-run.ts',
    find: `  if (!canTransitionRun(run.status, 'CANCELLED')) throw`,
    replace: `  if (run.status === 'PUBLISH_UNKNOWN') throw`,
    tests: ['test/domain/operator/operator.test.ts'],
  },
  {
    id: 'resolve-unknown-guard-dropped',
    bug: 'resolveUnknown no longer refuses a run that is not PUBLISH_UNKNOWN',
    file: 'src/domain/operator/resolve-unknown.ts',
    find: `  if (run.status !== RESOLVABLE_RUN_STATUS) throw new DomainError('RUN_STATUS_MISMATCH', { runStatus: run.status });`,
    replace: ``,
    tests: ['test/domain/operator/operator.test.ts'],
  },
  {
    id: 'resend-run-less-dispatch',
    bug: 'IS NOT DISTINCT FROM → = when resending: a dispatch with no run (ALERT_WEBHOOK, GATE_READY) is never found',
    file: 'src/domain/operator/resend-dispatch.ts',
    find: `AND run_id IS NOT DISTINCT FROM \${runId}::uuid FOR UPDATE`,
    replace: `AND run_id = \${runId}::uuid FOR UPDATE`,
    tests: ['test/domain/operator/operator.test.ts', 'test/api/notifications/notifications.test.ts'],
  },
  {
    id: 'lease-ignores-due-time',
    bug: "the dispatcher's lease ignores the due time, so a leased call is leased again by another worker at once",
    file: 'src/domain/dispatch/lease.ts',
    find: `       WHERE d.status = 'PENDING' AND d.next_attempt_at <= (SELECT clock_timestamp())`,
    replace: `       WHERE d.status = 'PENDING'`,
    tests: ['test/api/worker/dispatcher.test.ts'],
  },
  {
    id: 'resume-without-run-lock',
    bug: 'resumeRun reads the failed run without locking it: concurrent resumes all pass the newer-attempt check',
    file: 'src/domain/runs/resume-run.ts',
    find: `      FROM nifi_ops.load_run WHERE run_id = \${cmd.runId}::uuid FOR UPDATE\`;`,
    replace: `      FROM nifi_ops.load_run WHERE run_id = \${cmd.runId}::uuid\`;`,
    tests: ['test/domain/runs/resume-run-race.test.ts'],
    testNamePattern: 'concurrent resumes',
  },
  {
    id: 'resume-carried-rows-uncounted',
    bug: "a resumed run's counters start without its carried partitions' rows, so extracted never equals source",
    file: 'src/domain/runs/resume-run.ts',
    find: `success_partition_count = \${plan!.carried}, extracted_count = \${plan!.carried_rows}`,
    replace: `success_partition_count = \${plan!.carried}, extracted_count = 0`,
    tests: ['test/domain/runs/resume-run.test.ts', 'test/api/runs/resume-run.test.ts'],
    testNamePattern: 'extracted = source',
  },
  {
    id: 'resume-carried-counted-twice',
    bug: 'a resumed run also sends its carried SUCCESS partitions to be extracted again (NiFi would read them twice)',
    file: 'src/domain/runs/resume-run.ts',
    find: `      FROM nifi_ops.load_partition WHERE run_id = \${runId}::uuid AND status = \${REISSUE_WAITING_PARTITION_STATUS}`,
    replace: `      FROM nifi_ops.load_partition WHERE run_id = \${runId}::uuid`,
    tests: ['test/domain/runs/resume-run.test.ts', 'test/api/runs/resume-run.test.ts'],
  },
];

/** The file's text with the mutant applied; its `find` must occur exactly once. */
export function applyMutant(source: string, mutant: Mutant): string {
  const at = source.indexOf(mutant.find);
  if (at < 0 || source.indexOf(mutant.find, at + 1) >= 0) {
    throw new Error(`${mutant.id}: its text must occur exactly once in ${mutant.file}`);
  }
  return source.slice(0, at) + mutant.replace + source.slice(at + mutant.find.length);
}
