// `load-control resume`, `runs --tag` and what `run` shows of a resumed, tagged run, against a real API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES, runOperatorCommand } from '../../../src/commands/operator.js';
import { startTestApi, TOKENS, type TestApi, type TokenName } from '../../support/api.js';
import { createRun, startRun, toFailedExtract } from '../../support/fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function operator(argv: string[], token: TokenName = 'operator') {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runOperatorCommand(argv, {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: { LC_URL: api.url, LC_TOKEN: TOKENS[token] },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('load-control resume', () => {
  it('resumes a failed run by its short id, and run shows the carried partitions and both attempts', async () => {
    const failed = await toFailedExtract(api, [3, 4, 5], ['0000', '0002']);
    const resumed = await operator(['resume', failed.runId.slice(0, 8), '--reason', 'the source is back']);
    expect(resumed.code).toBe(EXIT_CODES.done);
    const match = /^resumed as ([0-9a-f-]{36}): EXTRACTING, 2 partitions carried over, 1 to extract again under (\S+)$/.exec(resumed.out);
    expect(match?.[2]).toBe(failed.hdfsRunPath);
    const newRunId = match![1]!;

    const shown = await operator(['run', newRunId], 'viewer');
    expect(shown.out).toMatch(new RegExp(`^resumedFromRunId\\s+${failed.runId}$`, 'm'));
    expect(shown.out).toContain(`carried over from ${failed.runId}: 2 partitions: 0000 0002`);
    expect(shown.out).toMatch(/^RETRY\s+1$/m);
    const old = await operator(['run', failed.runId], 'viewer');
    expect(old.out).toMatch(new RegExp(`^resumedAsRunId\\s+${newRunId}$`, 'm'));
    expect(old.out).not.toContain('carried over from');
  });

  it('exits 4 with the ledger’s code when the run cannot be resumed, 2 without a reason, 5 for a viewer', async () => {
    const active = await startRun(api, [3]);
    const refused = await operator(['resume', active.runId, '--reason', 'the source is back']);
    expect([refused.code, refused.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: RUN_NOT_RESUMABLE \(HTTP 409\)/)]);
    const noReason = await operator(['resume', active.runId]);
    expect([noReason.code, noReason.err]).toEqual([EXIT_CODES.usage, expect.stringContaining('--reason')]);
    const viewer = await operator(['resume', active.runId, '--reason', 'the source is back'], 'viewer');
    expect(viewer.code).toBe(EXIT_CODES.notAllowed);
  });
});

describe('load-control runs --tag', () => {
  it('lists the runs carrying every tag given, and run shows the tags and the flow', async () => {
    const team = `t${Date.now().toString(36)}`;
    const both = await createRun(api, {
      tags: `team=${team},source=erp`,
      flowRegistry: 'registry',
      flowBucket: 'loads',
      flowId: 'f1',
      flowVersion: '4',
    });
    const one = await createRun(api, { tags: `team=${team}` });
    const ids = async (...tags: string[]) =>
      (await operator(['runs', ...tags.flatMap((tag) => ['--tag', tag])], 'viewer')).out
        .split('\n')
        .slice(1)
        .map((line) => line.split(/\s+/)[0]);
    expect(await ids(`team=${team}`)).toEqual([one.runId, both.runId]);
    expect(await ids(`team=${team}`, 'source=erp')).toEqual([both.runId]);
    const shown = await operator(['run', both.runId], 'viewer');
    expect(shown.out).toMatch(new RegExp(`^tags\\s+source=erp,team=${team}$`, 'm'));
    expect(shown.out).toMatch(/^flow\s+registry \/ loads \/ f1 v4$/m);
    const bad = await operator(['runs', '--tag', 'team'], 'viewer');
    expect([bad.code, bad.err]).toEqual([EXIT_CODES.refused, expect.stringMatching(/^error: INVALID_INPUT \(HTTP 422\)/)]);
  });
});
