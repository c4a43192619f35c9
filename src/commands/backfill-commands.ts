// The operator's commands for pausing jobs and for backfills: `load-control pause|unpause|resume-job|paused` and
// `load-control backfill plan|start|show|list|pause|resume|cancel|release`, through the API like the other
// operator commands (src/commands/operator.ts: the same --url, --token, --json and exit codes).
import { parseArgs } from 'node:util';
import { call, EXIT_CODES, exitCodeFor, formatTable, type GraphQLAnswer } from './operator.js';

const JOB_COMMANDS = ['pause', 'unpause', 'resume-job', 'paused', 'backfill'] as const;
type JobCommand = (typeof JOB_COMMANDS)[number];
const BACKFILL_ACTIONS = ['plan', 'start', 'show', 'list', 'pause', 'resume', 'cancel', 'release'] as const;

export const isJobCommand = (command: string | undefined): command is JobCommand =>
  (JOB_COMMANDS as readonly string[]).includes(command ?? '');

export const JOB_USAGE = `jobs and backfills (the same --url, --token and --json):
  pause <jobKey> --reason TEXT
                        pause a job: createRun refuses its runs (JOB_PAUSED), its backfills hold
  unpause <jobKey> --reason TEXT   (also: resume-job)
                        end the pause
  paused                the paused jobs: who paused them, why, since when
  backfill plan <jobKey> --from DATE --to DATE [--reprocess MISSING|FAILED|ALL] [--order OLDEST_FIRST|NEWEST_FIRST]
                        the dry run: each date and what a backfill would do with it
  backfill start <jobKey> --from DATE --to DATE --max-concurrent N [--reprocess R] [--order O] [--hold-readiness]
                        start it (--hold-readiness: readiness decisions are not pushed until released)
  backfill show <backfillId>        its progress and its dates
  backfill list [--job KEY] [--open]
  backfill pause|resume|cancel|release <backfillId> --reason TEXT`;

type Row = Record<string, unknown>;
type Backfill = Row & { progress: Row; dates?: Row[] };

const JOB_PAUSE_FIELDS = 'jobKey paused pausedAt pausedBy pauseReason';
const BACKFILL_FIELDS = `backfillId jobKey from to reprocess maxConcurrent order pushReadiness status createdBy createdAt
  readinessHeld allowedActions progress { queued running succeeded failed skipped cancelled total }`;
const PAUSE_JOB = `mutation($input: PauseJobInput!) { pauseJob(input: $input) { changed job { ${JOB_PAUSE_FIELDS} } } }`;
const RESUME_JOB = `mutation($input: ResumeJobInput!) { resumeJob(input: $input) { changed job { ${JOB_PAUSE_FIELDS} } } }`;
const PAUSED_JOBS = `{ pausedJobs { ${JOB_PAUSE_FIELDS} } }`;
const PLAN = `query($jobKey: String!, $from: Date!, $to: Date!, $reprocess: BackfillReprocess!, $order: BackfillOrder) {
  planBackfill(jobKey: $jobKey, from: $from, to: $to, reprocess: $reprocess, order: $order) {
    position businessDate action reason latestRunId latestRunStatus } }`;
const START = `mutation($input: StartBackfillInput!) { startBackfill(input: $input) { backfill { ${BACKFILL_FIELDS} } } }`;
const SHOW = `query($backfillId: UUID!) { backfill(backfillId: $backfillId) {
  ${BACKFILL_FIELDS} dates { position businessDate status reason runId startDispatchStatus } } }`;
const LIST = `query($jobKey: String, $openOnly: Boolean) { backfills(jobKey: $jobKey, openOnly: $openOnly) { ${BACKFILL_FIELDS} } }`;
const CONTROLS = {
  pause: 'pauseBackfill',
  resume: 'resumeBackfill',
  cancel: 'cancelBackfill',
  release: 'releaseBackfillReadiness',
} as const;
const control = (field: string) =>
  `mutation($input: ${field[0]!.toUpperCase()}${field.slice(1)}Input!) { ${field}(input: $input) { changed backfill { ${BACKFILL_FIELDS} } } }`;

class UsageError extends Error {}

const progressLine = (b: Backfill) => {
  const p = b.progress;
  return `${p.total} dates: ${p.queued} queued, ${p.running} running, ${p.succeeded} succeeded, ${p.failed} failed, ${p.skipped} skipped, ${p.cancelled} cancelled`;
};
const backfillLines = (b: Backfill) => [
  `backfill ${b.backfillId}  ${b.jobKey} ${b.from}..${b.to}  ${b.status}  maxConcurrent ${b.maxConcurrent}  ${b.reprocess} ${b.order}` +
    (b.readinessHeld ? '  readiness held' : ''),
  progressLine(b),
];

