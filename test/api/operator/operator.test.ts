// The operator's mutations over HTTP: roles and input parsing, and Run.allowedActions as the console asks it. Their
// rules and races are domain tests: test/domain/operator/operator.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CANCEL_RUN as CANCEL, RESEND_DISPATCH as RESEND, RESOLVE_UNKNOWN as RESOLVE } from '../../../schema/documents/operator.js';
import { startTestApi, type TestApi, type TokenName } from '../../support/api.js';
import { completeRun, createRun, startRun, toPublishUnknown as publishUnknown, REISSUE_PARTITION } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const REASON = 'checked the target table by hand';

const resolve = (runId: string, resolution: string, reason = REASON, token: TokenName | null = 'operator') =>
  api.gql(RESOLVE, { input: { runId, resolution, reason } }, { token });
const resend = (runId: string, dispatchId: string, extra: Record<string, unknown> = {}, token: TokenName | null = 'operator') =>
  api.gql(RESEND, { input: { runId, dispatchId, ...extra } }, { token });
const cancel = (runId: string, reason = 'business date loaded twice', token: TokenName | null = 'operator') =>
  api.gql(CANCEL, { input: { runId, reason } }, { token });

async function runRow(runId: string) {
  const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0];
}

describe('resolveUnknown', () => {
  it('needs the operator role and a reason of 5..2000 characters, and changes nothing otherwise', async () => {
    const run = await publishUnknown(api, 'HS2_TIMEOUT');
    const asNifi = await resolve(run.runId, 'PUBLISHED', REASON, 'nifi');
    expect(asNifi.status).toBe(403);
    expect(asNifi.code).toBe('FORBIDDEN');
    const short = await resolve(run.runId, 'PUBLISHED', 'x');
    expect(short.status).toBe(422);
    expect(short.details).toMatchObject({ field: 'input.reason' });
    expect((await resolve(run.runId, 'PUBLISHED', '   ab   ')).status).toBe(422);
    expect((await resolve(run.runId, 'PUBLISHED', 'r'.repeat(2001))).status).toBe(422);
    expect((await runRow(run.runId)).status).toBe('PUBLISH_UNKNOWN');
  });
});

describe('resendDispatch', () => {
  it('needs the operator role and a reason of 5 characters at least, and changes nothing otherwise', async () => {
    const run = await completeRun(api);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET status = 'DEAD', dead_at = clock_timestamp() WHERE dispatch_id = $1`, [
      run.dispatchId,
    ]);
    expect((await resend(run.runId, run.dispatchId, {}, 'nifi')).status).toBe(403);
    const short = await resend(run.runId, run.dispatchId, { reason: 'go' });
    expect(short.status).toBe(422);
    expect(short.details).toMatchObject({ field: 'input.reason' });
    const { rows } = await api.sql.query('SELECT status FROM nifi_ops.load_dispatch WHERE dispatch_id = $1', [run.dispatchId]);
    expect(rows[0].status).toBe('DEAD');
  });
});

describe('cancelRun', () => {
  it('needs the operator role and a reason of 5..2000 characters', async () => {
    const run = await createRun(api);
    expect((await cancel(run.runId, 'a good reason', 'nifi')).status).toBe(403);
    expect((await cancel(run.runId, 'a good reason', 'viewer')).status).toBe(403);
    expect((await cancel(run.runId, 'a good reason', null)).status).toBe(401);
    for (const reason of ['nope', '    ', 'r'.repeat(2001)]) {
      const res = await cancel(run.runId, reason);
      expect(res.status).toBe(422);
      expect(res.details).toMatchObject({ field: 'input.reason' });
    }
    const missingReason = await api.gql(CANCEL, { input: { runId: run.runId } }, { token: 'operator' });
    expect(missingReason.status).toBe(400);
    expect((await runRow(run.runId)).status).toBe('CREATED');
  });
});

describe('Run.allowedActions: what the state machine lets an operator do, as the console asks it', () => {
  const ALLOWED = `query($runId: UUID!) { run(runId: $runId) { status allowedActions } }`;
  const allowed = async (runId: string) => (await api.gql(ALLOWED, { runId }, { token: 'viewer' })).body.data!.run;

  it('answers each status its actions, and each listed action is accepted', async () => {
    const created = await createRun(api);
    expect(await allowed(created.runId)).toEqual({ status: 'CREATED', allowedActions: ['CANCEL', 'RESEND_DISPATCH'] });

    const extracting = await startRun(api, [3, 4]);
    expect(await allowed(extracting.runId)).toEqual({
      status: 'EXTRACTING',
      allowedActions: ['CANCEL', 'REISSUE_PARTITION', 'RESEND_DISPATCH'],
    });
    const reissued = await api.gql(
      REISSUE_PARTITION,
      { input: { runId: extracting.runId, partitionId: '0000', reason: REASON } },
      { token: 'operator' },
    );
    expect(reissued.body.errors).toBeUndefined();

    const unknown = await publishUnknown(api);
    expect(await allowed(unknown.runId)).toEqual({ status: 'PUBLISH_UNKNOWN', allowedActions: ['RESOLVE_UNKNOWN', 'RESEND_DISPATCH'] });
    expect((await resolve(unknown.runId, 'FAILED_PUBLISH')).body.data!.resolveUnknown.changed).toBe(true);
    expect(await allowed(unknown.runId)).toEqual({ status: 'FAILED_PUBLISH', allowedActions: ['RESEND_DISPATCH'] });

    const cancelled = await api.gql(CANCEL, { input: { runId: created.runId, reason: REASON } }, { token: 'operator' });
    expect(cancelled.body.data!.cancelRun.runStatus).toBe('CANCELLED');
    expect(await allowed(created.runId)).toEqual({ status: 'CANCELLED', allowedActions: ['RESEND_DISPATCH'] });
  });

  it('leaves out what the server refuses: a PUBLISH_UNKNOWN run is not cancelled, an EXTRACTING one not resolved', async () => {
    const unknown = await publishUnknown(api);
    expect((await allowed(unknown.runId)).allowedActions).not.toContain('CANCEL');
    const cancel = await api.gql(CANCEL, { input: { runId: unknown.runId, reason: REASON } }, { token: 'operator' });
    expect([cancel.status, cancel.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);

    const extracting = await startRun(api, [3]);
    expect((await allowed(extracting.runId)).allowedActions).not.toContain('RESOLVE_UNKNOWN');
    const resolved = await resolve(extracting.runId, 'PUBLISHED');
    expect([resolved.status, resolved.code]).toEqual([409, 'RUN_STATUS_MISMATCH']);
  });
});
