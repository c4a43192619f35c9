// The reader behind subscriptions' fields: one query per event for all of a run's subscribers, and
// never a nested read older than the run row it is shown with.
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PrismaClient } from '../../../src/generated/prisma/client.js';
import { listPartitions, partitionCounts } from '../../../src/domain/runs/queries.js';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, report, startRun } from '../../support/fixtures.js';
import { subscribe, type SseSubscription } from '../../support/sse.js';
import { createSharedReader } from '../../../src/realtime/shared-reader.js';

let api: TestApi;
let pool: pg.Pool;
let prisma: PrismaClient<'query'>;
let queries = 0;

beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
  pool = new pg.Pool({ connectionString: api.database.url, max: 4 });
  // a connection still closing when the test database is dropped must not fail the run (as test/support/api.ts)
  pool.on('error', () => undefined);
  prisma = new PrismaClient({ adapter: new PrismaPg(pool), log: [{ emit: 'event', level: 'query' }] });
  prisma.$on('query', () => queries++);
});
afterAll(async () => {
  await prisma?.$disconnect();
  await pool?.end();
  await api?.close();
});

describe('the shared reader', () => {
  it("gives concurrent identical reads of a run one query, and reads again after the run's next delivery", async () => {
    const run = await startRun(api, [1, 2, 3]);
    let delivered = performance.now();
    const reader = createSharedReader(prisma, () => delivered);
    queries = 0;
    const first = await Promise.all(Array.from({ length: 10 }, () => listPartitions(reader, run.runId, null)));
    expect(queries).toBe(1);
    expect(first.every((p) => p.length === 3)).toBe(true);
    // a different read of the same run is its own query; repeating either shares it
    await Promise.all([
      partitionCounts(reader, [run.runId]),
      partitionCounts(reader, [run.runId]),
      listPartitions(reader, run.runId, null),
    ]);
    expect(queries).toBe(2);

    const { claimToken } = await claim(api, run.runId, '0000');
    await report(api, chunkInput(run, '0000', claimToken, 0, 1, 1));
    delivered = performance.now(); // the run feed handed out a newer state: earlier reads must not serve it
    const after = await Promise.all(Array.from({ length: 5 }, () => listPartitions(reader, run.runId, null)));
    expect(queries).toBe(3);
    expect(after.every((p) => p[0]!.status === 'SUCCESS')).toBe(true);
  });

  it('passes through reads that are not about one run', async () => {
    const run = await startRun(api, [1]);
    const reader = createSharedReader(prisma, () => 0);
    queries = 0;
    const count = () => reader.$queryRaw`SELECT count(*) FROM nifi_ops.load_run`;
    // a run among several is no run filter either
    const ofRuns = () => reader.$queryRaw`SELECT count(*) FROM nifi_ops.load_partition WHERE run_id = ANY(${[run.runId]}::uuid[])`;
    await Promise.all([count(), count(), count(), ofRuns(), ofRuns()]);
    expect(queries).toBe(5);
  });

  it('many subscribers of one run, while its partitions complete concurrently: counts beside the row are never older than it (10 rounds)', async () => {
    const QUERY = `subscription($runId: UUID) { runChanged(runId: $runId) { status successPartitionCount partitions { status } } }`;
    type Message = { runChanged: { status: string; successPartitionCount: number; partitions: Array<{ status: string }> } };
    for (let round = 0; round < 10; round++) {
      const counts = [1, 1, 1, 1, 1, 1];
      const run = await startRun(api, counts);
      const tokens = await Promise.all(counts.map((_, i) => claim(api, run.runId, String(i).padStart(4, '0'))));
      const subs: Array<SseSubscription<Message>> = await Promise.all(
        Array.from({ length: 6 }, () => subscribe<Message>(api.url, QUERY, { runId: run.runId })),
      );
      await Promise.all(subs.map((s) => s.waitFor(() => true)));
      await Promise.all(counts.map((n, i) => report(api, chunkInput(run, String(i).padStart(4, '0'), tokens[i]!.claimToken, 0, 1, n))));
      for (const sub of subs) {
        await sub.waitFor((m) => m.data?.runChanged.status === 'EXTRACTED_VALIDATED');
        for (const m of sub.messages) {
          const shown = m.data!.runChanged;
          expect(shown.partitions.filter((p) => p.status === 'SUCCESS').length).toBeGreaterThanOrEqual(shown.successPartitionCount);
        }
        const last = sub.messages.at(-1)!.data!.runChanged;
        expect(last.partitions.every((p) => p.status === 'SUCCESS')).toBe(true);
        sub.close();
      }
    }
  });
});