export async function runJobCommand(
  argv: string[],
  io: { out: (line: string) => void; err: (line: string) => void; env: NodeJS.ProcessEnv },
): Promise<number> {
  const [command, ...rest] = argv as [JobCommand, ...string[]];
  let values: Record<string, string | boolean | undefined>;
  let args: string[];
  try {
    const parsed = parseArgs({
      args: rest,
      options: {
        url: { type: 'string' },
        token: { type: 'string' },
        json: { type: 'boolean' },
        reason: { type: 'string' },
        from: { type: 'string' },
        to: { type: 'string' },
        reprocess: { type: 'string' },
        order: { type: 'string' },
        'max-concurrent': { type: 'string' },
        'hold-readiness': { type: 'boolean' },
        job: { type: 'string' },
        open: { type: 'boolean' },
      },
      allowPositionals: true,
    });
    values = parsed.values;
    args = parsed.positionals;
  } catch (error) {
    io.err(`${(error as Error).message}\n\n${JOB_USAGE}`);
    return EXIT_CODES.usage;
  }
  const token = (values.token as string | undefined) ?? io.env.LC_TOKEN;
  const url = (values.url as string | undefined) ?? io.env.LC_URL ?? 'http://127.0.0.1:8080';
  const print = <T>(answer: GraphQLAnswer<T>, lines: (data: T) => string[]): number => {
    if (answer.error) {
      io.err(`error: ${answer.error.code} (HTTP ${answer.status}): ${answer.error.message}`);
      if (answer.error.details !== undefined) io.err(`details: ${JSON.stringify(answer.error.details)}`);
    } else if (values.json) io.out(JSON.stringify(answer.data, null, 2));
    else for (const line of lines(answer.data!)) io.out(line);
    return exitCodeFor(answer);
  };
  const need = (names: string[]) => {
    if (args.length !== names.length) throw new UsageError(`expects ${names.map((n) => `<${n}>`).join(' ') || 'no arguments'}`);
    return args;
  };
  const reason = () => {
    if (typeof values.reason !== 'string' || values.reason === '')
      throw new UsageError('--reason: why, for the event log (at least 5 characters)');
    return values.reason;
  };
  const option = (name: string) => {
    const value = values[name];
    if (typeof value !== 'string') throw new UsageError(`--${name} is needed`);
    return value;
  };
  const unchanged = (changed: boolean) => (changed ? '' : ' (unchanged: it was already so)');

  try {
    if (!token) throw new UsageError('a token is needed: --token or LC_TOKEN');
    switch (command) {
      case 'pause':
      case 'unpause':
      case 'resume-job': {
        const [jobKey] = need(['jobKey']);
        const pausing = command === 'pause';
        const answer = await call<Record<string, { changed: boolean; job: Row }>>(url, token, pausing ? PAUSE_JOB : RESUME_JOB, {
          input: { jobKey, reason: reason() },
        });
        return print(answer, (data) => {
          const { changed, job } = data[pausing ? 'pauseJob' : 'resumeJob']!;
          return [
            job.paused
              ? `${jobKey}: paused since ${job.pausedAt} by ${job.pausedBy}: ${job.pauseReason}${unchanged(changed)}`
              : `${jobKey}: not paused${unchanged(changed)}`,
          ];
        });
      }
      case 'paused': {
        need([]);
        const answer = await call<{ pausedJobs: Row[] }>(url, token, PAUSED_JOBS, {});
        return print(answer, (data) => formatTable(data.pausedJobs, ['jobKey', 'pausedAt', 'pausedBy', 'pauseReason']));
      }
      case 'backfill': {
        const [action, ...operands] = args;
        args = operands;
        if (!(BACKFILL_ACTIONS as readonly string[]).includes(action ?? ''))
          throw new UsageError(`backfill: one of ${BACKFILL_ACTIONS.join(', ')}`);
        if (action === 'plan' || action === 'start') {
          const [jobKey] = need(['jobKey']);
          const range = {
            jobKey,
            from: option('from'),
            to: option('to'),
            reprocess: (values.reprocess as string) ?? 'MISSING',
            order: values.order ?? null,
          };
          if (action === 'plan') {
            const answer = await call<{ planBackfill: Row[] }>(url, token, PLAN, range);
            return print(answer, (data) =>
              formatTable(data.planBackfill, ['position', 'businessDate', 'action', 'reason', 'latestRunStatus', 'latestRunId']),
            );
          }
          const maxConcurrent = Number(option('max-concurrent'));
          if (!Number.isInteger(maxConcurrent)) throw new UsageError('--max-concurrent: an integer');
          const answer = await call<{ startBackfill: { backfill: Backfill } }>(url, token, START, {
            input: { ...range, order: range.order ?? undefined, maxConcurrent, pushReadiness: !values['hold-readiness'] },
          });
          return print(answer, (data) => backfillLines(data.startBackfill.backfill));
        }
        if (action === 'list') {
          need([]);
          const answer = await call<{ backfills: Backfill[] }>(url, token, LIST, {
            jobKey: values.job ?? null,
            openOnly: values.open ?? false,
          });
          return print(answer, (data) =>
            formatTable(
              data.backfills.map((b) => ({ ...b, range: `${b.from}..${b.to}`, progress: progressLine(b) })),
              ['backfillId', 'jobKey', 'range', 'status', 'progress'],
            ),
          );
        }
        const [backfillId] = need(['backfillId']);
        if (action === 'show') {
          const answer = await call<{ backfill: Backfill | null }>(url, token, SHOW, { backfillId });
          if (!answer.error && answer.data?.backfill === null) {
            io.err(`error: BACKFILL_NOT_FOUND: no backfill ${backfillId}`);
            return EXIT_CODES.notFound;
          }
          return print(answer, (data) => [
            ...backfillLines(data.backfill!),
            '',
            ...formatTable(data.backfill!.dates!, ['position', 'businessDate', 'status', 'reason', 'runId', 'startDispatchStatus']),
          ]);
        }
        const field = CONTROLS[action as keyof typeof CONTROLS];
        const answer = await call<Record<string, { changed: boolean; backfill: Backfill }>>(url, token, control(field), {
          input: { backfillId, reason: reason() },
        });
        return print(answer, (data) => {
          const { changed, backfill } = data[field]!;
          return [`${backfill.status}${unchanged(changed)}`, progressLine(backfill)];
        });
      }
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${JOB_USAGE}`);
      return EXIT_CODES.usage;
    }
    io.err(`error: no answer from ${url}: ${(error as Error).cause ?? (error as Error).message}`);
    return EXIT_CODES.unavailable;
  }
  return EXIT_CODES.usage;
}
