// Publishing over HTTP: the UUID scalar, roles and input parsing. Publishing's rules and races are domain tests:
// test/domain/publish/publish.test.ts.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { CLAIM_PUBLISH, MARK_SUCCESS, REPORT_PUBLISH_RESULT, toPublished, toStagingValidated } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const claimPublish = (runId: string, publishToken: string, token: 'nifi' | 'operator' = 'nifi') =>
  api.gql(CLAIM_PUBLISH, { input: { runId, publishToken } }, { token });
const reportResult = (runId: string, publishToken: string, outcome: string, extra: Record<string, unknown> = {}) =>
  api.gql(REPORT_PUBLISH_RESULT, { input: { runId, publishToken, outcome, ...extra } });
const markSuccess = (runId: string, targetCount?: string | number) =>
  api.gql(MARK_SUCCESS, { input: { runId, ...(targetCount === undefined ? {} : { targetCount }) } });

async function runRow(runId: string) {
  const { rows } = await api.sql.query('SELECT status, publish_token::text FROM nifi_ops.load_run WHERE run_id = $1', [runId]);
  return rows[0];
}

describe('claimPublish', () => {
  it('takes an upper-case publish token as the same token: the UUID scalar reads it in lower case', async () => {
    const run = await toStagingValidated(api);
    const first = randomUUID();
    expect((await claimPublish(run.runId, first)).body.data!.claimPublish).toEqual({ claimed: true, runStatus: 'PUBLISHING' });
    expect((await claimPublish(run.runId, first.toUpperCase())).body.data!.claimPublish).toEqual({
      claimed: true,
      runStatus: 'PUBLISHING',
    });
    expect((await runRow(run.runId)).publish_token).toBe(first);
  });

  it('answers 422 for a malformed token, and needs the nifi role', async () => {
    const run = await toStagingValidated(api);
    const malformed = await claimPublish(run.runId, 'not-a-token');
    expect(malformed.status).toBe(422);
    expect(malformed.code).toBe('INVALID_INPUT');
    expect((await claimPublish(run.runId, randomUUID(), 'operator')).status).toBe(403);
    expect((await runRow(run.runId)).status).toBe('STAGING_VALIDATED');
  });
});

describe('reportPublishResult', () => {
  it('refuses a query id or details it could not store with 422 naming the field, and changes nothing', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    for (const [extra, field] of [
      [{ queryId: 'q'.repeat(201) }, 'input.queryId'],
      [{ queryId: '' }, 'input.queryId'],
      [{ details: { note: 'nul\u0000' } }, 'input.details.note'],
      // the JSON scalar names itself for a value that is not an object, as for every JSON input
      [{ details: 'not an object' }, 'JSON'],
    ] as const) {
      const refused = await reportResult(run.runId, publishToken, 'PUBLISHED', extra);
      expect([refused.status, refused.code, refused.details?.field], JSON.stringify(extra)).toEqual([422, 'INVALID_INPUT', field]);
    }
    expect((await runRow(run.runId)).status).toBe('PUBLISHING');
  });

  it('refuses malformed input with 422 (an unknown outcome is a schema error) and changes nothing', async () => {
    const run = await toStagingValidated(api);
    const publishToken = randomUUID();
    await claimPublish(run.runId, publishToken);
    const longCode = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { errorCode: 'E'.repeat(101) });
    expect(longCode.status).toBe(422);
    expect(longCode.details).toMatchObject({ field: 'input.errorCode' });
    const longMessage = await reportResult(run.runId, publishToken, 'FAILED_PUBLISH', { message: 'm'.repeat(2001) });
    expect(longMessage.status).toBe(422);
    expect(longMessage.details).toMatchObject({ field: 'input.message' });
    const bogus = await reportResult(run.runId, publishToken, 'DONE');
    expect(bogus.status).toBe(400);
    expect(bogus.code).toBe('BAD_REQUEST');
    expect((await runRow(run.runId)).status).toBe('PUBLISHING');
  });
});

describe('markSuccess', () => {
  it('refuses a malformed targetCount with 422', async () => {
    const run = await toPublished(api);
    for (const targetCount of ['-1', '7.5', 'seven']) {
      const res = await markSuccess(run.runId, targetCount);
      expect(res.status).toBe(422);
      expect(res.code).toBe('INVALID_INPUT');
    }
    expect((await runRow(run.runId)).status).toBe('PUBLISHED');
  });
});
