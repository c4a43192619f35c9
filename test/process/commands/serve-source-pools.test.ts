// `serve` applies the configuration's sources.pools when it starts (README "Source pools"): the pools are defined
// and their jobs assigned, in the configuration's name, before the API answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SOURCE_POOLS } from '../../../schema/documents/operator.js';
import { startTestApiProcess, type TestApiProcess } from '../../support/api-process.js';

const POOLS = [{ name: 'oracle-erp', maxRunning: 3, retryAfterSeconds: 12, jobs: ['ERP_ORDERS', 'ERP_LINES'] }];
let api: TestApiProcess;

beforeAll(async () => {
  api = await startTestApiProcess({ env: { LC_SOURCES__POOLS: JSON.stringify(POOLS) } });
});
afterAll(async () => api?.close());

describe('sources.pools at the start of serve', () => {
  it('defines each pool and assigns its jobs, audited as the configuration', async () => {
    const res = await api.gql(SOURCE_POOLS, {}, { token: 'viewer' });
    expect(res.body.data?.sourcePools).toEqual([
      expect.objectContaining({ name: 'oracle-erp', maxRunning: 3, retryAfterSeconds: 12, running: 0, jobs: ['ERP_LINES', 'ERP_ORDERS'] }),
    ]);
    const { rows } = await api.sql.query(
      `SELECT event_name, actor FROM nifi_ops.load_event WHERE event_name LIKE 'SOURCE_POOL_%' ORDER BY event_time, event_id`,
    );
    expect(rows).toEqual([
      { event_name: 'SOURCE_POOL_DEFINED', actor: 'config:sources.pools' },
      { event_name: 'SOURCE_POOL_JOB_ASSIGNED', actor: 'config:sources.pools' },
      { event_name: 'SOURCE_POOL_JOB_ASSIGNED', actor: 'config:sources.pools' },
    ]);
  });
});
