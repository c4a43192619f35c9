// The commands for pausing jobs and for backfills against a real API: what each prints, --json, and the exit codes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isJobCommand, runJobCommand } from '../../../src/commands/backfill-commands.js';
import { EXIT_CODES } from '../../../src/commands/operator.js';
import { startTestApi, TOKENS, type TestApi, type TokenName } from '../../support/api.js';
import { unique } from '../../support/gate-fixtures.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => api?.close());

async function command(argv: string[], token: TokenName = 'operator') {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runJobCommand(argv, {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
    env: { LC_URL: api.url, LC_TOKEN: TOKENS[token] },
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const newJob = () =>
  unique('CLI_BF')
    .toUpperCase()
    .replace(/[^A-Z0-9_]/g, '_');

describe('load-control pause, unpause and paused', () => {
  it('pauses and resumes a job, says when nothing changed, and lists the paused jobs', async () => {
    const jobKey = newJob();
    expect(isJobCommand('pause') && isJobCommand('resume-job') && isJobCommand('backfill')).toBe(true);
    const paused = await command(['pause', jobKey, '--reason', 'source maintenance']);
    expect(paused.code).toBe(EXIT_CODES.done);
    expect(paused.out).toMatch(new RegExp(`^${jobKey}: paused since \\S+ by alice-operator: source maintenance$`));
    expect((await command(['pause', jobKey, '--reason', 'source maintenance'])).out).toContain('(unchanged: it was already so)');
    const listed = await command(['paused', '--json'], 'viewer');
    expect(JSON.parse(listed.out).pausedJobs).toContainEqual(expect.objectContaining({ jobKey, pausedBy: 'alice-operator' }));
    const resumed = await command(['resume-job', jobKey, '--reason', 'maintenance done']);
    expect(resumed.out).toBe(`${jobKey}: not paused`);
    expect((await command(['unpause', jobKey, '--reason', 'maintenance done'])).out).toBe(
      `${jobKey}: not paused (unchanged: it was already so)`,
    );
  });

  it('exits 2 without a reason, 5 without the role, 4 on a refused input', async () => {
    expect((await command(['pause', newJob()])).code).toBe(EXIT_CODES.usage);
    expect((await command(['pause', newJob(), '--reason', 'source maintenance'], 'viewer')).code).toBe(EXIT_CODES.notAllowed);
    expect((await command(['pause', 'lower', '--reason', 'source maintenance'])).code).toBe(EXIT_CODES.refused);
  });
});

describe('load-control backfill', () => {
  it('plans, starts, shows, lists, pauses and cancels a backfill', async () => {
    const jobKey = newJob();
    const plan = await command(['backfill', 'plan', jobKey, '--from', '2026-04-01', '--to', '2026-04-03']);
    expect(plan.code).toBe(EXIT_CODES.done);
    expect(plan.out.split('\n')).toEqual([
      expect.stringMatching(/^position\s+businessDate\s+action\s+reason\s+latestRunStatus\s+latestRunId$/),
      expect.stringMatching(/^1\s+2026-04-01\s+START\s+NO_RUN\s+-\s+-$/),
      expect.stringMatching(/^2\s+2026-04-02\s+START\s+NO_RUN/),
      expect.stringMatching(/^3\s+2026-04-03\s+START\s+NO_RUN/),
    ]);
    const started = await command([
      'backfill',
      'start',
      jobKey,
      '--from',
      '2026-04-01',
      '--to',
      '2026-04-03',
      '--max-concurrent',
      '1',
      '--hold-readiness',
      '--json',
    ]);
    const backfill = JSON.parse(started.out).startBackfill.backfill;
    expect(backfill).toMatchObject({
      jobKey,
      status: 'RUNNING',
      maxConcurrent: 1,
      readinessHeld: true,
      progress: { queued: 2, running: 1 },
    });

    const shown = await command(['backfill', 'show', backfill.backfillId], 'viewer');
    expect(shown.out).toContain(`backfill ${backfill.backfillId}  ${jobKey} 2026-04-01..2026-04-03  RUNNING  maxConcurrent 1`);
    expect(shown.out).toMatch(/^1\s+2026-04-01\s+STARTING\s+-\s+-\s+PENDING$/m);
    const listed = await command(['backfill', 'list', '--job', jobKey, '--open'], 'viewer');
    expect(listed.out).toContain(backfill.backfillId);

    expect((await command(['backfill', 'pause', backfill.backfillId, '--reason', 'hold it for now'])).out).toMatch(/^PAUSED\n/);
    expect((await command(['backfill', 'cancel', backfill.backfillId, '--reason', 'wrong range'])).out).toMatch(/^CANCELLED\n/);
    const again = await command(['backfill', 'resume', backfill.backfillId, '--reason', 'go on after all']);
    expect(again.code).toBe(EXIT_CODES.refused);
    expect(again.err).toContain('BACKFILL_STATUS_MISMATCH');
    expect((await command(['backfill', 'show', '00000000-0000-4000-8000-000000000000'], 'viewer')).code).toBe(EXIT_CODES.notFound);
    expect((await command(['backfill', 'explode'])).code).toBe(EXIT_CODES.usage);
  });
});
