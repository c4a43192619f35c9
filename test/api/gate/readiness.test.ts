// The readiness query over HTTP: its arguments' refusals and the token it needs. What readiness answers (the
// greatest attempt, the required set, Load Control runs as attempts) is in test/domain/gate/readiness.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { READINESS } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

const D = '2026-10-23';

describe('readiness', () => {
  it('refuses a malformed consumer or business date with 422 INVALID_INPUT', async () => {
    const badConsumer = await api.gql(READINESS, { consumer: 'has space', businessDate: D });
    expect(badConsumer.status).toBe(422);
    expect(badConsumer.details).toMatchObject({ field: 'args.consumer' });
    const badDate = await api.gql(READINESS, { consumer: 'c', businessDate: '2026-02-30' });
    expect(badDate.status).toBe(422);
    expect(badDate.code).toBe('INVALID_INPUT');
    expect((await api.gql(READINESS, { consumer: 'c', businessDate: D }, { token: null })).status).toBe(401);
  });
});
