// The operator's commands for runbooks: `load-control runs|run|alerts|resolve|resend|cancel|reissue|resume|bulk`, through
// the API like the console (the token decides what is allowed, and every action is recorded under its name).
import { parseArgs } from 'node:util';
import { RUN_ID_PREFIX, idDigits } from '../domain/runs/run-id-prefix.js';
import { RUN_STATUSES } from '../domain/states.js';
import { EVENT_LEVELS } from '../domain/events/events.js';
import { RUN_EVENT_PAGE_TEXT } from '../contract/run-event-page.js';
import { ACKNOWLEDGE_ALERT_GROUP_TEXT, SNOOZE_ALERT_GROUP_TEXT } from '../contract/alert-group-actions.js';
import { parseDuration } from '../config/durations.js';

const OPERATOR_COMMANDS = ['runs', 'run', 'alerts', 'resolve', 'resend', 'cancel', 'reissue', 'resume', 'bulk'] as const;
type OperatorCommand = (typeof OPERATOR_COMMANDS)[number];

export const isOperatorCommand = (command: string | undefined): command is OperatorCommand =>
  (OPERATOR_COMMANDS as readonly string[]).includes(command ?? '');

/**
 * Exit codes, for scripts: what went wrong decides what to do next (retry, fix the call, page someone).
 * A soft refusal the API answers 200 (`changed: false`: already done) exits 0.
 */
export const EXIT_CODES = {
  done: 0,
  /** A 500, or an answer that is not the API's: a bug to report. */
  failed: 1,
  /** Wrong arguments, or no token. */
  usage: 2,
  /** 404: no such run, partition, dispatch or alert group. */
  notFound: 3,
  /** 409 or 422: the ledger refused (the run is not in a state that allows it, the input is invalid). */
  refused: 4,
  /** 401 or 403: the token is unknown or lacks the role. */
  notAllowed: 5,
  /** 503 or no answer: the API or its database is unavailable; try again later. */
  unavailable: 6,
} as const;

export const OPERATOR_USAGE = `operator commands (through the API: --url or LC_URL, default http://127.0.0.1:8080;
--token or LC_TOKEN; --json prints the API's data instead of a table; a run id may be its first digits, as the
console shows them, if no other run's begin so):
  runs [--status S] [--job TEXT] [--since DATE] [--active] [--tag KEY=VALUE]... [--limit N]
                        runs, newest first (at most N, default 50); --job: job keys containing TEXT, in any case;
                        --tag: runs carrying the tag (every one given)
  run <runId>           one run: counts, tags, flow, partitions by status and carried over, dispatches, its last 20 events
  run <runId> --events [--level L] [--kind K] [--partition P] [--operator] [--before CURSOR | --page N]
                        a page of its events, newest first (50): L and above, of kind K, of partition P, operator
                        actions only; the next (older) page after --before the cursor printed, or page N (1: newest)
  alerts [--all]        what needs a person: one line per alert group, by its key (KIND:CAUSE_TYPE:cause; the
                        cause a webhook receiver, a gate, a job), with its count, first and last time and who
                        acknowledged it, snoozed groups left out; --all: every alert, one a line, with its
                        dispatch and its group's key, snoozed or not
  alerts ack <groupKey> --note TEXT
                        acknowledge the group's alerts present now; a new alert of it raises the group again
  alerts snooze <groupKey> (--for DURATION | --until TIME) --note TEXT
                        leave the group out of the list, the console and its toasts until then (at most 7 days
                        ahead), whatever is raised meanwhile; DURATION as 90m, 4h, 1d12h or ISO-8601 (PT4H),
                        TIME an instant with an offset (2026-12-01T06:00:00Z)
  resolve <runId> --as PUBLISHED|FAILED_PUBLISH --reason TEXT
                        decide a PUBLISH_UNKNOWN run
  resend [<runId>] <dispatchId> [--reason TEXT]
                        queue a DEAD or SENT dispatch again: after its run's id, its first digits do;
                        alone, its whole id (any dispatch: a run's, an ALERT_WEBHOOK or GATE_READY call)
  cancel <runId> --reason TEXT
                        end an active run that has not started publishing
  reissue <runId> <partitionId> --reason TEXT
                        take a RUNNING partition from its owner and ask NiFi to extract it again
  resume <runId> --reason TEXT
                        a new attempt of a failed run at its SCN: its SUCCESS partitions carried, the others extracted again
  bulk cancel|resend|reissue [--job KEY] [--status S] [--from DATE] [--to DATE] [--error-code CODE] [--dry-run]
       [--reason TEXT]  one action over the rows the filter selects (at most the server's bulk.maxTargets):
                        cancel its active runs, resend their DEAD dispatches, reissue their timed-out partitions;
                        --dry-run lists the targets and changes nothing (no reason needed); the apply needs
                        --reason; exits 4 when a target was refused
exit codes: 0 done, 1 failed (a bug), 2 usage, 3 not found, 4 refused by the ledger, 5 not allowed,
            6 unavailable (try again)`;

