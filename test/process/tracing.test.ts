// Tracing (config `tracing`), as production runs it: `serve` (with an execution thread) and `work` as processes,
// exporting over OTLP/HTTP to a loopback collector stand-in. One load's requests are followed from the caller's
// traceparent through the HTTP request, the GraphQL operation and each SQL statement, and the dispatch to the
// receiver; failures carry their codes; hostile traceparent headers are ignored.
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, spawnCli, waitUntilReady } from '../../bench/support.js';
import { graphqlCaller, type TestApi, testConfig, TOKENS } from '../support/api.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { CLAIM, CREATE_RUN, HDFS_ROOT, JOB, manifestInput, REGISTER_MANIFEST, REPORT, RUN, chunkInput } from '../support/fixtures.js';
import { type CollectedSpan, type Collector, SPAN_KIND, STATUS, startCollector } from '../support/otlp-collector.js';
import { type Receiver, startReceiver } from '../support/receiver.js';
import { subscribe } from '../support/sse.js';
import { until } from '../support/until.js';

let collector: Collector;
let receiver: Receiver;
let database: TestDatabase;
let serve: ChildProcess;
let work: ChildProcess;
let url: string;
let gql: TestApi['gql'];

const stop = (child: ChildProcess | undefined) =>
  new Promise<void>((resolve) => {
    if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });

beforeAll(async () => {
  [collector, receiver, database] = await Promise.all([startCollector(), startReceiver(), createTestDatabase()]);
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  gql = graphqlCaller(url);
  const env = {
    DATABASE_URL: database.url,
    PORT: String(port),
    LC_SERVER__HOST: '127.0.0.1',
    LC_SERVER__EXECUTION_THREADS: '1',
    LC_LOGGING__LEVEL: 'fatal',
    LC_AUTH__TOKENS: JSON.stringify(testConfig().auth.tokens),
    LC_NIFI__RECEIVER_URL: receiver.url,
    LC_TRACING__ENDPOINT: collector.url,
    LC_TRACING__SERVICE_NAME: 'lc-tracing-test',
    LC_TRACING__HEADERS: '{"x-collector-key":"k-123"}',
  };
  serve = spawnCli('serve', env, { fromSource: true });
  work = spawnCli('work', env, { fromSource: true });
  await waitUntilReady(url, serve);
});

afterAll(async () => {
  await Promise.all([stop(serve), stop(work)]);
  await Promise.all([collector?.close(), receiver?.close()]);
  await database?.drop();
});

const hex = (bytes: number) =>
  randomUUID()
    .replaceAll('-', '')
    .padEnd(32, 'a')
    .slice(0, bytes * 2);

/** Waits for a span that matches, and returns it. */
const spanWhere = (what: string, match: (span: CollectedSpan) => boolean) => until(what, () => collector.spans.find(match), 20_000);
const childrenOf = (parent: CollectedSpan) =>
  collector.spans.filter((s) => s.parentSpanId === parent.spanId && s.traceId === parent.traceId);
const serverSpanOf = (requestId: string) =>
  spanWhere(`the server span of ${requestId}`, (s) => s.kind === SPAN_KIND.SERVER && s.attributes['lc.request_id'] === requestId);
const operationUnder = (server: CollectedSpan, name: string) =>
  spanWhere(`${name} under ${server.name}`, (s) => s.parentSpanId === server.spanId && s.name === name);

/** The SQL statements under a span, through group-commit spans too, once they have arrived. */
async function statementsUnder(span: CollectedSpan): Promise<CollectedSpan[]> {
  return until(`SQL statements under ${span.name}`, () => {
    const found: CollectedSpan[] = [];
    const walk = (parent: CollectedSpan) => {
      for (const child of childrenOf(parent)) {
        if (child.attributes['db.system.name'] === 'postgresql') found.push(child);
        else walk(child);
      }
    };
    walk(span);
    return found.length > 0 && found;
  });
}

