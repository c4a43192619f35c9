// runProgress end to end (claims and chunk reports → coalesced NOTIFY → one shared read → deltas), its refusals,
// what a slow subscriber gets, and that applying the deltas always ends at the run's true state under concurrent writes.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { chunkInput, claim, createRun, report, startRun } from '../../support/fixtures.js';
import { subscribe, type SseSubscription } from '../../support/sse.js';
import { until } from '../../support/until.js';
import { mergeProgress, type RunProgressEvent } from '../../../src/realtime/run-progress.js';
import { EventStream } from '../../../src/realtime/stream.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({}, { realtime: true });
});
afterAll(async () => api?.close());

const RUN_PROGRESS = `subscription($runId: UUID!) { runProgress(runId: $runId) {
  version sinceVersion snapshot run { runId status extractedCount } partitionCounts { status count }
  partitions { partitionId status receivedChunks receivedRows } } }`;

interface Progress {
  version: number;
  sinceVersion: number | null;
  snapshot: boolean;
  run: { runId: string; status: string; extractedCount: number };
  partitionCounts: Array<{ status: string; count: number }>;
  partitions: Array<{ partitionId: string; status: string; receivedChunks: number; receivedRows: number }>;
}

const open: SseSubscription<{ runProgress: Progress }>[] = [];
afterAll(() => {
  for (const s of open) s.close();
});

async function watch(runId: string) {
  const sub = await subscribe<{ runProgress: Progress }>(api.url, RUN_PROGRESS, { runId });
  open.push(sub);
  return sub;
}

/** What a client builds from the events: the partitions by id, and the version it holds; throws on a gap. */
function applied(events: Progress[]) {
  const partitions = new Map<string, Progress['partitions'][number]>();
  let version: number | null = null;
  for (const e of events) {
    if (e.snapshot) partitions.clear();
    else if (e.sinceVersion !== version) throw new Error(`gap: held ${version}, got an event since ${e.sinceVersion}`);
    for (const p of e.partitions) partitions.set(p.partitionId, p);
    version = e.version;
  }
  return { partitions, version };
}

const events = (sub: SseSubscription<{ runProgress: Progress }>) => sub.messages.map((m) => m.data!.runProgress);

async function truePartitions(runId: string) {
  const res = await api.gql<{ run: { partitions: Progress['partitions'] } }>(
    'query($runId: UUID!) { run(runId: $runId) { partitions { partitionId status receivedChunks receivedRows } } }',
    { runId },
  );
  return new Map(res.body.data!.run.partitions.map((p) => [p.partitionId, p]));
}