export interface OperatorIo {
  out: (line: string) => void;
  err: (line: string) => void;
  env: NodeJS.ProcessEnv;
}

class UsageError extends Error {}

export interface GraphQLAnswer<T = unknown> {
  status: number;
  data: T | null;
  error: { code: string; message: string; details?: unknown } | null;
}

type Row = Record<string, unknown>;
type RunRow = Row & {
  startedAt: string;
  successPartitionCount: number;
  failedPartitionCount: number;
  expectedPartitionCount: number | null;
};
type Changed = { runStatus: string; changed: boolean };
type CarriedRow = { fromRunId: string; partitionIds: string[] };
type AlertGroupRow = Row & {
  groupKey: string;
  acknowledged: boolean;
  unacknowledgedCount: number;
  acknowledgement: { by: string; at: string; note: string } | null;
  latest: { runId: string | null; message: string | null };
};

/** A group as one line: its key (what `alerts ack|snooze` take), and what an operator said of it. */
const groupLine = (g: AlertGroupRow): Row => ({
  ...g,
  state: g.acknowledgement
    ? g.acknowledged
      ? `acknowledged by ${g.acknowledgement.by}: ${g.acknowledgement.note}`
      : `${g.unacknowledgedCount} new since acknowledged by ${g.acknowledgement.by}`
    : 'open',
  latestRun: g.latest.runId,
  message: g.latest.message,
});

const REQUEST_TIMEOUT_MS = 30_000;

export async function call<T>(url: string, token: string, query: string, variables: Record<string, unknown>): Promise<GraphQLAnswer<T>> {
  const response = await fetch(new URL('/graphql', url), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const body = (await response.json().catch(() => null)) as {
    data?: T | null;
    errors?: Array<{ message: string; extensions?: { code?: string; details?: unknown } }>;
  } | null;
  const first = body?.errors?.[0];
  return {
    status: response.status,
    data: body?.data ?? null,
    error: first
      ? { code: first.extensions?.code ?? 'UNKNOWN', message: first.message, details: first.extensions?.details }
      : body
        ? null
        : { code: 'NOT_THE_API', message: `HTTP ${response.status} without a GraphQL answer from ${url}` },
  };
}

export function exitCodeFor(answer: GraphQLAnswer<unknown>): number {
  if (!answer.error) return EXIT_CODES.done;
  if (answer.status === 404) return EXIT_CODES.notFound;
  if (answer.status === 409 || answer.status === 422) return EXIT_CODES.refused;
  if (answer.status === 401 || answer.status === 403) return EXIT_CODES.notAllowed;
  if (answer.status === 503) return EXIT_CODES.unavailable;
  return EXIT_CODES.failed;
}

/** Rows as aligned columns, the header first; empty cells show as '-'. */
export function formatTable(rows: Array<Record<string, unknown>>, columns: string[]): string[] {
  const cell = (value: unknown) => (value === null || value === undefined || value === '' ? '-' : String(value));
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))];
}

const RUN_ROW = `runId jobKey businessKey status startedAt completedAt successPartitionCount failedPartitionCount
  expectedPartitionCount errorCode`;
const RUNS = `query($filter: RunFilter, $first: Int, $after: String) {
  runs(filter: $filter, first: $first, after: $after) { nodes { ${RUN_ROW} } pageInfo { hasNextPage endCursor } } }`;
