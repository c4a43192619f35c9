// The operator's commands against a real API: tables, --json, what each action does, and the exit codes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi, type TokenName } from '../../support/api.js';
import { freePort, runCli } from '../../support/cli.js';
import { claim, completeRun, createRun, failCreatedRun, JOB, startRun, toPublishUnknown } from '../../support/fixtures.js';
import { EXIT_CODES, formatTable, runOperatorCommand } from '../../../src/commands/operator.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function operator(argv: string[], token: TokenName | null = 'operator', env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOperatorCommand(argv, {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: { LC_URL: api.url, ...(token ? { LC_TOKEN: TOKENS[token] } : {}), ...env },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('load-control runs', () => {
  it('lists runs newest first as a table, or as JSON, filtered by status, job, start and count', async () => {
    const older = await startRun(api, [1]);
    const newer = await createRun(api);
    const table = await operator(['runs', '--limit', '2'], 'viewer');
    expect(table.code).toBe(EXIT_CODES.done);
    const lines = table.out.split('\n');
    expect(lines[0]).toMatch(/^runId\s+jobKey\s+businessKey\s+status\s+partitions\s+startedAt\s+completedAt\s+errorCode$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([newer.runId, older.runId]);
    expect(lines[2]).toMatch(/EXTRACTING\s+0\/0\/1\s/);

    const json = await operator(['runs', '--status', 'CREATED', '--json'], 'viewer');
    const runs = (JSON.parse(json.out) as { runs: Array<{ runId: string; status: string }> }).runs;
    expect(runs.map((r) => r.runId)).toContain(newer.runId);
    expect(new Set(runs.map((r) => r.status))).toEqual(new Set(['CREATED']));

    const future = await operator(['runs', '--since', '2999-01-01', '--json'], 'viewer');
    expect(JSON.parse(future.out)).toEqual({ runs: [] });
    const sinceOlder = await operator(['runs', '--since', new Date(Date.now() - 60_000).toISOString(), '--json'], 'viewer');
    expect((JSON.parse(sinceOlder.out).runs as Array<{ runId: string }>).map((r) => r.runId)).toEqual(
      expect.arrayContaining([newer.runId, older.runId]),
    );
    const otherJob = await operator(['runs', '--job', 'NO_SUCH_JOB', '--json'], 'viewer');
    expect(JSON.parse(otherJob.out)).toEqual({ runs: [] });
  });
});