describe('runProgress', () => {
  it('starts with a snapshot, then sends only the partitions that changed, each event one version on', async () => {
    const run = await startRun(
      api,
      Array.from({ length: 200 }, () => 10),
    );
    const sub = await watch(run.runId);
    const first = (await sub.waitFor(() => true)).data!.runProgress;
    expect(first).toMatchObject({ snapshot: true, sinceVersion: null, run: { runId: run.runId, status: 'EXTRACTING' } });
    expect(first.partitions).toHaveLength(200);
    expect(first.partitionCounts).toEqual([{ status: 'PENDING', count: 200 }]);

    const { claimToken } = await claim(api, run.runId, '0007');
    const claimed = await sub.waitFor((m) => m.data!.runProgress.partitions.some((p) => p.status === 'RUNNING'));
    expect(claimed.data!.runProgress.snapshot).toBe(false);
    expect(claimed.data!.runProgress.partitions.map((p) => p.partitionId)).toEqual(['0007']);
    expect(claimed.data!.runProgress.partitionCounts).toEqual([
      { status: 'PENDING', count: 199 },
      { status: 'RUNNING', count: 1 },
    ]);
    await report(api, chunkInput(run, '0007', claimToken, 0, 2, 4));
    const chunk = await sub.waitFor((m) => m.data!.runProgress.partitions.some((p) => p.receivedChunks === 1));
    expect(chunk.data!.runProgress.partitions).toEqual([{ partitionId: '0007', status: 'RUNNING', receivedChunks: 1, receivedRows: 4 }]);
    const all = events(sub);
    all.slice(1).forEach((e, i) => {
      expect(e.version).toBe(all[i]!.version + 1);
      expect(e.sinceVersion).toBe(all[i]!.version);
    });
    // a later subscriber gets the state as it is now, in a snapshot; the first one only the next delta
    const late = await watch(run.runId);
    const lateFirst = (await late.waitFor(() => true)).data!.runProgress;
    expect(lateFirst.snapshot).toBe(true);
    expect(lateFirst.partitions.find((p) => p.partitionId === '0007')).toMatchObject({ status: 'RUNNING', receivedChunks: 1 });
    await report(api, chunkInput(run, '0007', claimToken, 1, 2, 6));
    for (const s of [sub, late]) {
      const done = await s.waitFor((m) => m.data!.runProgress.partitions.some((p) => p.status === 'SUCCESS'));
      expect(done.data!.runProgress.partitions).toHaveLength(1);
    }
    expect(applied(events(sub)).partitions).toEqual(await truePartitions(run.runId));
    expect(applied(events(late)).partitions).toEqual(await truePartitions(run.runId));
  });

  it('ends at the true state of every partition under concurrent claims and chunk reports (5 rounds)', async () => {
    for (let round = 0; round < 5; round++) {
      const counts = Array.from({ length: 40 }, () => 6);
      const run = await startRun(api, counts);
      const sub = await watch(run.runId);
      await sub.waitFor(() => true);
      // each partition claimed and reported in three chunks, all partitions at once on separate connections
      await Promise.all(
        counts.map(async (_c, i) => {
          const partitionId = String(i).padStart(4, '0');
          const { claimToken } = await claim(api, run.runId, partitionId);
          for (let chunk = 0; chunk < 3; chunk++) await report(api, chunkInput(run, partitionId, claimToken, chunk, 3, 2));
        }),
      );
      const expected = await truePartitions(run.runId);
      // the run's own transition may come in an event after the one that brought the last partition
      await until(`round ${round}: the deltas to reach the final state`, () => {
        const { partitions } = applied(events(sub));
        const done = [...expected.values()].every((p) => JSON.stringify(partitions.get(p.partitionId)) === JSON.stringify(p));
        return done && events(sub).at(-1)!.run.status !== 'EXTRACTING';
      });
      const last = events(sub).at(-1)!;
      expect(last.partitionCounts).toEqual([{ status: 'SUCCESS', count: 40 }]);
      expect(last.run.status).toBe('EXTRACTED_VALIDATED');
      // no event carried more than the partitions written since the one before: none was a second snapshot
      expect(events(sub).filter((e) => e.snapshot)).toHaveLength(1);
      sub.close();
    }
  });

  it('sends a partition written in a sub-transaction (a savepoint) of a transaction still open at a read', async () => {
    const run = await startRun(api, [3, 3, 3]);
    const sub = await watch(run.runId);
    await sub.waitFor(() => true);
    const next = async () => {
      const seen = sub.messages.length;
      await api.sql.query('SELECT pg_notify($1, $2)', ['lc_run_changed', run.runId]);
      return (await sub.waitFor((m) => sub.messages.indexOf(m) >= seen)).data!.runProgress;
    };
    const writer = new pg.Client({ connectionString: api.database.url });
    await writer.connect();
    try {
      await writer.query('BEGIN');
      await writer.query("UPDATE nifi_ops.load_partition SET worker_node = 'top' WHERE run_id = $1 AND partition_id = '0000'", [run.runId]);
      await writer.query('SAVEPOINT rule');
      await writer.query("UPDATE nifi_ops.load_partition SET worker_node = 'sub' WHERE run_id = $1 AND partition_id = '0001'", [run.runId]);
      await writer.query('RELEASE SAVEPOINT rule');
      // a read while the writer is open sees neither
      expect((await next()).partitions).toEqual([]);
      await writer.query('COMMIT');
    } finally {
      await writer.end();
    }
    expect((await next()).partitions.map((p) => p.partitionId)).toEqual(['0000', '0001']);
    // and once sent, not again
    expect((await next()).partitions).toEqual([]);
  });

  it('after a LISTEN reconnect sends every subscriber a snapshot again', async () => {
    const run = await startRun(api, [3, 3]);
    const sub = await watch(run.runId);
    await sub.waitFor(() => true);
    api.realtime!.progress.resync();
    const again = await sub.waitFor((m) => m !== sub.messages[0] && m.data!.runProgress.snapshot);
    expect(again.data!.runProgress.partitions).toHaveLength(2);
    expect(again.data!.runProgress.version).toBeGreaterThan(sub.messages[0]!.data!.runProgress.version);
  });

  it('refuses a missing token (401), an unknown run (404) and a malformed id (422), keeping nothing open', async () => {
    const before = api.realtime!.progress.subscriberCount();
    const run = await createRun(api);
    const anonymous = await subscribe(api.url, RUN_PROGRESS, { runId: run.runId }, { token: null });
    expect(anonymous.status).toBe(401);
    const unknown = await subscribe(api.url, RUN_PROGRESS, { runId: randomUUID() });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('x-error-code')).toBe('RUN_NOT_FOUND');
    const bad = await subscribe(api.url, RUN_PROGRESS, { runId: 'nope' });
    expect(bad.status).toBe(422);
    expect(bad.headers.get('x-error-code')).toBe('INVALID_INPUT');
    expect(api.realtime!.progress.subscriberCount()).toBe(before);
  });

  it('drops its subscribers when clients go away', async () => {
    const before = api.realtime!.progress.subscriberCount();
    const run = await createRun(api);
    const subs = [await watch(run.runId), await watch(run.runId)];
    await subs[1]!.waitFor(() => true);
    expect(api.realtime!.progress.subscriberCount()).toBe(before + 2);
    for (const s of subs) s.close();
    await until('the subscriptions to be dropped', () => api.realtime!.progress.subscriberCount() === before);
  });
});