const RUN = `query($runId: UUID!) { run(runId: $runId) {
  ${RUN_ROW} sourceCount extractedCount stagingCount targetCount hdfsRunPath stageTable snapshotScn heartbeatAt
  publishStartedAt publishToken publishQueryId errorStage errorMessage purgedAt
  tags { key value } flowRegistry flowBucket flowId flowVersion resumedFromRunId resumedAsRunId
  partitionCounts { status count }
  carriedPartitions { fromRunId partitionIds }
  dispatches { dispatchId dispatchType partitionId status attemptCount lastHttpStatus lastError createdAt deadAt }
  events(last: 20) { eventTime level name partitionId actor message } } }`;
const ALERTS = `{ monitorSummary(alertLimit: 100) { alerts {
  severity kind jobKey businessKey runId status at message dispatchId partitionId groupKey } } }`;
const ALERT_GROUPS = `{ monitorSummary { alertGroups {
  groupKey severity kind causeType cause count firstAt lastAt acknowledged unacknowledgedCount acknowledgement { by at note }
  latest { runId message } } } }`;
const RUNS_BY_PREFIX = `query($prefix: String!) { runs(filter: { runIdPrefix: $prefix }, first: 6) { nodes { runId jobKey businessKey } } }`;
const RUN_DISPATCHES = `query($runId: UUID!) { run(runId: $runId) { dispatches { dispatchId dispatchType } } }`;
const RESOLVE = `mutation($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { runStatus changed } }`;
const RESEND = `mutation($input: ResendDispatchInput!) { resendDispatch(input: $input) { dispatchId status } }`;
const CANCEL = `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus changed } }`;
const REISSUE = `mutation($input: ReissuePartitionInput!) { reissuePartition(input: $input) { partitionStatus dispatchId } }`;
const RESUME = `mutation($input: ResumeRunInput!) {
  resumeRun(input: $input) { runId status hdfsRunPath carriedPartitions reissuedPartitions } }`;
/** Carried partition ids `run` lists before it says how many more. */
const CARRIED_IDS_SHOWN = 20;
const BULK = `mutation($input: BulkActionInput!) { bulkAction(input: $input) {
  bulkActionId dryRun limit changed alreadySo refused refusals { code count }
  targets { runId jobKey businessKey runStatus dispatchId partitionId outcome code } } }`;
const BULK_ACTIONS: Record<string, string> = { cancel: 'CANCEL_RUNS', resend: 'RESEND_DISPATCHES', reissue: 'REISSUE_PARTITIONS' };
type BulkAnswer = {
  bulkAction: Row & { dryRun: boolean; changed: number; alreadySo: number; refused: number; targets: Row[]; refusals: Row[] };
};

/** The options that only `alerts ack|snooze` take. */
const ALERT_ACTION_FLAGS = ['note', 'for', 'until'] as const;

const MAX_LIMIT = 10_000;
const EVENTS_PAGE = 50;
/** `--page N` walks the pages before it: far enough back for a runbook, bounded for the API. */
const MAX_EVENT_PAGES = 100;
/** The options that only `run --events` takes. */
const EVENT_FLAGS = ['level', 'kind', 'partition', 'operator', 'before', 'page'] as const;
const PAGE = 500;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An answer the command gives itself, without asking the API for what it was asked. */
class Refusal extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
  ) {
    super(message);
  }
}

/** `--status`: a run status, named as the console and the API name it. */
function parseStatus(text: string): string {
  const status = text.toUpperCase();
  if (!(RUN_STATUSES as readonly string[]).includes(status)) {
    throw new UsageError(`--status: ${JSON.stringify(text)} is not a run status; one of ${RUN_STATUSES.join(', ')}`);
  }
  return status;
}

/** `--level`: an event level, in any case. */
function parseLevel(text: string): string {
  const level = text.toUpperCase();
  if (!(EVENT_LEVELS as readonly string[]).includes(level))
    throw new UsageError(`--level: ${JSON.stringify(text)} is not an event level; one of ${EVENT_LEVELS.join(', ')}`);
  return level;
}

/** `--since`: a date (its midnight UTC) or an instant with an offset. */
function parseSince(text: string): Date {
  const instant = new Date(/^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text);
  if (Number.isNaN(instant.getTime()) || !/^\d{4}-\d{2}-\d{2}($|T.*(Z|[+-]\d{2}:?\d{2})$)/.test(text)) {
    throw new UsageError(`--since: ${JSON.stringify(text)} is not a date (2026-12-01) or an instant with an offset (2026-12-01T06:00:00Z)`);
  }
  return instant;
}