describe('tracing', () => {
  it('follows a load from the caller through HTTP, GraphQL and SQL to the dispatch and its receiver', async () => {
    const callerTrace = hex(16);
    const callerSpan = hex(8);
    const businessKey = `BK_TRACE_${hex(4)}`;
    const created = await gql<{ createRun: { runId: string; hdfsRunPath: string } }>(
      CREATE_RUN,
      { input: { jobKey: JOB, businessKey, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' } },
      { headers: { traceparent: `00-${callerTrace}-${callerSpan}-01`, 'X-Request-Id': 'trace-create' } },
    );
    expect(created.status).toBe(200);
    const run = { ...created.body.data!.createRun, businessKey, stageTable: '' };
    const manifest = await gql(
      REGISTER_MANIFEST,
      { input: manifestInput(run.runId, [5]) },
      { headers: { 'X-Request-Id': 'trace-manifest' } },
    );
    expect(manifest.body.errors).toBeUndefined();
    const claimToken = randomUUID();
    const claimed = await gql(
      CLAIM,
      { input: { runId: run.runId, partitionId: '0000', claimToken, workerNode: 'nifi-01' } },
      { headers: { 'X-Request-Id': 'trace-claim' } },
    );
    expect(claimed.body.data?.claimPartition?.claimed).toBe(true);
    const reported = await gql(
      REPORT,
      { input: chunkInput(run, '0000', claimToken, 0, 1, 5) },
      { headers: { 'X-Request-Id': 'trace-report' } },
    );
    expect(reported.body.data?.reportChunk?.validationScheduled).toBe(true);
    // a query: answered on the execution thread
    const read = await gql(RUN, { runId: run.runId }, { token: 'viewer', headers: { 'X-Request-Id': 'trace-read' } });
    expect(read.body.data?.run?.status).toBe('EXTRACTED_VALIDATED');
    const [call] = await receiver.waitForCalls(1);

    // createRun: a child of the caller's span, then its operation, then its statements
    const createServer = await serverSpanOf('trace-create');
    expect(createServer).toMatchObject({
      traceId: callerTrace,
      parentSpanId: callerSpan,
      name: 'POST /graphql',
      status: { code: STATUS.UNSET },
      attributes: { 'http.request.method': 'POST', 'http.response.status_code': 200, 'url.path': '/graphql' },
      resource: { 'service.name': 'lc-tracing-test', 'lc.process.role': 'serve' },
    });
    const createOperation = await operationUnder(createServer, 'mutation createRun');
    expect(createOperation.attributes).toMatchObject({
      'graphql.operation.type': 'mutation',
      'lc.graphql.root_field': 'createRun',
      'lc.run_id': run.runId,
      'lc.job_key': JOB,
    });
    const createStatements = await statementsUnder(createOperation);
    for (const statement of createStatements) {
      expect(statement).toMatchObject({ traceId: callerTrace, kind: SPAN_KIND.CLIENT, status: { code: STATUS.UNSET } });
      expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.namespace': database.name });
      // values travel apart from the statement: none of the request's values is in its text
      expect(statement.attributes['db.query.text']).not.toContain(businessKey);
    }
    expect(createStatements.map((s) => s.name)).toEqual(expect.arrayContaining(['BEGIN', 'COMMIT']));

    // claimPartition and reportChunk: their own traces, with the run and partition they are about
    for (const [requestId, name] of [
      ['trace-manifest', 'mutation registerManifest'],
      ['trace-claim', 'mutation claimPartition'],
      ['trace-report', 'mutation reportChunk'],
    ] as const) {
      const server = await serverSpanOf(requestId);
      expect(server.parentSpanId).toBe('');
      expect(server.traceId).not.toBe(callerTrace);
      const operation = await operationUnder(server, name);
      expect(operation.attributes['lc.run_id']).toBe(run.runId);
      if (name !== 'mutation registerManifest') expect(operation.attributes['lc.partition_id']).toBe('0000');
      expect((await statementsUnder(operation)).length).toBeGreaterThan(0);
    }

    // the query crossed into the execution thread: its operation and statements were exported from there
    const readServer = await serverSpanOf('trace-read');
    const readOperation = await operationUnder(readServer, 'query run');
    expect(readOperation.resource['lc.process.role']).toBe('serve execution thread');
    expect(readServer.resource['lc.process.role']).toBe('serve');
    expect(readOperation.attributes['lc.run_id']).toBe(run.runId);
    expect((await statementsUnder(readOperation)).every((s) => s.resource['lc.process.role'] === 'serve execution thread')).toBe(true);

    // the dispatch: a client span under the worker's batch, whose traceparent the receiver got
    const delivery = await spanWhere(
      'the VALIDATE_RUN delivery',
      (s) => s.name === 'POST VALIDATE_RUN' && s.attributes['lc.run_id'] === run.runId,
    );
    expect(delivery).toMatchObject({
      kind: SPAN_KIND.CLIENT,
      status: { code: STATUS.UNSET },
      attributes: {
        'lc.dispatch_id': call!.headers['x-dispatch-id'],
        'lc.job_key': JOB,
        'lc.dispatch.type': 'VALIDATE_RUN',
        'lc.dispatch.attempt': 1,
        'http.response.status_code': 202,
        'server.address': '127.0.0.1',
      },
      resource: { 'lc.process.role': 'work' },
    });
    expect(call!.headers.traceparent).toBe(`00-${delivery.traceId}-${delivery.spanId}-01`);
    const batch = await spanWhere('the dispatch batch', (s) => s.spanId === delivery.parentSpanId);
    expect(batch).toMatchObject({ name: 'dispatch batch', parentSpanId: '', attributes: { 'lc.dispatch.batch_size': 1 } });
    // the bookkeeping after the call (SENT) is in the batch's trace
    expect((await statementsUnder(batch)).some((s) => String(s.attributes['db.query.text']).includes('load_dispatch'))).toBe(true);

    expect(collector.exports.every((headers) => headers['x-collector-key'] === 'k-123')).toBe(true);
  });

  it('records failures with their codes: a refusal, a failed statement, a request without a token or cut off, a failed call', async () => {
    const created = await gql<{ createRun: { runId: string; hdfsRunPath: string } }>(CREATE_RUN, {
      input: { jobKey: JOB, businessKey: `BK_FAIL_${hex(4)}`, hdfsRoot: HDFS_ROOT, stageTablePrefix: 'TMP_INSP_DTL_' },
    });
    const run = { ...created.body.data!.createRun, businessKey: '', stageTable: '' };
    await gql(REGISTER_MANIFEST, { input: manifestInput(run.runId, [2, 2]) });
    const tokens = [randomUUID(), randomUUID()];
    for (const [i, token] of tokens.entries()) {
      await gql(CLAIM, { input: { runId: run.runId, partitionId: `000${i}`, claimToken: token, workerNode: 'nifi-01' } });
    }

    // refused by the domain: 404, the operation failed with the contract's code, the request span only says so
    const missing = await gql(
      CLAIM,
      { input: { runId: randomUUID(), partitionId: '0000', claimToken: randomUUID(), workerNode: 'nifi-01' } },
      { headers: { 'X-Request-Id': 'trace-missing' } },
    );
    expect(missing.code).toBe('RUN_NOT_FOUND');
    const missingServer = await serverSpanOf('trace-missing');
    expect(missingServer).toMatchObject({
      status: { code: STATUS.UNSET },
      attributes: { 'http.response.status_code': 404, 'lc.error_code': 'RUN_NOT_FOUND', 'error.type': 'RUN_NOT_FOUND' },
    });
    const missingOperation = await operationUnder(missingServer, 'mutation claimPartition');
    expect(missingOperation.status.code).toBe(STATUS.ERROR);
    expect(missingOperation.status.message).toMatch(/^RUN_NOT_FOUND: /);
    expect(missingOperation.attributes['error.type']).toBe('RUN_NOT_FOUND');

    // a statement PostgreSQL refuses (a chunk path another partition holds): its SQLSTATE on the statement's span
    const first = chunkInput(run, '0000', tokens[0]!, 0, 2, 1);
    await gql(REPORT, { input: first });
    const conflict = await gql(
      REPORT,
      { input: { ...chunkInput(run, '0001', tokens[1]!, 0, 2, 1), hdfsPath: first.hdfsPath } },
      { headers: { 'X-Request-Id': 'trace-conflict' } },
    );
    expect(conflict.code).toBe('FILE_PATH_CONFLICT');
    const conflictOperation = await operationUnder(await serverSpanOf('trace-conflict'), 'mutation reportChunk');
    expect(conflictOperation.status.message).toMatch(/^FILE_PATH_CONFLICT/);
    const refused = (await statementsUnder(conflictOperation)).find((s) => s.status.code === STATUS.ERROR);
    expect(refused?.attributes).toMatchObject({ 'db.response.status_code': '23505', 'error.type': '23505' });

    // a subscription's event stream lives for hours: not traced
    const stream = await subscribe(url, 'subscription($runId: UUID!) { runChanged(runId: $runId) { status } }', { runId: run.runId });
    expect(stream.status).toBe(200);
    const streamId = stream.headers.get('x-request-id');
    expect(streamId).toBeTruthy();
    stream.close();
    // two requests after it, each waited for: a span of the stream's would have ended before them
    for (const requestId of ['trace-after-stream-1', 'trace-after-stream-2']) {
      await gql(RUN, { runId: run.runId }, { token: 'viewer', headers: { 'X-Request-Id': requestId } });
      await serverSpanOf(requestId);
    }
    expect(collector.spans.filter((s) => s.attributes['lc.request_id'] === streamId)).toEqual([]);

    // refused by the HTTP layer before any GraphQL: a request span alone
    const anonymous = await gql(RUN, { runId: run.runId }, { token: null, headers: { 'X-Request-Id': 'trace-anonymous' } });
    expect(anonymous.status).toBe(401);
    const anonymousServer = await serverSpanOf('trace-anonymous');
    expect(anonymousServer.attributes).toMatchObject({ 'http.response.status_code': 401, 'lc.error_code': 'UNAUTHENTICATED' });
    expect(childrenOf(anonymousServer)).toEqual([]);

    // a client that goes away with its request half sent: the span ends failed, with no status it never got
    const cutTrace = hex(16);
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      `POST /graphql HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKENS.nifi}\r\nContent-Type: application/json\r\n` +
        `Content-Length: 1000\r\ntraceparent: 00-${cutTrace}-${hex(8)}-01\r\n\r\n{"query":`,
    );
    // time for the server to read the headers; the span is then waited for, not timed
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.destroy();
    const cut = await spanWhere('the span of the request cut off', (s) => s.traceId === cutTrace);
    expect(cut.status).toEqual({ code: STATUS.ERROR, message: 'the connection closed before the answer was sent' });
    expect(cut.attributes['http.response.status_code']).toBeUndefined();

    // a call the receiver refuses: the delivery span failed with the HTTP status
    receiver.reset();
    receiver.setDefault(503);
    await gql(REPORT, { input: chunkInput(run, '0000', tokens[0]!, 1, 2, 1) });
    await gql(REPORT, { input: { ...chunkInput(run, '0001', tokens[1]!, 0, 2, 1), hdfsPath: `${run.hdfsRunPath}/other-0001-0.parquet` } });
    await gql(REPORT, { input: chunkInput(run, '0001', tokens[1]!, 1, 2, 1) });
    await receiver.waitForCalls(1);
    const failedCall = await spanWhere(
      'the refused delivery',
      (s) => s.name === 'POST VALIDATE_RUN' && s.attributes['lc.run_id'] === run.runId,
    );
    expect(failedCall).toMatchObject({ status: { code: STATUS.ERROR, message: '503' }, attributes: { 'http.response.status_code': 503 } });
    receiver.setDefault(202);
  });

  it('ignores malformed and hostile traceparent headers: the request is answered and starts a trace of its own', async () => {
    const valid = `00-${hex(16)}-${hex(8)}-01`;
    const hostile: string[] = [
      '',
      'garbage',
      valid.toUpperCase(),
      `ff-${hex(16)}-${hex(8)}-01`,
      `00-${'0'.repeat(32)}-${hex(8)}-01`,
      `00-${hex(16)}-${'0'.repeat(16)}-01`,
      `00-${hex(16)}-${hex(8)}-01-extra`,
      `00-${hex(16)}-${hex(8)}`,
      `00-${hex(15)}-${hex(8)}-01`,
      `${valid},${valid}`,
      `${valid}${'-a'.repeat(2000)}`,
      `00-${'g'.repeat(32)}-${hex(8)}-01`,
      '00-%00%0a-01',
      `00-${hex(16)}-${hex(8)}-01\u00e9`,
      // a later version may add fields, but not this many
      `01-${hex(16)}-${hex(8)}-01-${'a'.repeat(600)}`,
    ];
    // random mutations of a valid header: a character replaced, removed or repeated
    let seed = 17;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = '0123456789abcdefABCDEF-_ xz\t';
    for (let i = 0; i < 60; i++) {
      const at = random(valid.length);
      const change = random(3);
      const char = alphabet[random(alphabet.length)]!;
      hostile.push(
        change === 0
          ? valid.slice(0, at) + char + valid.slice(at + 1)
          : change === 1
            ? valid.slice(0, at) + valid.slice(at + 1)
            : valid.slice(0, at) + valid.slice(at).repeat(2),
      );
    }
    const answers = [];
    for (const [i, traceparent] of hostile.entries()) {
      const headers = { traceparent, tracestate: `k${i}=${'v'.repeat(i * 20)},${'x=y,'.repeat(i)}`, 'X-Request-Id': `hostile-${i}` };
      answers.push(await gql('{ runs(first: 1) { nodes { runId } } }', {}, { token: 'viewer', headers }));
    }
    expect(answers.map((a) => a.status)).toEqual(hostile.map(() => 200));
    // a node http client sends the repeated header as two lines; node joins them with ", "
    const repeated = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: [
        ['Content-Type', 'application/json'],
        ['Authorization', `Bearer ${TOKENS.viewer}`],
        ['traceparent', valid],
        ['traceparent', valid],
        ['X-Request-Id', 'hostile-repeated'],
      ],
      body: JSON.stringify({ query: '{ runs(first: 1) { nodes { runId } } }' }),
    });
    expect(repeated.status).toBe(200);

    // W3C trace context: a later version may append fields; ids of zeros are invalid; bit 0 of the flags is "sampled"
    const w3c = (header: string) => {
      const parsed = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(header.trim());
      if (!parsed || header.length > 512 || parsed[1] === 'ff' || (parsed[1] === '00' && parsed[5] !== undefined)) return null;
      if (/^0+$/.test(parsed[2]!) || /^0+$/.test(parsed[3]!)) return null;
      return { traceId: parsed[2]!, spanId: parsed[3]!, sampled: (Number.parseInt(parsed[4]!, 16) & 1) === 1 };
    };
    const requests = [
      ...hostile.map((header, i) => [header, `hostile-${i}`] as const),
      [`${valid}, ${valid}`, 'hostile-repeated'] as const,
    ];
    const unsampled: string[] = [];
    for (const [header, requestId] of requests) {
      const caller = w3c(header);
      // a mutation can still be a valid header (a replaced hex digit): then the caller's decision is followed
      if (caller && !caller.sampled) {
        unsampled.push(requestId);
        continue;
      }
      const server = await serverSpanOf(requestId);
      if (caller) expect([server.traceId, server.parentSpanId]).toEqual([caller.traceId, caller.spanId]);
      else expect(server.parentSpanId).toBe('');
      expect(server.attributes['http.response.status_code']).toBe(200);
    }
    // every span of those requests has arrived by now (exported in order); those the caller did not sample are not there
    expect(collector.spans.filter((s) => unsampled.includes(String(s.attributes['lc.request_id'])))).toEqual([]);
  });
});