describe('load-control run and alerts', () => {
  it('shows one run with its partitions, dispatches and events, and the alerts that need a person', async () => {
    const unknown = await toPublishUnknown(api, 'HS2_TIMEOUT');
    const shown = await operator(['run', unknown.runId], 'viewer');
    expect(shown.code).toBe(EXIT_CODES.done);
    expect(shown.out).toMatch(new RegExp(`^runId\\s+${unknown.runId}$`, 'm'));
    expect(shown.out).toMatch(/^status\s+PUBLISH_UNKNOWN$/m);
    expect(shown.out).toMatch(new RegExp(`^publishToken\\s+${unknown.publishToken}$`, 'm'));
    expect(shown.out).toContain('\npartitions\nstatus   count\nSUCCESS  2');
    expect(shown.out).toMatch(/VALIDATE_RUN\s+-\s+ACKED/);
    expect(shown.out).toMatch(/PUBLISH_UNKNOWN\s+-\s+nifi-cluster\s+no answer from HiveServer2/);

    // one line per group, by its key: the PUBLISH_UNKNOWN runs of the job are one group, its latest run shown
    const groups = await operator(['alerts'], 'viewer');
    expect(groups.out.split('\n')[0]).toMatch(/^groupKey\s+severity\s+count\s+firstAt\s+lastAt\s+state\s+latestRun\s+message$/);
    expect(groups.out).toMatch(
      new RegExp(`^PUBLISH_UNKNOWN:JOB:${JOB}\\s+ERROR\\s+\\d+\\s+\\S+\\s+\\S+\\s+open\\s+${unknown.runId}\\s+no answer`, 'm'),
    );
    // --all: every alert, one a line
    const alerts = await operator(['alerts', '--all'], 'viewer');
    expect(alerts.out).toMatch(new RegExp(`ERROR\\s+PUBLISH_UNKNOWN\\s+\\S+\\s+${unknown.businessKey}\\s+${unknown.runId}`));

    const missing = await operator(['run', randomUUID()], 'viewer');
    expect([missing.code, missing.err]).toEqual([EXIT_CODES.notFound, expect.stringMatching(/^error: RUN_NOT_FOUND \(HTTP 404\)/)]);
    const malformed = await operator(['run', 'not-a-uuid'], 'viewer');
    expect([malformed.code, malformed.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
  });
});

describe('load-control run --events', () => {
  it('pages a run’s events newest first, filtered by level, kind, partition and operator actions, older pages by cursor or number', async () => {
    const run = await startRun(api, [1, 1]);
    const RECORD_EVENT = `mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }`;
    for (let i = 0; i < 60; i++) {
      const input = { runId: run.runId, level: i % 10 === 0 ? 'WARN' : 'INFO', name: 'CHUNK_WRITTEN', partitionId: `000${i % 2}` };
      expect((await api.gql(RECORD_EVENT, { input }, { token: 'nifi' })).body.errors).toBeUndefined();
    }
    expect((await operator(['cancel', run.runId, '--reason', 'paged events test'])).code).toBe(EXIT_CODES.done);

    const first = await operator(['run', run.runId.slice(0, 8), '--events'], 'viewer');
    expect(first.code).toBe(EXIT_CODES.done);
    const lines = first.out.split('\n');
    expect(lines[0]).toMatch(/^eventTime\s+level\s+name\s+partitionId\s+actor\s+errorCode\s+message$/);
    expect(lines[1]).toMatch(/WARN\s+RUN_CANCELLED\s+-\s+alice-operator\s+RUN_CANCELLED\s+paged events test/);
    expect(lines.filter((l) => /^\d{4}-/.test(l))).toHaveLength(50);
    const cursor = /^older events: --before (\S+)$/m.exec(first.out)![1]!;

    const byCursor = await operator(['run', run.runId, '--events', '--before', cursor, '--json'], 'viewer');
    const byNumber = await operator(['run', run.runId, '--events', '--page', '2', '--json'], 'viewer');
    const older = JSON.parse(byCursor.out).run.eventPage;
    expect(JSON.parse(byNumber.out).run.eventPage).toEqual(older);
    const { rows } = await api.sql.query(`SELECT count(*)::int AS n FROM nifi_ops.load_event WHERE run_id = $1`, [run.runId]);
    expect(older.nodes).toHaveLength(rows[0].n - 50);
    expect(older.pageInfo.hasNextPage).toBe(false);
    const beyond = await operator(['run', run.runId, '--events', '--page', '9', '--json'], 'viewer');
    expect(JSON.parse(beyond.out).run.eventPage.nodes).toEqual([]);

    const warnings = JSON.parse(
      (await operator(['run', run.runId, '--events', '--level', 'warn', '--kind', 'chunk_written', '--json'], 'viewer')).out,
    );
    expect(warnings.run.eventPage.nodes.map((e: { level: string }) => e.level)).toEqual(Array(6).fill('WARN'));
    const ofPartition = JSON.parse((await operator(['run', run.runId, '--events', '--partition', '0001', '--json'], 'viewer')).out);
    expect(new Set(ofPartition.run.eventPage.nodes.map((e: { partitionId: string }) => e.partitionId))).toEqual(new Set(['0001']));
    const actions = JSON.parse((await operator(['run', run.runId, '--events', '--operator', '--json'], 'viewer')).out);
    expect(actions.run.eventPage.nodes.map((e: { name: string }) => e.name)).toEqual(['RUN_CANCELLED']);
  });

  it('refuses a bad level, page, both --before and --page, and event flags without --events with exit 2; a foreign cursor with 4', async () => {
    const run = await startRun(api, [1]);
    for (const argv of [
      ['--events', '--level', 'LOUD'],
      ['--events', '--page', '0'],
      ['--events', '--page', '101'],
      ['--events', '--page', '2', '--before', 'abc'],
      ['--kind', 'RUN_FAILED'],
    ]) {
      const refused = await operator(['run', run.runId, ...argv], 'viewer');
      expect(refused.code, argv.join(' ')).toBe(EXIT_CODES.usage);
    }
    const foreign = await operator(['run', run.runId, '--events', '--before', 'abc'], 'viewer');
    expect([foreign.code, foreign.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
  });
});

describe('the operator actions', () => {
  it('resolve a PUBLISH_UNKNOWN run, and say so when it was already resolved; a viewer may not', async () => {
    const run = await toPublishUnknown(api);
    const asViewer = await operator(['resolve', run.runId, '--as', 'PUBLISHED', '--reason', 'checked the target by hand'], 'viewer');
    expect([asViewer.code, asViewer.err]).toEqual([EXIT_CODES.notAllowed, expect.stringMatching(/^error: FORBIDDEN \(HTTP 403\)/)]);
    const resolved = await operator(['resolve', run.runId, '--as', 'PUBLISHED', '--reason', 'checked the target by hand']);
    expect([resolved.code, resolved.out]).toEqual([EXIT_CODES.done, 'PUBLISHED']);
    const again = await operator(['resolve', run.runId, '--as', 'PUBLISHED', '--reason', 'checked the target by hand']);
    expect([again.code, again.out]).toEqual([EXIT_CODES.done, 'PUBLISHED (unchanged: it was already so)']);
    const { rows } = await api.sql.query(
      `SELECT actor, message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'PUBLISH_UNKNOWN_RESOLVED'`,
      [run.runId],
    );
    expect(rows).toEqual([{ actor: 'alice-operator', message: 'checked the target by hand' }]);
  });

  it('resend a DEAD dispatch, cancel a run, reissue a partition; what the ledger refuses exits 4 with its code', async () => {
    const extracted = await completeRun(api);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      extracted.dispatchId,
    ]);
    const resent = await operator(['resend', extracted.runId, extracted.dispatchId]);
    expect([resent.code, resent.out]).toEqual([EXIT_CODES.done, `dispatch ${extracted.dispatchId}: PENDING`]);

    const running = await startRun(api, [5, 5]);
    await claim(api, running.runId, '0000');
    const reissued = await operator(['reissue', running.runId, '0000', '--reason', 'worker node lost']);
    expect(reissued.code).toBe(EXIT_CODES.done);
    expect(reissued.out).toMatch(/^partition 0000: RETRY, dispatch [0-9a-f-]{36}$/);

    const cancelled = await operator(['cancel', running.runId, '--reason', 'loaded twice by mistake']);
    expect([cancelled.code, cancelled.out]).toEqual([EXIT_CODES.done, 'CANCELLED']);
    const late = await operator(['reissue', running.runId, '0001', '--reason', 'too late now']);
    expect([late.code, late.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: RUN_STATUS_MISMATCH \(HTTP 409\)/)]);
    expect(late.err).toContain('details: {"runStatus":"CANCELLED"}');
  });
});

describe('as the console shows them', () => {
  it('takes the short ids the console shows, and says when digits begin several runs or none', async () => {
    const [a, b] = [await createRun(api), await createRun(api)];
    // two runs whose ids share their first eight digits (ids no other test makes: the digits are random)
    const digits = randomUUID().slice(0, 4);
    const [idA, idB] = [`${digits}0000-0000-4000-8000-a00000000000`, `${digits}0000-0000-4000-8000-b00000000000`];
    await api.sql.query('UPDATE nifi_ops.load_run SET run_id = $2 WHERE run_id = $1', [a.runId, idA]);
    await api.sql.query('UPDATE nifi_ops.load_run SET run_id = $2 WHERE run_id = $1', [b.runId, idB]);

    const ambiguous = await operator(['run', `${digits}0000`], 'viewer');
    expect(ambiguous.code).toBe(EXIT_CODES.usage);
    expect(ambiguous.err).toContain(`${digits}0000 begins the ids of 2 runs; give more digits:`);
    expect(ambiguous.err).toContain(`  ${idA}  ${JOB} ${a.businessKey}`);
    const one = await operator(['run', `${digits}0000-0000-4000-8000-A`], 'viewer');
    expect(one.code).toBe(EXIT_CODES.done);
    expect(one.out).toMatch(new RegExp(`^runId\\s+${idA}$`, 'm'));
    const none = await operator(['cancel', `${digits}ffff`, '--reason', 'no such run here'], 'operator');
    expect([none.code, none.err]).toEqual([EXIT_CODES.notFound, `error: RUN_NOT_FOUND: no run id begins with ${digits}ffff`]);

    // a run's dispatch by its first digits too
    const extracted = await completeRun(api);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      extracted.dispatchId,
    ]);
    const resent = await operator(['resend', extracted.runId.slice(0, 8), extracted.dispatchId.slice(0, 8), '--reason', 'receiver mended']);
    expect([resent.code, resent.out]).toEqual([EXIT_CODES.done, `dispatch ${extracted.dispatchId}: PENDING`]);
    const { rows } = await api.sql.query(`SELECT message FROM nifi_ops.load_event WHERE run_id = $1 AND event_name = 'DISPATCH_RESENT'`, [
      extracted.runId,
    ]);
    expect(rows).toEqual([{ message: 'receiver mended' }]);
    // alone, the whole dispatch id: any dispatch, a run's or one of no run (ALERT_WEBHOOK, GATE_READY)
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      extracted.dispatchId,
    ]);
    const alone = await operator(['resend', extracted.dispatchId]);
    expect([alone.code, alone.out]).toEqual([EXIT_CODES.done, `dispatch ${extracted.dispatchId}: PENDING`]);
    const again = await operator(['resend', extracted.dispatchId]);
    expect([again.code, again.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: DISPATCH_STATUS_MISMATCH \(HTTP 409\)/)]);
  });

  it('matches --job as the console does, takes a status in any case, lists alerts with their dispatch, names the role a token lacks', async () => {
    const run = await createRun(api);
    const found = await operator(['runs', '--job', JOB.slice(3, 12).toLowerCase(), '--status', 'created', '--json'], 'viewer');
    expect(found.code).toBe(EXIT_CODES.done);
    const runs = (JSON.parse(found.out) as { runs: Array<{ runId: string; status: string }> }).runs;
    expect(runs.map((r) => r.runId)).toContain(run.runId);
    expect(new Set(runs.map((r) => r.status))).toEqual(new Set(['CREATED']));

    const alerts = await operator(['alerts', '--all'], 'viewer');
    expect(alerts.out.split('\n')[0]).toMatch(
      /^severity\s+kind\s+jobKey\s+businessKey\s+runId\s+status\s+at\s+dispatchId\s+groupKey\s+message$/,
    );

    const asViewer = await operator(['cancel', run.runId, '--reason', 'not mine to cancel'], 'viewer');
    expect([asViewer.code, asViewer.err]).toEqual([
      EXIT_CODES.notAllowed,
      'error: FORBIDDEN (HTTP 403): Forbidden: cancelRun needs the operator role; this token has viewer',
    ]);
  });
});