/** `--until`: an instant with an offset, as `--since` takes one. */
function parseUntil(text: string): Date {
  const instant = new Date(text);
  if (Number.isNaN(instant.getTime()) || !/^\d{4}-\d{2}-\d{2}T.*(Z|[+-]\d{2}:?\d{2})$/.test(text))
    throw new UsageError(`--until: ${JSON.stringify(text)} is not an instant with an offset (2026-12-01T06:00:00Z)`);
  return instant;
}

const COMPACT_DURATION = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/i;
const COMPACT_UNITS_MS = [86_400_000, 3_600_000, 60_000, 1000];

/** `--for`: 90m, 4h, 1d12h as one types them, or what configuration durations take (ISO-8601, seconds); in ms. */
function parseSnoozeFor(text: string): number {
  const compact = COMPACT_DURATION.exec(text);
  let ms: number;
  if (compact && text !== '') {
    ms = compact.slice(1).reduce((sum, amount, i) => sum + Number(amount ?? 0) * COMPACT_UNITS_MS[i]!, 0);
  } else {
    try {
      ms = parseDuration(text);
    } catch {
      throw new UsageError(`--for: ${JSON.stringify(text)} is not a duration; 90m, 4h, 1d12h or ISO-8601 (PT4H)`);
    }
  }
  if (ms <= 0) throw new UsageError('--for: must be longer than 0');
  return ms;
}

