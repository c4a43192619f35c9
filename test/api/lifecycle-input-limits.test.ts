// Every string and integer field of the mutations after extraction (validation, publishing, cleanup and the
// operator actions), made over-long or out of range: always a 422 INVALID_INPUT, and nothing changes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, type TokenName } from '../support/api.js';
import {
  CLAIM_PUBLISH,
  MARK_SUCCESS,
  RECORD_METRICS,
  REPORT_PUBLISH_RESULT,
  START_VALIDATION,
  toPublished,
  toStageValidating,
} from '../support/fixtures.js';

let api: TestApi;
let baselines: Record<string, { query: string; input: Record<string, unknown>; token: TokenName }>;

beforeAll(async () => {
  api = await startTestApi();
  const validating = await toStageValidating(api);
  const published = await toPublished(api);
  const metric = { metricName: 'STAGE_COUNT', expectedValue: '7', actualValue: '7', tolerance: '0', result: 'PASS' };
  baselines = {
    startValidation: {
      query: START_VALIDATION,
      input: { runId: validating.runId, dispatchId: validating.dispatchId, node: 'n' },
      token: 'nifi',
    },
    recordMetrics: {
      query: RECORD_METRICS,
      input: { runId: validating.runId, stage: 'STAGING', queryVersion: 'v1', metrics: [metric] },
      token: 'nifi',
    },
    claimPublish: { query: CLAIM_PUBLISH, input: { runId: published.runId, publishToken: randomUUID() }, token: 'nifi' },
    reportPublishResult: {
      query: REPORT_PUBLISH_RESULT,
      input: { runId: published.runId, publishToken: published.publishToken, outcome: 'FAILED_PUBLISH', errorCode: 'E', message: 'm' },
      token: 'nifi',
    },
    markSuccess: { query: MARK_SUCCESS, input: { runId: published.runId, targetCount: '7' }, token: 'nifi' },
    recordCleanup: {
      query: 'mutation($input: RecordCleanupInput!) { recordCleanup(input: $input) { changed } }',
      input: { runId: published.runId, droppedTable: 't', deletedPath: published.hdfsRunPath },
      token: 'nifi',
    },
    resolveUnknown: {
      query: 'mutation($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { changed } }',
      input: { runId: published.runId, resolution: 'PUBLISHED', reason: 'a reason' },
      token: 'operator',
    },
    resendDispatch: {
      query: 'mutation($input: ResendDispatchInput!) { resendDispatch(input: $input) { status } }',
      input: { runId: validating.runId, dispatchId: validating.dispatchId, reason: 'a reason' },
      token: 'operator',
    },
    cancelRun: {
      query: 'mutation($input: CancelRunInput!) { cancelRun(input: $input) { changed } }',
      input: { runId: validating.runId, reason: 'a reason' },
      token: 'operator',
    },
  };
});
afterAll(async () => api?.close());

const HUGE = 'x'.repeat(100_000);
const ENUM_FIELDS = new Set(['outcome', 'resolution', 'result']);
const LONG_FIELDS = new Set(['targetCount']);

function cases(input: Record<string, unknown>): Array<[string, Record<string, unknown>]> {
  const out: Array<[string, Record<string, unknown>]> = [];
  for (const [field, value] of Object.entries(input)) {
    if (field === 'metrics') {
      for (const [label, metric] of cases(metricOf(input))) out.push([`metrics[0].${label}`, { ...input, metrics: [metric] }]);
      out.push(['metrics[0].details over 64 KiB', { ...input, metrics: [{ ...metricOf(input), details: { blob: HUGE } }] }]);
      continue;
    }
    if (typeof value !== 'string' || ENUM_FIELDS.has(field)) continue;
    out.push([`${field} over-long`, { ...input, [field]: HUGE }]);
    if (LONG_FIELDS.has(field)) {
      out.push([`${field} beyond 64 bits`, { ...input, [field]: '9'.repeat(25) }]);
      out.push([`${field} negative`, { ...input, [field]: '-1' }]);
    }
  }
  return out;
}
const metricOf = (input: Record<string, unknown>) => (input.metrics as Array<Record<string, unknown>>)[0]!;

async function fingerprint(): Promise<string> {
  const { rows } = await api.sql.query(`SELECT
    (SELECT count(*) FROM nifi_ops.load_validation) || '/' || (SELECT count(*) FROM nifi_ops.load_event) || '/' ||
    (SELECT string_agg(status, ',' ORDER BY dispatch_id) FROM nifi_ops.load_dispatch) || '/' ||
    (SELECT sum(version_no) FROM nifi_ops.load_run) || '/' || (SELECT count(cleaned_at) FROM nifi_ops.load_run) AS fingerprint`);
  return rows[0].fingerprint;
}

describe('malformed input after extraction is a 422 and changes nothing', () => {
  it.each([
    'startValidation',
    'recordMetrics',
    'claimPublish',
    'reportPublishResult',
    'markSuccess',
    'recordCleanup',
    'resolveUnknown',
    'resendDispatch',
    'cancelRun',
  ])('%s', async (name) => {
    const { query, input, token } = baselines[name]!;
    const variants = cases(input);
    expect(variants.length).toBeGreaterThan(1);
    for (const [label, bad] of variants) {
      const before = await fingerprint();
      const res = await api.gql(query, { input: bad }, { token });
      expect([res.status, res.code], `${name}: ${label}`).toEqual([422, 'INVALID_INPUT']);
      expect(await fingerprint(), `${name}: ${label} changed nothing`).toBe(before);
    }
  });
});
