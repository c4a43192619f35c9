// The alert rules and the dashboard in deploy/, checked with Prometheus's own promtool (Debian's `prometheus`
// package; .ci/run installs it), against the metrics the processes really export.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectProcessMetrics, observeRunLockWaits } from '../../src/server/metrics.js';
import { startHeartbeat, type Heartbeat } from '../../src/worker/heartbeat.js';
import { createWorkerMetrics } from '../../src/worker/metrics.js';
import { createSweeper } from '../../src/worker/sweeper.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { claim, FAIL_PARTITION, startRun } from '../support/fixtures.js';
import { until } from '../support/until.js';
import { quietLog } from '../support/worker.js';

const RULES = 'deploy/prometheus/load-control.rules.yml';
const RULE_TESTS = 'deploy/prometheus/load-control.rules.test.yml';
const DASHBOARD = 'deploy/grafana/load-control.json';

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', args, { input, encoding: 'utf8' });
  if (result.error) throw new Error(`promtool is needed (Debian: apt-get install prometheus): ${result.error.message}`);
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

let api: TestApi;
let heartbeat: Heartbeat;
/** What `serve` answers at /metrics (its execution thread's figures added), and what `work` does. */
const exported: Record<'serve' | 'work', string> = { serve: '', work: '' };

beforeAll(async () => {
  api = await startTestApi({}, { lane: { threads: 1 } });
  await until('the execution thread to load', async () => (await fetch(`${api.url}/readyz`)).ok);
  // some traffic, so that every series has values: requests on both threads, a chunk report, a run lock
  const run = await startRun(api, [3, 3]);
  const owner = await claim(api, run.runId, '0000');
  await api.gql(FAIL_PARTITION, {
    input: {
      runId: run.runId,
      partitionId: '0000',
      claimToken: owner.claimToken,
      errorStage: 'PG-20',
      errorClass: 'X',
      errorCode: 'E',
      message: 'm',
      attempt: 1,
    },
  });
  await api.gql('{ runs(first: 5) { nodes { runId } } }', {}, { token: 'viewer' });

  const registry = new Registry();
  collectProcessMetrics(registry);
  observeRunLockWaits(registry);
  const metrics = createWorkerMetrics(registry);
  heartbeat = startHeartbeat({ db: api.db, log: quietLog, role: 'work', dispatcher: true, sweeper: true, registry, intervalMs: 50 });
  await createSweeper({ config: api.config, db: api.db, log: quietLog, metrics }).cycle();
  exported.work = await until('a beat in the gauge', async () => {
    const text = await registry.metrics();
    return text.includes('lc_process_heartbeat_age_seconds{') ? text : null;
  });
  exported.serve = await (await fetch(`${api.url}/metrics`)).text();
}, 120_000);

afterAll(async () => {
  await heartbeat?.stop();
  await api?.close();
});

/** Metric names a PromQL expression reads (ours all start with lc_), without histogram suffixes. */
const metricNames = (expr: string) => [...expr.matchAll(/\b(lc_[a-z0-9_]+)/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, ''));
const exportedNames = () => new Set([...`${exported.serve}\n${exported.work}`.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));

describe('the alert rules', () => {
  it('pass `promtool check rules` and their unit tests (`promtool test rules`)', () => {
    const checked = promtool(['check', 'rules', RULES]);
    expect(checked.output).toContain('SUCCESS: 10 rules found');
    expect(checked.status).toBe(0);
    const tested = promtool(['test', 'rules', RULE_TESTS]);
    expect(tested.output).toContain('SUCCESS');
    expect(tested.status).toBe(0);
  });

  it('read only metrics the processes export', () => {
    const used = new Set(metricNames(readFileSync(RULES, 'utf8')));
    expect(used.size).toBeGreaterThanOrEqual(6);
    const names = exportedNames();
    expect([...used].filter((name) => !names.has(name))).toEqual([]);
  });
});

describe('the dashboard', () => {
  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
    uid: string;
    panels: Array<{ id: number; title: string; targets: Array<{ expr: string }> }>;
  };
  const expressions = dashboard.panels.flatMap((p) => p.targets.map((t) => ({ panel: p.title, expr: t.expr })));

  it('has valid PromQL in every panel, over metrics the processes export', () => {
    expect(dashboard.uid).toBe('load-control');
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    // promtool parses PromQL when it checks rules: each panel's expression as a recording rule
    const dir = mkdtempSync(join(tmpdir(), 'lc-dashboard-'));
    const rules = `groups:\n  - name: dashboard\n    rules:\n${expressions
      .map((e, i) => `      - record: dashboard_panel_${i}\n        expr: ${JSON.stringify(e.expr)}\n`)
      .join('')}`;
    writeFileSync(join(dir, 'panels.yml'), rules);
    const checked = promtool(['check', 'rules', join(dir, 'panels.yml')]);
    expect(checked.output).toContain(`SUCCESS: ${expressions.length} rules found`);
    const names = exportedNames();
    const missing = expressions.flatMap((e) =>
      metricNames(e.expr)
        .filter((n) => !names.has(n))
        .map((n) => `${e.panel}: ${n}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('/metrics', () => {
  it('passes `promtool check metrics` for serve (with its execution thread) and for work', () => {
    for (const [process, text] of Object.entries(exported)) {
      expect(text, process).toContain('lc_run_lock_wait_seconds_bucket');
      const checked = promtool(['check', 'metrics'], text);
      expect({ process, output: checked.output, status: checked.status }).toEqual({ process, output: '', status: 0 });
    }
    // every kind and severity is a series, zeros included
    expect(exported.work).toMatch(/^lc_alerts\{kind="CHUNK_CONFLICT",severity="ERROR"\} 0$/m);
    expect(exported.serve).toMatch(/^lc_requests_total\{operation="runs",status="200"\} 1$/m);
    // a failPartition waited for its run's row
    expect(exported.serve).toMatch(/^lc_run_lock_wait_seconds_count [1-9]/m);
    expect(execFileSync('promtool', ['--version'], { encoding: 'utf8' })).toMatch(/^promtool, version 2\./);
  });
});