export async function runOperatorCommand(argv: string[], io: OperatorIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv, io.env);
  } catch (error) {
    io.err(`${error instanceof Error ? error.message : String(error)}\n\n${OPERATOR_USAGE}`);
    return EXIT_CODES.usage;
  }
  const { command, args, values, url, token } = parsed;
  const print = (answer: GraphQLAnswer<unknown>, table: () => string[]): number => {
    const code = exitCodeFor(answer);
    if (answer.error) {
      io.err(`error: ${answer.error.code} (HTTP ${answer.status}): ${answer.error.message}`);
      if (answer.error.details !== undefined) io.err(`details: ${JSON.stringify(answer.error.details)}`);
    } else if (values.json) {
      io.out(JSON.stringify(answer.data, null, 2));
    } else {
      for (const line of table()) io.out(line);
    }
    return code;
  };

  /** A whole run id, or the one run whose id begins with the digits given. */
  const runIdOf = async (id: string): Promise<string> => {
    if (UUID.test(id) || !RUN_ID_PREFIX.test(id)) return id;
    const answer = await call<{ runs: { nodes: Row[] } }>(url, token, RUNS_BY_PREFIX, { prefix: id });
    if (answer.error)
      throw new Refusal(exitCodeFor(answer), `error: ${answer.error.code} (HTTP ${answer.status}): ${answer.error.message}`);
    const runs = answer.data!.runs.nodes;
    if (runs.length === 0) throw new Refusal(EXIT_CODES.notFound, `error: RUN_NOT_FOUND: no run id begins with ${id}`);
    if (runs.length > 1) {
      const listed = runs.map((r) => `  ${r.runId}  ${r.jobKey} ${r.businessKey}`);
      throw new UsageError(
        `${id} begins the ids of ${runs.length > 5 ? 'more than 5' : runs.length} runs; give more digits:\n${listed.slice(0, 5).join('\n')}`,
      );
    }
    return String(runs[0]!.runId);
  };
  /** A whole dispatch id, or the one dispatch of the run whose id begins with the digits given. */
  const dispatchIdOf = async (runId: string, id: string): Promise<string> => {
    if (UUID.test(id) || !RUN_ID_PREFIX.test(id)) return id;
    const answer = await call<{ run: { dispatches: Row[] } | null }>(url, token, RUN_DISPATCHES, { runId });
    if (answer.error)
      throw new Refusal(exitCodeFor(answer), `error: ${answer.error.code} (HTTP ${answer.status}): ${answer.error.message}`);
    const matching = (answer.data!.run?.dispatches ?? []).filter((d) => idDigits(String(d.dispatchId)).startsWith(idDigits(id)));
    if (matching.length === 0)
      throw new Refusal(EXIT_CODES.notFound, `error: DISPATCH_NOT_FOUND: no dispatch of run ${runId} begins with ${id}`);
    if (matching.length > 1)
      throw new UsageError(`${id} begins the ids of ${matching.length} dispatches of run ${runId}; give more digits`);
    return String(matching[0]!.dispatchId);
  };

  /** `run <id> --events`: one page of the run's events, found by its cursor or by walking to page N. */
  const runEvents = async (runId: string): Promise<number> => {
    if (values.before !== undefined && values.page !== undefined) throw new UsageError('--before and --page: one of them');
    const pageNumber = values.page === undefined ? 1 : Number(values.page);
    if (!Number.isInteger(pageNumber) || pageNumber < 1 || pageNumber > MAX_EVENT_PAGES)
      throw new UsageError(`--page: an integer from 1 to ${MAX_EVENT_PAGES}`);
    const variables = {
      runId,
      first: EVENTS_PAGE,
      minLevel: values.level === undefined ? null : parseLevel(values.level),
      name: values.kind?.toUpperCase() ?? null,
      partitionId: values.partition ?? null,
      operatorActions: values.operator ?? null,
    };
    type EventPage = { nodes: Row[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } };
    let after = values.before ?? null;
    let answer: GraphQLAnswer<{ run: { eventPage: EventPage } | null }>;
    for (let page = 1; ; page++) {
      answer = await call(url, token, RUN_EVENT_PAGE_TEXT, { ...variables, after });
      const events = answer.data?.run?.eventPage;
      if (answer.error || !events || page === pageNumber) break;
      if (!events.pageInfo.hasNextPage) {
        answer = { ...answer, data: { run: { eventPage: { nodes: [], pageInfo: { hasNextPage: false, endCursor: null } } } } };
        break;
      }
      after = events.pageInfo.endCursor;
    }
    if (!answer.error && !answer.data?.run) throw new Refusal(EXIT_CODES.notFound, `error: RUN_NOT_FOUND: no run ${runId}`);
    return print(answer, () => {
      const page = answer.data!.run!.eventPage;
      return [
        ...formatTable(page.nodes, ['eventTime', 'level', 'name', 'partitionId', 'actor', 'errorCode', 'message']),
        ...(page.pageInfo.hasNextPage ? ['', `older events: --before ${page.pageInfo.endCursor}`] : []),
      ];
    });
  };

  /** `alerts ack|snooze <groupKey>`: an operator's word on a group, as the console says it. */
  const alertGroupAction = async (action: 'ack' | 'snooze', rest: string[]): Promise<number> => {
    const groupKey = needArgs(rest, ['groupKey'])[0]!;
    if (!values.note) throw new UsageError('--note: why, for the event log (at least 5 characters)');
    const notFound = (answer: GraphQLAnswer<unknown>) => {
      if (answer.error?.code === 'ALERT_GROUP_NOT_FOUND')
        throw new Refusal(
          EXIT_CODES.notFound,
          `error: ALERT_GROUP_NOT_FOUND: no alert of group ${groupKey} is present now; load-control alerts lists the groups by key`,
        );
    };
    const unchanged = (changed: boolean) => (changed ? '' : ' (unchanged: it was already so)');
    if (action === 'ack') {
      if (values.for !== undefined || values.until !== undefined) throw new UsageError('--for and --until: only with alerts snooze');
      const answer = await call<{ acknowledgeAlertGroup: { groupKey: string; changed: boolean; count: number } }>(
        url,
        token,
        ACKNOWLEDGE_ALERT_GROUP_TEXT,
        { input: { groupKey, note: values.note } },
      );
      notFound(answer);
      return print(answer, () => {
        const acknowledged = answer.data!.acknowledgeAlertGroup;
        return [`acknowledged ${acknowledged.groupKey}: ${acknowledged.count} alert(s)${unchanged(acknowledged.changed)}`];
      });
    }
    if ((values.for === undefined) === (values.until === undefined)) throw new UsageError('alerts snooze: --for DURATION or --until TIME');
    const until = values.until === undefined ? new Date(Date.now() + parseSnoozeFor(values.for!)) : parseUntil(values.until);
    const answer = await call<{ snoozeAlertGroup: { groupKey: string; changed: boolean; until: string } }>(
      url,
      token,
      SNOOZE_ALERT_GROUP_TEXT,
      { input: { groupKey, until: until.toISOString(), note: values.note } },
    );
    notFound(answer);
    return print(answer, () => {
      const snoozed = answer.data!.snoozeAlertGroup;
      return [`snoozed ${snoozed.groupKey} until ${snoozed.until}${unchanged(snoozed.changed)}`];
    });
  };

  try {
    switch (command) {
      case 'runs': {
        const limit = values.limit === undefined ? 50 : Number(values.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)
          throw new UsageError(`--limit: must be an integer from 1 to ${MAX_LIMIT}`);
        const since = values.since === undefined ? null : parseSince(values.since);
        const filter = {
          status: values.status === undefined ? null : parseStatus(values.status),
          jobKeyContains: values.job ?? null,
          activeOnly: values.active ?? null,
          tags: values.tag?.length ? values.tag.join(',') : null,
        };
        const runs: RunRow[] = [];
        let after: string | null = null;
        let answer: GraphQLAnswer<{ runs: { nodes: RunRow[]; pageInfo: { hasNextPage: boolean; endCursor: string } } }>;
        // newest first: pages are read until the limit or a run older than --since
        for (;;) {
          answer = await call(url, token, RUNS, { filter, first: Math.min(PAGE, limit - runs.length), after });
          if (answer.error) break;
          const page = answer.data!.runs;
          const kept = page.nodes.filter((run) => !since || new Date(run.startedAt) >= since);
          runs.push(...kept);
          if (kept.length < page.nodes.length || !page.pageInfo.hasNextPage || runs.length >= limit) break;
          after = page.pageInfo.endCursor;
        }
        return print(answer.error ? answer : { ...answer, data: { runs } }, () =>
          formatTable(
            runs.map((r) => ({
              ...r,
              partitions: `${r.successPartitionCount}/${r.failedPartitionCount}/${r.expectedPartitionCount ?? '-'}`,
            })),
            ['runId', 'jobKey', 'businessKey', 'status', 'partitions', 'startedAt', 'completedAt', 'errorCode'],
          ),
        );
      }
      case 'run': {
        const runId = await runIdOf(needArgs(args, ['runId'])[0]!);
        if (values.events) return await runEvents(runId);
        for (const flag of EVENT_FLAGS) if (values[flag] !== undefined) throw new UsageError(`--${flag}: only with --events`);
        const answer = await call<{
          run: Row & { partitionCounts: Row[]; dispatches: Row[]; events: Row[]; tags: Row[]; carriedPartitions: CarriedRow[] };
        }>(url, token, RUN, { runId });
        return print(answer, () => {
          const run = answer.data!.run;
          const fields = [
            'runId',
            'jobKey',
            'businessKey',
            'status',
            'sourceCount',
            'extractedCount',
            'stagingCount',
            'targetCount',
            'snapshotScn',
            'hdfsRunPath',
            'stageTable',
            'startedAt',
            'heartbeatAt',
            'completedAt',
            'publishStartedAt',
            'publishToken',
            'publishQueryId',
            'errorStage',
            'errorCode',
            'errorMessage',
            'purgedAt',
            'tags',
            'flow',
            'resumedFromRunId',
            'resumedAsRunId',
          ];
          const shown: Row = {
            ...run,
            tags: run.tags.map((tag) => `${tag.key}=${tag.value}`).join(',') || null,
            flow: run.flowId ? `${run.flowRegistry ?? '-'} / ${run.flowBucket ?? '-'} / ${run.flowId} v${run.flowVersion ?? '-'}` : null,
          };
          const width = Math.max(...fields.map((f) => f.length));
          return [
            ...fields.map((f) => `${f.padEnd(width)}  ${shown[f] ?? '-'}`),
            '',
            'partitions',
            ...formatTable(run.partitionCounts, ['status', 'count']),
            ...run.carriedPartitions.flatMap((c) => {
              const more = c.partitionIds.length - CARRIED_IDS_SHOWN;
              const ids = c.partitionIds.slice(0, CARRIED_IDS_SHOWN).join(' ') + (more > 0 ? ` … and ${more} more` : '');
              return [`carried over from ${c.fromRunId}: ${c.partitionIds.length} partitions: ${ids}`];
            }),
            '',
            'dispatches',
            ...formatTable(run.dispatches, [
              'dispatchId',
              'dispatchType',
              'partitionId',
              'status',
              'attemptCount',
              'lastHttpStatus',
              'lastError',
              'deadAt',
            ]),
            '',
            'events (last 20)',
            ...formatTable(run.events, ['eventTime', 'level', 'name', 'partitionId', 'actor', 'message']),
          ];
        });
      }
      case 'alerts': {
        const [action, ...rest] = args;
        if (action === 'ack' || action === 'snooze') return await alertGroupAction(action, rest);
        if (action !== undefined) throw new UsageError(`alerts: ${JSON.stringify(action)} is not ack or snooze`);
        for (const flag of ALERT_ACTION_FLAGS)
          if (values[flag] !== undefined) throw new UsageError(`--${flag}: only with alerts ack|snooze`);
        if (!values.all) {
          const groups = await call<{ monitorSummary: { alertGroups: AlertGroupRow[] } }>(url, token, ALERT_GROUPS, {});
          return print(groups, () =>
            formatTable(groups.data!.monitorSummary.alertGroups.map(groupLine), [
              'groupKey',
              'severity',
              'count',
              'firstAt',
              'lastAt',
              'state',
              'latestRun',
              'message',
            ]),
          );
        }
        const answer = await call<{ monitorSummary: { alerts: Row[] } }>(url, token, ALERTS, {});
        return print(answer, () =>
          formatTable(answer.data!.monitorSummary.alerts, [
            'severity',
            'kind',
            'jobKey',
            'businessKey',
            'runId',
            'status',
            'at',
            'dispatchId',
            'groupKey',
            'message',
          ]),
        );
      }
      case 'resolve': {
        const runId = await runIdOf(needArgs(args, ['runId'])[0]!);
        const resolution = values.as;
        if (resolution !== 'PUBLISHED' && resolution !== 'FAILED_PUBLISH') throw new UsageError('--as: PUBLISHED or FAILED_PUBLISH');
        const answer = await call<{ resolveUnknown: Changed }>(url, token, RESOLVE, {
          input: { runId, resolution, reason: needReason(values.reason) },
        });
        return print(answer, () => changedLine(answer.data!.resolveUnknown));
      }
      case 'resend': {
        if (args.length < 1 || args.length > 2) throw new UsageError('expects [<runId>] <dispatchId>');
        const runId = args.length === 2 ? await runIdOf(args[0]!) : null;
        const dispatchId = runId ? await dispatchIdOf(runId, args[1]!) : args[0]!;
        const answer = await call<{ resendDispatch: { dispatchId: string; status: string } }>(url, token, RESEND, {
          input: { runId, dispatchId, reason: values.reason ?? null },
        });
        return print(answer, () => [`dispatch ${answer.data!.resendDispatch.dispatchId}: ${answer.data!.resendDispatch.status}`]);
      }
      case 'cancel': {
        const runId = await runIdOf(needArgs(args, ['runId'])[0]!);
        const answer = await call<{ cancelRun: Changed }>(url, token, CANCEL, { input: { runId, reason: needReason(values.reason) } });
        return print(answer, () => changedLine(answer.data!.cancelRun));
      }
      case 'reissue': {
        const [shortRunId, partitionId] = needArgs(args, ['runId', 'partitionId']);
        const runId = await runIdOf(shortRunId!);
        const answer = await call<{ reissuePartition: { partitionStatus: string; dispatchId: string } }>(url, token, REISSUE, {
          input: { runId, partitionId, reason: needReason(values.reason) },
        });
        return print(answer, () => [
          `partition ${partitionId}: ${answer.data!.reissuePartition.partitionStatus}, dispatch ${answer.data!.reissuePartition.dispatchId}`,
        ]);
      }
      case 'resume': {
        const runId = await runIdOf(needArgs(args, ['runId'])[0]!);
        const answer = await call<{ resumeRun: Row }>(url, token, RESUME, { input: { runId, reason: needReason(values.reason) } });
        return print(answer, () => {
          const resumed = answer.data!.resumeRun;
          return [
            `resumed as ${resumed.runId}: ${resumed.status}, ${resumed.carriedPartitions} partitions carried over, ` +
              `${resumed.reissuedPartitions} to extract again under ${resumed.hdfsRunPath}`,
          ];
        });
      }
      case 'bulk': {
        const [kind] = needArgs(args, ['cancel|resend|reissue']);
        const action = BULK_ACTIONS[kind!];
        if (!action) throw new UsageError(`bulk: ${JSON.stringify(kind)} is not one of cancel, resend, reissue`);
        const filter = {
          jobKey: values.job ?? null,
          status: values.status === undefined ? null : parseStatus(values.status),
          businessDateFrom: values.from ?? null,
          businessDateTo: values.to ?? null,
          errorCode: values['error-code'] ?? null,
        };
        const answer = await call<BulkAnswer>(url, token, BULK, {
          input: {
            action,
            filter,
            dryRun: values['dry-run'] ?? false,
            reason: values['dry-run'] ? (values.reason ?? null) : needReason(values.reason),
          },
        });
        const code = print(answer, () => {
          const result = answer.data!.bulkAction;
          const verb = result.dryRun ? 'would be' : 'were';
          const refusals = (result.refusals as Array<{ code: string; count: number }>).map((r) => `${r.code} ${r.count}`).join(', ');
          return [
            ...formatTable(result.targets, ['runId', 'jobKey', 'businessKey', 'runStatus', 'dispatchId', 'partitionId', 'outcome', 'code']),
            '',
            `${result.targets.length} target(s) (at most ${result.limit}): ${result.changed} ${verb} changed, ${result.alreadySo} already so, ` +
              `${result.refused} refused${refusals ? ` (${refusals})` : ''}${result.dryRun ? '; dry run: nothing changed' : `; bulk action ${result.bulkActionId}`}`,
          ];
        });
        return code === EXIT_CODES.done && !answer.data!.bulkAction.dryRun && answer.data!.bulkAction.refused > 0
          ? EXIT_CODES.refused
          : code;
      }
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`${error.message}\n\n${OPERATOR_USAGE}`);
      return EXIT_CODES.usage;
    }
    if (error instanceof Refusal) {
      io.err(error.message);
      return error.exitCode;
    }
    io.err(`error: no answer from ${url}: ${(error as Error).cause ?? (error as Error).message}`);
    return EXIT_CODES.unavailable;
  }
}