describe('load-control alerts ack|snooze', () => {
  /** A RUN_FAILED alert of a job of this test's own, so that its group is this test's alone. */
  async function failedRunOfNewJob() {
    const jobKey = `ALERTS_CLI_${randomUUID().slice(0, 8).toUpperCase()}`;
    const run = await createRun(api, { jobKey });
    await failCreatedRun(api, run.runId);
    return { jobKey, runId: run.runId, groupKey: `RUN_FAILED:JOB:${jobKey}` };
  }
  const groupLine = async (groupKey: string, argv: string[] = []) =>
    (await operator(['alerts', ...argv], 'viewer')).out.split('\n').find((line) => line.includes(groupKey));

  it('acknowledges a group by the key `alerts` prints, with a note; a new alert of it raises it again; audited', async () => {
    const { jobKey, runId, groupKey } = await failedRunOfNewJob();
    expect(await groupLine(groupKey)).toMatch(new RegExp(`^${groupKey}\\s+ERROR\\s+1\\s+\\S+\\s+\\S+\\s+open\\s+${runId}\\s`));

    const acknowledged = await operator(['alerts', 'ack', groupKey, '--note', 'known: bad plan, manifest being fixed']);
    expect([acknowledged.code, acknowledged.out]).toEqual([EXIT_CODES.done, `acknowledged ${groupKey}: 1 alert(s)`]);
    expect(await groupLine(groupKey)).toMatch(/\sacknowledged by alice-operator: known: bad plan, manifest being fixed\s/);
    const again = await operator(['alerts', 'ack', groupKey, '--note', 'known: bad plan, manifest being fixed', '--json']);
    expect([again.code, JSON.parse(again.out)]).toEqual([
      EXIT_CODES.done,
      { acknowledgeAlertGroup: { groupKey, changed: false, count: 1 } },
    ]);

    const second = await createRun(api, { jobKey });
    await failCreatedRun(api, second.runId);
    expect(await groupLine(groupKey)).toMatch(new RegExp(`\\s2\\s.*\\s1 new since acknowledged by alice-operator\\s+${second.runId}\\s`));
    const covered = await operator(['alerts', 'ack', groupKey, '--note', 'the second one is the same bad plan']);
    expect(covered.out).toBe(`acknowledged ${groupKey}: 2 alert(s)`);

    const { rows } = await api.sql.query(
      `SELECT actor, message, details->>'count' AS count FROM nifi_ops.load_event
        WHERE event_name = 'ALERT_GROUP_ACKNOWLEDGED' AND run_id IS NULL AND details->>'groupKey' = $1 ORDER BY event_time`,
      [groupKey],
    );
    expect(rows).toEqual([
      { actor: 'alice-operator', message: 'known: bad plan, manifest being fixed', count: '1' },
      { actor: 'alice-operator', message: 'the second one is the same bad plan', count: '2' },
    ]);
  });

  it('snoozes a group --for a while or --until a time: out of `alerts`, still in `alerts --all`, back when the snooze ends; audited', async () => {
    const { runId, groupKey } = await failedRunOfNewJob();
    const asked = Date.now();
    const snoozed = await operator(['alerts', 'snooze', groupKey, '--for', '1h30m', '--note', 'deploy of the fix tonight', '--json']);
    const answered = Date.now();
    expect(snoozed.code).toBe(EXIT_CODES.done);
    const { snoozeAlertGroup } = JSON.parse(snoozed.out) as { snoozeAlertGroup: { groupKey: string; changed: boolean; until: string } };
    expect(snoozeAlertGroup).toMatchObject({ groupKey, changed: true });
    const until = new Date(snoozeAlertGroup.until).getTime();
    expect(until).toBeGreaterThanOrEqual(asked + 90 * 60_000);
    expect(until).toBeLessThanOrEqual(answered + 90 * 60_000);

    expect(await groupLine(groupKey)).toBeUndefined();
    expect(await groupLine(groupKey, ['--all'])).toMatch(
      new RegExp(`^ERROR\\s+RUN_FAILED\\s+\\S+\\s+\\S+\\s+${runId}\\s.*\\s${groupKey}\\s`),
    );

    const later = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const moved = await operator(['alerts', 'snooze', groupKey, '--until', later, '--note', 'the fix moved to Thursday']);
    expect([moved.code, moved.out]).toEqual([EXIT_CODES.done, `snoozed ${groupKey} until ${later}`]);
    const same = await operator(['alerts', 'snooze', groupKey, '--until', later, '--note', 'the fix moved to Thursday']);
    expect(same.out).toBe(`snoozed ${groupKey} until ${later} (unchanged: it was already so)`);
    expect(await groupLine(groupKey)).toBeUndefined();

    // the snooze's time comes
    await api.sql.query(
      `UPDATE nifi_ops.alert_group_ack SET snoozed_until = clock_timestamp() - interval '1 second' WHERE group_key = $1`,
      [groupKey],
    );
    expect(await groupLine(groupKey)).toMatch(new RegExp(`^${groupKey}\\s+ERROR\\s+1\\s.*\\sopen\\s+${runId}\\s`));

    const { rows } = await api.sql.query(
      `SELECT actor, message, details->>'until' AS until FROM nifi_ops.load_event
        WHERE event_name = 'ALERT_GROUP_SNOOZED' AND run_id IS NULL AND details->>'groupKey' = $1 ORDER BY event_time`,
      [groupKey],
    );
    expect(rows).toEqual([
      { actor: 'alice-operator', message: 'deploy of the fix tonight', until: snoozeAlertGroup.until },
      { actor: 'alice-operator', message: 'the fix moved to Thursday', until: later },
    ]);
  });

  it('says a group with no alert now is not found (3), names the role a viewer lacks (5), passes on the ledger’s refusals (4)', async () => {
    const { groupKey } = await failedRunOfNewJob();
    for (const action of [['ack'], ['snooze', '--for', '4h']]) {
      const [verb, ...flags] = action;
      const missing = await operator(['alerts', verb!, 'RUN_FAILED:JOB:NO_SUCH_JOB', ...flags, '--note', 'is it still failing?']);
      expect([missing.code, missing.err], verb).toEqual([
        EXIT_CODES.notFound,
        'error: ALERT_GROUP_NOT_FOUND: no alert of group RUN_FAILED:JOB:NO_SUCH_JOB is present now; load-control alerts lists the groups by key',
      ]);
      const asViewer = await operator(['alerts', verb!, groupKey, ...flags, '--note', 'is it still failing?'], 'viewer');
      const mutation = verb === 'ack' ? 'acknowledgeAlertGroup' : 'snoozeAlertGroup';
      expect([asViewer.code, asViewer.err], verb).toEqual([
        EXIT_CODES.notAllowed,
        `error: FORBIDDEN (HTTP 403): Forbidden: ${mutation} needs the operator role; this token has viewer`,
      ]);
    }
    const tooLong = await operator(['alerts', 'snooze', groupKey, '--for', '8d', '--note', 'away for a while']);
    expect([tooLong.code, tooLong.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
    expect(tooLong.err).toContain('must be at most 7 days ahead');
    const past = await operator(['alerts', 'snooze', groupKey, '--until', '2020-01-01T00:00:00Z', '--note', 'a while ago']);
    expect([past.code, past.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
    expect(past.err).toContain('must be in the future');
    const shortNote = await operator(['alerts', 'ack', groupKey, '--note', 'ok']);
    expect([shortNote.code, shortNote.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
    expect(await groupLine(groupKey)).toMatch(/\sopen\s/);
  });
});

describe('usage', () => {
  it('refuses wrong arguments with exit 2 and the usage, before any request', async () => {
    const cases: Array<[string[], TokenName | null, RegExp]> = [
      [['runs'], null, /a token is needed: --token or LC_TOKEN/],
      [['resolve', randomUUID(), '--as', 'MAYBE', '--reason', 'because'], 'operator', /--as: PUBLISHED or FAILED_PUBLISH/],
      [['cancel', randomUUID()], 'operator', /--reason: why/],
      [['resend'], 'operator', /expects \[<runId>\] <dispatchId>/],
      [['runs', '--status', 'FAILED'], 'viewer', /--status: "FAILED" is not a run status; one of CREATED, EXTRACTING, .*FAILED_EXTRACT/],
      [['alerts', 'extra'], 'viewer', /alerts: "extra" is not ack or snooze/],
      [['alerts', '--note', 'seen it all'], 'viewer', /--note: only with alerts ack\|snooze/],
      [['alerts', 'ack', '--note', 'seen it all'], 'operator', /expects <groupKey>/],
      [['alerts', 'ack', 'RUN_FAILED:JOB:X'], 'operator', /--note: why, for the event log/],
      [['alerts', 'ack', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--for', '1h'], 'operator', /--for and --until: only with alerts snooze/],
      [['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it'], 'operator', /alerts snooze: --for DURATION or --until TIME/],
      [
        ['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--for', '1h', '--until', '2999-01-01T00:00:00Z'],
        'operator',
        /alerts snooze: --for DURATION or --until TIME/,
      ],
      [
        ['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--for', 'soon'],
        'operator',
        /--for: "soon" is not a duration; 90m, 4h/,
      ],
      [['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--for', '4 hours'], 'operator', /--for: "4 hours" is not a duration/],
      [['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--for', 'PT0S'], 'operator', /--for: must be longer than 0/],
      [
        ['alerts', 'snooze', 'RUN_FAILED:JOB:X', '--note', 'seen it', '--until', '2026-12-01 06:00'],
        'operator',
        /--until: "2026-12-01 06:00" is not an instant with an offset/,
      ],
      [['runs', '--since', 'yesterday'], 'viewer', /--since: "yesterday" is not a date/],
      [['runs', '--limit', '0'], 'viewer', /--limit: must be an integer from 1 to 10000/],
      [['runs', '--bogus'], 'viewer', /Unknown option '--bogus'/],
      [['runs', '--url', 'ftp://x'], 'viewer', /--url: "ftp:\/\/x" is not an http\(s\) URL/],
    ];
    for (const [argv, token, message] of cases) {
      const answer = await operator(argv, token);
      expect([answer.code, answer.err], argv.join(' ')).toEqual([EXIT_CODES.usage, expect.stringMatching(message)]);
      expect(answer.err).toContain('exit codes: 0 done');
    }
  });

  it('exits 6 when nothing answers at the URL', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const answer = await operator(['alerts', '--url', closed], 'viewer');
    expect([answer.code, answer.err]).toEqual([EXIT_CODES.unavailable, expect.stringContaining(`error: no answer from ${closed}`)]);
  });

  it('formats cells, missing ones as -', () => {
    expect(
      formatTable(
        [
          { a: 'x', b: null },
          { a: 'longer', b: 2 },
        ],
        ['a', 'b'],
      ),
    ).toEqual(['a       b', 'x       -', 'longer  2']);
  });

  it('runs as `load-control <command>`, with LC_URL and LC_TOKEN, and exits with its code', async () => {
    const refused = runCli(['cancel', randomUUID(), '--reason', 'no such run here'], { LC_URL: api.url, LC_TOKEN: TOKENS.operator });
    expect(await refused.exited).toBe(EXIT_CODES.notFound);
    expect(refused.output()).toMatch(/error: RUN_NOT_FOUND \(HTTP 404\)/);
  });
});

describe('load-control bulk', () => {
  it('dry run lists the targets and changes nothing; the apply cancels them, prints the summary and exits 4 when one was refused', async () => {
    const jobKey = `BULK_CLI_${randomUUID().slice(0, 8).toUpperCase()}`;
    const day = (d: number) => `2026-09-0${d}`;
    const [first, second] = [
      await createRun(api, { jobKey, businessKey: day(1) }),
      await startRun(api, [1], { create: { jobKey, businessKey: day(2) } }),
    ];
    const outside = await createRun(api, { jobKey, businessKey: day(5) });
    const unknown = await toPublishUnknown(api, 'HS2_TIMEOUT', { create: { jobKey, businessKey: day(3) } });
    const filter = ['--job', jobKey, '--from', day(1), '--to', day(4)];

    const dry = await operator(['bulk', 'cancel', ...filter, '--dry-run', '--reason', 'NiFi outage']);
    expect(dry.code).toBe(EXIT_CODES.done);
    expect(dry.out.split('\n')[0]).toMatch(/^runId\s+jobKey\s+businessKey\s+runStatus\s+dispatchId\s+partitionId\s+outcome\s+code$/);
    expect(dry.out).toContain(
      '3 target(s) (at most 500): 2 would be changed, 0 already so, 1 refused (RUN_STATUS_MISMATCH 1); dry run: nothing changed',
    );
    const statuses = async () =>
      (await api.sql.query(`SELECT status FROM nifi_ops.load_run WHERE job_key = $1 ORDER BY business_key`, [jobKey])).rows.map(
        (r) => r.status,
      );
    expect(await statuses()).toEqual(['CREATED', 'EXTRACTING', 'PUBLISH_UNKNOWN', 'CREATED']);

    const applied = await operator(['bulk', 'cancel', ...filter, '--reason', 'NiFi outage']);
    expect(applied.code).toBe(EXIT_CODES.refused);
    expect(applied.out).toMatch(
      /3 target\(s\) \(at most 500\): 2 were changed, 0 already so, 1 refused \(RUN_STATUS_MISMATCH 1\); bulk action [0-9a-f-]{36}$/,
    );
    expect(await statuses()).toEqual(['CANCELLED', 'CANCELLED', 'PUBLISH_UNKNOWN', 'CREATED']);
    const targets = JSON.parse((await operator(['bulk', 'cancel', ...filter, '--dry-run', '--json', '--reason', 'NiFi outage'])).out);
    expect(targets.bulkAction.targets.map((t: { runId: string }) => t.runId)).toEqual([unknown.runId]);
    expect([first.runId, second.runId]).not.toContain(outside.runId);
  });

  it('refuses a bad action or filter as usage, and a reasonless call', async () => {
    expect((await operator(['bulk', 'delete', '--reason', 'NiFi outage'])).code).toBe(EXIT_CODES.usage);
    expect((await operator(['bulk', 'cancel', '--status', 'NOPE', '--reason', 'NiFi outage'])).code).toBe(EXIT_CODES.usage);
    expect((await operator(['bulk', 'resend'])).code).toBe(EXIT_CODES.usage);
    const badDate = await operator(['bulk', 'reissue', '--from', '2026-13-01', '--reason', 'NiFi outage']);
    expect(badDate.code).toBe(EXIT_CODES.refused);
    expect(badDate.err).toContain('INVALID_INPUT');
  });
});