describe('mergeProgress', () => {
  const partition = (partitionId: string, status: string) => ({ partitionId, status }) as unknown as RunProgressEvent['partitions'][number];
  const event = (version: number, sinceVersion: number | null, snapshot: boolean, partitions: RunProgressEvent['partitions']) =>
    ({ version, sinceVersion, snapshot, run: {}, partitionCounts: [], partitions }) as unknown as RunProgressEvent;

  it('folds the events a slow subscriber has not taken into one, with every change and the first one’s base', async () => {
    const stream = new EventStream<RunProgressEvent>(() => undefined, 1, mergeProgress);
    stream.push('progress', event(4, 3, false, [partition('a', 'RUNNING')]));
    stream.push('progress', event(5, 4, false, [partition('b', 'RUNNING'), partition('a', 'SUCCESS')]));
    stream.push('progress', event(6, 5, false, [partition('c', 'FAILED')]));
    const merged = (await stream.next()).value as RunProgressEvent;
    expect(merged).toMatchObject({ version: 6, sinceVersion: 3, snapshot: false });
    expect(merged.partitions).toEqual([partition('a', 'SUCCESS'), partition('b', 'RUNNING'), partition('c', 'FAILED')]);
  });

  it('keeps a snapshot a snapshot, and a newer snapshot replaces everything', () => {
    const snapshot = event(1, null, true, [partition('a', 'PENDING'), partition('b', 'PENDING')]);
    const delta = event(2, 1, false, [partition('b', 'RUNNING')]);
    expect(mergeProgress(snapshot, delta)).toMatchObject({ version: 2, sinceVersion: null, snapshot: true });
    expect(mergeProgress(snapshot, delta).partitions).toEqual([partition('a', 'PENDING'), partition('b', 'RUNNING')]);
    const newer = event(3, null, true, [partition('a', 'SUCCESS')]);
    expect(mergeProgress(delta, newer)).toBe(newer);
  });
});
