// What NiFi sends, as it sends it: Boolean fields as the strings of FlowFile attributes, `application/json;
// charset=UTF-8`, and error answers read through InvokeHTTP's eyes — the response header attribute named exactly
// as the server spells it, and only the first 256 bytes of the body.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { CREATE_RUN, createRun, HDFS_ROOT, JOB, manifestInput, REGISTER_MANIFEST } from '../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(() => api.close());

interface RawAnswer {
  status: number;
  /** Header names as they came on the wire (InvokeHTTP makes them attribute names, case and all). */
  headerNames: string[];
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function rawPost(body: string, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const url = new URL(api.url);
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/graphql',
        method: 'POST',
        headers: { 'Content-Type': 'application/json; charset=UTF-8', Authorization: `Bearer ${TOKENS.nifi}`, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headerNames: res.rawHeaders.filter((_, i) => i % 2 === 0),
            headers: res.headers,
            body: Buffer.concat(chunks),
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const createInput = (allowEmptySource: unknown) => ({
  jobKey: JOB,
  businessKey: `BK_${Math.random().toString(36).slice(2, 10)}`,
  hdfsRoot: HDFS_ROOT,
  stageTablePrefix: 'TMP_INSP_DTL_',
  allowEmptySource,
});

/** An empty source succeeds only with allowEmptySource true: what the run was created with shows in its manifest. */
async function emptyManifestStatus(allowEmptySource: unknown): Promise<{ status: number; code: string | undefined; runStatus?: string }> {
  const created = await api.gql(CREATE_RUN, { input: createInput(allowEmptySource) });
  expect(created.status).toBe(200);
  const runId = created.body.data!.createRun.runId as string;
  const manifest = await api.gql(REGISTER_MANIFEST, {
    input: {
      ...manifestInput(runId, []),
      sourceMinSplit: null,
      sourceMaxSplit: null,
      plannedPartitionCount: '1',
      partitions: [{ partitionId: '0000', lowerBound: '1', upperBound: '2', upperInclusive: 'true', expectedRowCount: '0' }],
    },
  });
  return { status: manifest.status, code: manifest.code, runStatus: manifest.body.data?.registerManifest?.status };
}

describe('Boolean inputs given as strings', () => {
  it('"true" and "false" (blanks around allowed, as Long allows them) are the Booleans', async () => {
    expect(await emptyManifestStatus('true')).toEqual({ status: 200, code: undefined, runStatus: 'EXTRACTED_VALIDATED' });
    expect(await emptyManifestStatus(' true\n')).toEqual({ status: 200, code: undefined, runStatus: 'EXTRACTED_VALIDATED' });
    expect(await emptyManifestStatus('false')).toMatchObject({ status: 422, code: 'MANIFEST_INVALID' });
    expect(await emptyManifestStatus(true)).toEqual({ status: 200, code: undefined, runStatus: 'EXTRACTED_VALIDATED' });
  });

  it('in every item of a list: the manifest partitions of the plan query, strings all through', async () => {
    const run = await createRun(api);
    const input = manifestInput(run.runId, [3, 4], { nullCount: 2 }) as { partitions: Array<Record<string, unknown>> };
    for (const p of input.partitions) {
      p.upperInclusive = String(p.upperInclusive ?? false);
      p.isNullPartition = String(p.isNullPartition ?? false);
    }
    const res = await api.gql(REGISTER_MANIFEST, { input });
    expect([res.status, res.body.data?.registerManifest?.status]).toEqual([200, 'EXTRACTING']);
    const runs = await api.gql('query($active: Boolean) { runs(filter: { activeOnly: $active }, first: 500) { nodes { runId } } }', {
      active: 'true',
    });
    expect(runs.status).toBe(200);
    expect(runs.body.data!.runs.nodes.map((n: { runId: string }) => n.runId)).toContain(run.runId);
  });

  it('any other string is 422 INVALID_INPUT naming the field, and changes nothing; other types stay 400', async () => {
    const before = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    for (const value of ['yes', 'TRUE', '1', '']) {
      const res = await api.gql(CREATE_RUN, { input: createInput(value) });
      expect([res.status, res.code, res.details], value).toEqual([
        422,
        'INVALID_INPUT',
        { field: 'input.allowEmptySource', reason: 'must be true or false (a JSON boolean, or the string "true" or "false")' },
      ]);
    }
    const run = await createRun(api);
    const input = manifestInput(run.runId, [3]) as { partitions: Array<Record<string, unknown>> };
    input.partitions[0]!.isNullPartition = 'no';
    const manifest = await api.gql(REGISTER_MANIFEST, { input });
    expect([manifest.status, manifest.details?.field]).toEqual([422, 'input.partitions.0.isNullPartition']);
    const number = await api.gql(CREATE_RUN, { input: createInput(1) });
    expect([number.status, number.code]).toEqual([400, 'BAD_REQUEST']);
    const after = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    expect(after.rows[0].n).toBe(before.rows[0].n + 1);
  });
});

describe('the request as InvokeHTTP sends it', () => {
  it('takes application/json with a charset parameter, in any case', async () => {
    for (const contentType of ['application/json; charset=UTF-8', 'application/json;charset=utf-8', 'application/json; charset="UTF-8"']) {
      const res = await rawPost(JSON.stringify({ query: CREATE_RUN, variables: { input: createInput('false') } }), {
        'Content-Type': contentType,
      });
      expect(res.status, contentType).toBe(200);
      expect(JSON.parse(res.body.toString()).data.createRun.created).toBe(true);
    }
  });

  it('reads the body as UTF-8: what NiFi escaped and what it did not arrive the same', async () => {
    const parameters = { note: 'Größe 測定 🚀' };
    const escaped = JSON.stringify({ query: CREATE_RUN, variables: { input: { ...createInput('false'), parameters } } }).replace(
      /[^\x20-\x7e]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
    );
    const raw = await rawPost(escaped);
    const runId = JSON.parse(raw.body.toString()).data.createRun.runId;
    const direct = await rawPost(JSON.stringify({ query: CREATE_RUN, variables: { input: { ...createInput('false'), parameters } } }));
    const other = JSON.parse(direct.body.toString()).data.createRun.runId;
    const { rows } = await api.sql.query('SELECT parameters->>$3 AS note FROM nifi_ops.load_run WHERE run_id IN ($1, $2)', [
      runId,
      other,
      'note',
    ]);
    expect(rows.map((r) => r.note)).toEqual([parameters.note, parameters.note]);
  });
});

describe('an error answer as InvokeHTTP keeps it', () => {
  /** The first 256 bytes: InvokeHTTP's default Response Body Attribute Size. */
  const kept = (answer: RawAnswer) => answer.body.subarray(0, 256).toString('latin1');

  it('names the code in an X-Error-Code header spelled exactly so, and in the first 256 bytes of the body', async () => {
    const input = createInput('false');
    await rawPost(JSON.stringify({ query: CREATE_RUN, variables: { input } }));
    const duplicate = await rawPost(JSON.stringify({ query: CREATE_RUN, variables: { input } }));
    expect(duplicate.status).toBe(409);
    // the flow routes on ${load.api.header.X-Error-Code}: attribute names are case-sensitive
    expect(duplicate.headerNames).toContain('X-Error-Code');
    expect(duplicate.headers['x-error-code']).toBe('DUPLICATE_ACTIVE_RUN');
    expect(kept(duplicate)).toMatch(/^\{"errors":\[\{"extensions":\{"code":"DUPLICATE_ACTIVE_RUN"/);

    // a MANIFEST_INVALID with thousands of violations: a 2,000-character message and long details
    const run = await createRun(api);
    const bad = manifestInput(
      run.runId,
      Array.from({ length: 3000 }, () => 1),
    ) as { partitions: Array<Record<string, unknown>> };
    for (const p of bad.partitions) p.upperInclusive = 'true';
    const manifest = await rawPost(JSON.stringify({ query: REGISTER_MANIFEST, variables: { input: bad } }));
    expect(manifest.status).toBe(422);
    expect(manifest.body.length).toBeGreaterThan(2000);
    expect(kept(manifest)).toMatch(/^\{"errors":\[\{"extensions":\{"code":"MANIFEST_INVALID"/);

    const invalid = await rawPost(
      JSON.stringify({ query: CREATE_RUN, variables: { input: { ...createInput('false'), jobKey: 'x'.repeat(500) } } }),
    );
    expect([invalid.status, kept(invalid)]).toEqual([422, expect.stringMatching(/^\{"errors":\[\{"extensions":\{"code":"INVALID_INPUT"/)]);

    const unauthenticated = await rawPost('{}', { Authorization: 'Bearer wrong' });
    expect(unauthenticated.headerNames).toContain('X-Error-Code');
    expect([unauthenticated.status, kept(unauthenticated)]).toEqual([
      401,
      expect.stringMatching(/^\{"errors":\[\{"extensions":\{"code":"UNAUTHENTICATED"/),
    ]);
  });
});
