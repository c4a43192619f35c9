// runs(filter: { runIdPrefix }): the short ids the console shows (and the CLI takes) find their run, through the
// primary key's range; anything but hexadecimal digits is refused before the database sees it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createRun } from '../../support/fixtures.js';

const RUNS = `query($prefix: String) { runs(filter: { runIdPrefix: $prefix }, first: 50) { nodes { runId } } }`;

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function runIds(prefix: string) {
  const res = await api.gql<{ runs: { nodes: Array<{ runId: string }> } }>(RUNS, { prefix }, { token: 'viewer' });
  return { status: res.status, code: res.code, ids: res.body.data?.runs?.nodes.map((n) => n.runId) ?? null };
}

describe('runs by the first digits of their id', () => {
  it('finds the runs whose id begins with the digits, in any case and with or without hyphens', async () => {
    const [a, b] = [await createRun(api), await createRun(api)];
    for (const prefix of [a.runId.slice(0, 8), a.runId.slice(0, 13).toUpperCase(), a.runId.slice(0, 13).replace('-', ''), a.runId]) {
      const found = await runIds(prefix);
      expect(found.status, prefix).toBe(200);
      expect(found.ids, prefix).toContain(a.runId);
      const digits = prefix.replaceAll('-', '').toLowerCase();
      for (const id of found.ids!) expect(id.replaceAll('-', '').startsWith(digits), `${id} begins with ${prefix}`).toBe(true);
    }
    if (!b.runId.startsWith(a.runId.slice(0, 8))) expect((await runIds(a.runId.slice(0, 8))).ids).not.toContain(b.runId);
  });

  it('refuses what is not the start of a run id, and changes nothing', async () => {
    const { rows: before } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    for (const prefix of ['abc', 'xyz12345', "0000' OR 1=1 --", `${'a'.repeat(33)}`, '%']) {
      const refused = await runIds(prefix);
      expect([refused.status, refused.code], prefix).toEqual([422, 'INVALID_INPUT']);
    }
    const { rows: after } = await api.sql.query('SELECT count(*)::int AS n FROM nifi_ops.load_run');
    expect(after).toEqual(before);
  });
});
