// `npm run mutants [-- --only id,id] [--jobs N]`: applies each mutant of spec/mutants.ts to a scratch copy of this
// tree, runs its tests there against the test PostgreSQL (TEST_DATABASE_URL, as `npm test`), and prints which test
// killed it and how long that took. Exits 1 when a mutant survives: every one must be killed.
import { spawn, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MUTANTS, applyMutant, type Mutant } from '../spec/mutants.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const RUN_TIMEOUT_MS = 15 * 60_000;

/** killed: a test failed on it; errored: its tests could not run (no evidence either way); survived: they passed. */
type Outcome = 'killed' | 'errored' | 'survived';

interface Verdict {
  mutant: Mutant;
  outcome: Outcome;
  /** The failing test, or why the tests did not run. */
  detail: string;
  seconds: number;
}

/** The tree as git sees it (tracked and untracked-but-not-ignored files), plus the generated Prisma client. */
async function scratchCopy(id: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `lc-mutant-${id}-`));
  const listed = spawnSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.status !== 0) throw new Error(`git ls-files failed: ${listed.stderr}`);
  for (const file of listed.stdout.split('\0').filter(Boolean)) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await cp(join(ROOT, file), join(dir, file)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error; // deleted in the working tree, not yet in the index
    });
  }
  await cp(join(ROOT, 'src/generated'), join(dir, 'src/generated'), { recursive: true });
  for (const shared of ['node_modules', 'dist']) await symlink(join(ROOT, shared), join(dir, shared));
  return dir;
}

/** vitest in the scratch copy; its JSON report goes where vitest.config.ts says, test-artifacts/vitest.json. */
function vitest(dir: string, mutant: Mutant): Promise<number | null> {
  const args = ['vitest', 'run', ...mutant.tests];
  if (mutant.testNamePattern) args.push('-t', mutant.testNamePattern);
  return new Promise((done) => {
    const child = spawn('npx', args, { cwd: dir, stdio: 'ignore', env: process.env });
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      done(code);
    });
  });
}

interface TestRun {
  code: number | null;
  /** Failed tests, as `file › name`; then files that did not load, with vitest's message. */
  failed: string[];
  broken: string[];
  seconds: number;
}

/** The mutant's tests in a scratch copy of the tree, with the mutant applied or (baseline) without. */
async function runTests(mutant: Mutant, mutated: boolean): Promise<TestRun> {
  const dir = await scratchCopy(mutant.id);
  const started = performance.now();
  try {
    if (mutated) {
      const target = join(dir, mutant.file);
      await writeFile(target, applyMutant(await readFile(target, 'utf8'), mutant));
    }
    const code = await vitest(dir, mutant);
    const seconds = (performance.now() - started) / 1000;
    const report = join(dir, 'test-artifacts/vitest.json');
    const results = JSON.parse(await readFile(report, 'utf8').catch(() => '{"testResults":[]}')) as {
      testResults: Array<{ name: string; message?: string; assertionResults: Array<{ status: string; fullName: string }> }>;
    };
    const name = (file: string) => file.slice(dir.length + 1);
    const failed = results.testResults.flatMap((file) =>
      file.assertionResults.filter((test) => test.status === 'failed').map((test) => `${name(file.name)} › ${test.fullName}`),
    );
    const broken = results.testResults.filter((file) => file.message).map((file) => `${name(file.name)}: ${file.message!.split('\n')[0]}`);
    return { code, failed, broken, seconds };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Each set of tests runs once without any mutant first: a test failing there would kill every mutant, proving nothing. */
const baselines = new Map<string, Promise<TestRun>>();
function baseline(mutant: Mutant): Promise<TestRun> {
  const key = JSON.stringify([mutant.tests, mutant.testNamePattern]);
  if (!baselines.has(key)) baselines.set(key, runTests(mutant, false));
  return baselines.get(key)!;
}

async function judge(mutant: Mutant): Promise<Verdict> {
  const before = await baseline(mutant);
  if (before.code !== 0) {
    const why = before.failed[0] ?? before.broken[0] ?? `vitest exited ${before.code ?? 'on timeout'}`;
    return { mutant, outcome: 'errored', detail: `its tests fail without the mutant: ${why}`, seconds: 0 };
  }
  const after = await runTests(mutant, true);
  if (after.failed[0]) return { mutant, outcome: 'killed', detail: after.failed[0], seconds: after.seconds };
  if (after.code === 0) return { mutant, outcome: 'survived', detail: '', seconds: after.seconds };
  return { mutant, outcome: 'errored', detail: after.broken[0] ?? `vitest exited ${after.code ?? 'on timeout'}`, seconds: after.seconds };
}

async function main() {
  const { values } = parseArgs({ options: { only: { type: 'string' }, jobs: { type: 'string', default: '1' } } });
  const only = values.only?.split(',');
  const chosen = only ? MUTANTS.filter((m) => only.includes(m.id)) : MUTANTS;
  if (only && chosen.length !== only.length) throw new Error(`unknown mutant among ${only.join(', ')}`);
  const queue = [...chosen];
  const verdicts: Verdict[] = [];
  const worker = async () => {
    for (let mutant = queue.shift(); mutant; mutant = queue.shift()) {
      const verdict = await judge(mutant);
      verdicts.push(verdict);
      console.log(`${verdict.outcome.padEnd(8)} ${mutant.id} (${verdict.seconds.toFixed(1)} s) ${verdict.detail}`);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(values.jobs)) }, worker));
  verdicts.sort((a, b) => chosen.indexOf(a.mutant) - chosen.indexOf(b.mutant));
  console.log('\n| mutant | bug | killed by | seconds |\n|---|---|---|---|');
  for (const v of verdicts) {
    console.log(
      `| ${v.mutant.id} | ${v.mutant.bug} | ${v.outcome === 'killed' ? v.detail : `**${v.outcome}** ${v.detail}`} | ${v.seconds.toFixed(1)} |`,
    );
  }
  const killed = verdicts.filter((v) => v.outcome === 'killed').length;
  console.log(`\nmutation score: ${killed}/${verdicts.length} killed (${((100 * killed) / verdicts.length).toFixed(0)} %)`);
  process.exitCode = killed === verdicts.length ? 0 : 1;
}

await main();
