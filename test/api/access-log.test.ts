import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/client.js';
import { createApiServer, type ApiServer } from '../../src/server/app.js';
import { createApiMetrics } from '../../src/server/metrics.js';
import { TOKENS, testConfig } from '../support/api.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { FAIL_RUN } from '../support/fixtures.js';

let database: TestDatabase;
let db: Db;
let server: ApiServer;
let verbose: ApiServer;
let url: string;
let verboseUrl: string;
const lines: Array<Record<string, unknown>> = [];
const raw: string[] = [];

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line));
      }
      done();
    },
  });
  const log = pino({ level: 'debug' }, sink);
  server = createApiServer({ config: testConfig({ database: { url: database.url } }), db, log, metrics: createApiMetrics() });
  url = `http://127.0.0.1:${(await server.listen(0, '127.0.0.1')).port}`;
  const logging = { level: 'info', format: 'json', requests: true, bodyMax: 120 } as const;
  verbose = createApiServer({
    config: { ...testConfig({ database: { url: database.url } }), logging },
    db,
    log,
    metrics: createApiMetrics(),
  });
  verboseUrl = `http://127.0.0.1:${(await verbose.listen(0, '127.0.0.1')).port}`;
});
afterAll(async () => {
  await server?.close();
  await verbose?.close();
  await db?.close();
  await database?.drop();
});

describe('access log', () => {
  it('writes one structured line per request with request id, operation, run id and error code; never the token', async () => {
    const runId = randomUUID();
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.nifi}`, 'x-request-id': 'req-log-1' },
      body: JSON.stringify({
        query: FAIL_RUN,
        variables: { input: { runId, expectedStatus: 'CREATED', failStatus: 'FAILED_MANIFEST', errorStage: 'M', errorCode: 'E' } },
      }),
    });
    expect(res.status).toBe(404);
    await new Promise((r) => setTimeout(r, 50));
    const line = lines.find((l) => l.msg === 'api_response' && l.requestId === 'req-log-1');
    expect(line).toMatchObject({ operation: 'failRun', runId, httpStatus: 404, errorCode: 'RUN_NOT_FOUND', level: 30 });
    expect(typeof line!.durationMs).toBe('number');
    expect(raw.join('\n')).not.toContain(TOKENS.nifi);
    expect(raw.join('\n')).not.toMatch(/Bearer/i);
  });

  it('logs a 2xx at debug without bodies; with logging.requests, every request at info with its bodies, cut at bodyMax', async () => {
    const query = '{ runs(first: 3) { nodes { runId jobKey businessKey status } } }';
    for (const [base, id] of [
      [url, 'req-quiet'],
      [verboseUrl, 'req-verbose'],
    ] as const) {
      const res = await fetch(`${base}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKENS.viewer}`, 'x-request-id': id },
        body: JSON.stringify({ query, variables: { note: 'n'.repeat(300) } }),
      });
      expect(res.status).toBe(200);
    }
    await new Promise((r) => setTimeout(r, 50));
    const quiet = lines.find((l) => l.requestId === 'req-quiet');
    expect(quiet).toMatchObject({ level: 20, httpStatus: 200 });
    expect(quiet).not.toHaveProperty('requestBody');
    const logged = lines.find((l) => l.requestId === 'req-verbose');
    expect(logged).toMatchObject({ level: 30, operation: 'runs', httpStatus: 200 });
    expect(logged!.requestBody).toMatch(/^\{"query":"\{ runs\(first: 3\) .{60,}\.\.\.\(\+\d+ chars\)$/);
    expect(String(logged!.requestBody).length).toBeLessThan(150);
    expect(logged!.responseBody).toMatch(/^\{"data":\{"runs":\{"nodes":\[/);
    expect(raw.join('\n')).not.toContain(TOKENS.viewer);
  });
});
