// The process's one LISTEN connection: routes added before and after it connected, and both told when
// it is back after a loss.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { until } from '../../support/until.js';
import { createLogger } from '../../../src/logging/logger.js';
import { startListener, type Listener, type ListenRoute } from '../../../src/db/listener.js';

const APPLICATION_NAME = 'listener test';

let database: TestDatabase;
let sql: pg.Client;
beforeAll(async () => {
  database = await createTestDatabase();
  sql = new pg.Client({ connectionString: database.url });
  await sql.connect();
});
afterAll(async () => {
  await sql?.end();
  await database?.drop();
});

interface Recorded {
  route: ListenRoute;
  received: Array<[string, string]>;
  listening: Array<Date | undefined>;
}

function recordingRoute(channels: string[]): Recorded {
  const recorded: Recorded = {
    received: [],
    listening: [],
    route: {
      channels,
      onNotification: (channel, payload) => recorded.received.push([channel, payload]),
      onListening: (lostAt) => recorded.listening.push(lostAt),
    },
  };
  return recorded;
}

async function backends(): Promise<number[]> {
  const { rows } = await sql.query<{ pid: number }>(
    'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
    [APPLICATION_NAME],
  );
  return rows.map((r) => r.pid);
}

describe('startListener', () => {
  let listener: Listener;
  afterAll(async () => listener?.close());

  it('delivers each channel to the routes that asked for it, over one connection, whenever they were added', async () => {
    const log = createLogger({ level: 'fatal', format: 'json' }, 'test');
    listener = startListener({ url: database.url, log, applicationName: APPLICATION_NAME });
    const early = recordingRoute(['lc_test_a', 'lc_test_shared']);
    listener.route(early.route);
    await until('the first connect', () => listener.connected());
    expect(early.listening).toEqual([undefined]);
    const late = recordingRoute(['lc_test_b', 'lc_test_shared']);
    listener.route(late.route);
    await until('the late route to be listening', () => late.listening.length === 1);

    for (const [channel, payload] of [
      ['lc_test_a', '1'],
      ['lc_test_b', '2'],
      ['lc_test_shared', '3'],
      ['lc_test_other', '4'],
    ]) {
      await sql.query('SELECT pg_notify($1, $2)', [channel, payload]);
    }
    await until('the notifications', () => early.received.length === 2 && late.received.length === 2);
    expect(early.received).toEqual([
      ['lc_test_a', '1'],
      ['lc_test_shared', '3'],
    ]);
    expect(late.received).toEqual([
      ['lc_test_b', '2'],
      ['lc_test_shared', '3'],
    ]);
    expect(await backends()).toHaveLength(1);
  });

  it('after its backend is terminated, reconnects, tells every route when the loss was noticed, and delivers again', async () => {
    const route = recordingRoute(['lc_test_c']);
    listener.route(route.route);
    await until('the route to be listening', () => route.listening.length === 1);
    const [pid] = await backends();
    const before = new Date();
    await sql.query('SELECT pg_terminate_backend($1)', [pid]);
    await until('the reconnect', () => route.listening.length === 2 && listener.connected(), 20_000);
    expect(route.listening[1]!.getTime()).toBeGreaterThanOrEqual(before.getTime() - 1000);
    const after = await backends();
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(pid);
    await sql.query(`SELECT pg_notify('lc_test_c', 'again'), pg_notify('lc_test_a', 'again')`);
    await until('notifications after the reconnect', () => route.received.length === 1);
    expect(route.received).toEqual([['lc_test_c', 'again']]);
  });
});