function parse(argv: string[], env: NodeJS.ProcessEnv) {
  const [command, ...rest] = argv;
  if (!isOperatorCommand(command)) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: {
      url: { type: 'string' },
      token: { type: 'string' },
      json: { type: 'boolean' },
      status: { type: 'string' },
      job: { type: 'string' },
      since: { type: 'string' },
      active: { type: 'boolean' },
      limit: { type: 'string' },
      as: { type: 'string' },
      reason: { type: 'string' },
      tag: { type: 'string', multiple: true },
      from: { type: 'string' },
      to: { type: 'string' },
      'error-code': { type: 'string' },
      'dry-run': { type: 'boolean' },
      all: { type: 'boolean' },
      events: { type: 'boolean' },
      level: { type: 'string' },
      kind: { type: 'string' },
      partition: { type: 'string' },
      operator: { type: 'boolean' },
      before: { type: 'string' },
      page: { type: 'string' },
      note: { type: 'string' },
      for: { type: 'string' },
      until: { type: 'string' },
    },
    allowPositionals: true,
  });
  const token = values.token ?? env.LC_TOKEN;
  if (!token) throw new UsageError('a token is needed: --token or LC_TOKEN');
  const url = values.url ?? env.LC_URL ?? 'http://127.0.0.1:8080';
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol))
    throw new UsageError(`--url: ${JSON.stringify(url)} is not an http(s) URL`);
  return { command, args: positionals, values, url, token };
}

function needArgs(args: string[], names: string[]): string[] {
  if (args.length !== names.length) {
    throw new UsageError(names.length ? `expects ${names.map((n) => `<${n}>`).join(' ')}` : 'takes no arguments');
  }
  return args;
}

function needReason(reason: string | undefined): string {
  if (!reason) throw new UsageError('--reason: why, for the event log (at least 5 characters)');
  return reason;
}

const changedLine = (payload: Changed) => [`${payload.runStatus}${payload.changed ? '' : ' (unchanged: it was already so)'}`];
