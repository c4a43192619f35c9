// Every string, integer and decimal field of the ledger's NiFi mutations, made over-long or out of range:
// always a 422 INVALID_INPUT (never a 503 NiFi would retry forever, never a 500), and nothing changes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../support/api.js';
import {
  CLAIM,
  CREATE_RUN,
  FAIL_PARTITION,
  FAIL_RUN,
  REGISTER_MANIFEST,
  REPORT,
  chunkInput,
  claim,
  manifestInput,
  startRun,
} from '../support/fixtures.js';

let api: TestApi;
let baselines: Record<string, { query: string; input: Record<string, unknown> }>;

beforeAll(async () => {
  api = await startTestApi();
  const run = await startRun(api, [5, 5]);
  const owner = await claim(api, run.runId, '0000');
  const created = await api.gql(CREATE_RUN, { input: { jobKey: 'J', businessKey: 'B1', hdfsRoot: '/d', stageTablePrefix: 'T' } });
  baselines = {
    createRun: {
      query: CREATE_RUN,
      input: {
        jobKey: 'JOB',
        businessKey: `B_${randomUUID().slice(0, 6)}`,
        hdfsRoot: '/data',
        stageTablePrefix: 'T_',
        idempotencyKey: 'k',
      },
    },
    registerManifest: { query: REGISTER_MANIFEST, input: manifestInput(created.body.data!.createRun.runId, [3]) },
    failRun: {
      query: FAIL_RUN,
      input: {
        runId: run.runId,
        expectedStatus: 'EXTRACTING',
        failStatus: 'FAILED_EXTRACT',
        errorStage: 'S',
        errorCode: 'C',
        message: 'm',
      },
    },
    claimPartition: { query: CLAIM, input: { runId: run.runId, partitionId: '0001', claimToken: randomUUID(), workerNode: 'n' } },
    reportChunk: { query: REPORT, input: chunkInput(run, '0000', owner.claimToken, 0, 2, 2) },
    failPartition: {
      query: FAIL_PARTITION,
      input: {
        runId: run.runId,
        partitionId: '0000',
        claimToken: owner.claimToken,
        errorStage: 'S',
        errorClass: 'C',
        errorCode: 'E',
        message: 'm',
        attempt: '1',
      },
    },
    recordEvent: {
      query: 'mutation($input: RecordEventInput!) { recordEvent(input: $input) { eventId } }',
      input: {
        runId: run.runId,
        level: 'ERROR',
        name: 'X',
        jobKey: 'J',
        businessKey: 'B',
        partitionId: '0000',
        chunkIndex: '1',
        processGroup: 'PG-20',
        processorName: 'p',
        processorId: 'i',
        nodeId: 'n',
        attemptNo: '1',
        rowCount: '1',
        byteCount: '1',
        durationMs: '1',
        errorClass: 'c',
        errorCode: 'e',
        message: 'm',
      },
    },
  };
});
afterAll(async () => api?.close());

const HUGE = 'x'.repeat(100_000);
const ENUM_FIELDS = new Set(['level', 'expectedStatus', 'failStatus']);
const LONG_FIELDS = new Set([
  'sourceCount',
  'sourceNullSplitCount',
  'plannedPartitionCount',
  'chunkIndex',
  'chunkCount',
  'recordCount',
  'byteCount',
  'attempt',
  'attemptNo',
  'rowCount',
  'durationMs',
]);
const DECIMAL_FIELDS = new Set(['snapshotScn', 'sourceMinSplit', 'sourceMaxSplit']);

function mutations(input: Record<string, unknown>): Array<[string, Record<string, unknown>]> {
  const cases: Array<[string, Record<string, unknown>]> = [];
  for (const [field, value] of Object.entries(input)) {
    if (typeof value !== 'string' || ENUM_FIELDS.has(field)) continue;
    cases.push([`${field} over-long`, { ...input, [field]: HUGE }]);
    if (LONG_FIELDS.has(field)) {
      cases.push([`${field} beyond 64 bits`, { ...input, [field]: '9'.repeat(25) }]);
      cases.push([`${field} negative`, { ...input, [field]: '-1' }]);
    }
    if (DECIMAL_FIELDS.has(field)) cases.push([`${field} beyond 38 digits`, { ...input, [field]: '9'.repeat(39) }]);
  }
  return cases;
}

async function tableCounts(): Promise<string> {
  const { rows } = await api.sql.query(`SELECT
    (SELECT count(*) FROM nifi_ops.load_run) || '/' || (SELECT count(*) FROM nifi_ops.load_partition) || '/' ||
    (SELECT count(*) FROM nifi_ops.load_file) || '/' || (SELECT count(*) FROM nifi_ops.load_event) || '/' ||
    (SELECT max(version_no) FROM nifi_ops.load_run) AS fingerprint`);
  return rows[0].fingerprint;
}

describe('malformed input is a 422 and changes nothing', () => {
  it.each(['createRun', 'registerManifest', 'failRun', 'claimPartition', 'reportChunk', 'failPartition', 'recordEvent'])(
    '%s',
    async (name) => {
      const { query, input } = baselines[name]!;
      const cases = mutations(input);
      expect(cases.length).toBeGreaterThan(2);
      for (const [label, bad] of cases) {
        const before = await tableCounts();
        const res = await api.gql(query, { input: bad });
        expect([res.status, res.code], `${name}: ${label}`).toEqual([422, 'INVALID_INPUT']);
        expect(await tableCounts(), `${name}: ${label} changed nothing`).toBe(before);
      }
    },
  );

  it('refuses malformed UUIDs, dates and decimals in variables with 422', async () => {
    const res = await api.gql(CLAIM, {
      input: { runId: 'x'.repeat(5000), partitionId: '0000', claimToken: randomUUID(), workerNode: 'n' },
    });
    expect([res.status, res.code]).toEqual([422, 'INVALID_INPUT']);
    const manifest = manifestInput(randomUUID(), [3]) as Record<string, any>;
    manifest.partitions[0].lowerBound = '1.5';
    const decimal = await api.gql(REGISTER_MANIFEST, { input: manifest });
    expect([decimal.status, decimal.code]).toEqual([422, 'INVALID_INPUT']);
  });
});
