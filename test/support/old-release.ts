// An earlier commit of Load Control, run as an operator ran it then: `git archive` of the commit into a
// directory, this checkout's node_modules linked in (2efcf01's and 24440f7's dependencies are a subset of
// today's), its own `npm run generate`, and its CLI under tsx with a configuration file of the test tokens.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { hashToken } from '../../src/auth/tokens.js';
import { TOKENS } from './api.js';

/** The last commit before issue 12: the release upgrades start from. */
export const RELEASE_2EFCF01 = '2efcf011689df6c39dc8f7f953e730befcedaa81';
/**
 * main just before the alert webhooks' migrations (0022, 0023) landed: the newest commit whose migrations are a
 * proper prefix of today's, so that an upgrade from it applies migrations and a changed function file.
 */
export const RELEASE_24440F7 = '24440f72eb2f4f19912bd4e32629eb411a882ce5';

const repositoryRoot = fileURLToPath(new URL('../..', import.meta.url));
const exec = promisify(execFile);

export type CliProcess = ChildProcess & { output: () => string };

export interface OldRelease {
  dir: string;
  /** Its configuration file (YAML), which today's release reads as well. */
  configPath: string;
  /** Its CLI with LC_CONFIG set to its configuration file. */
  start(args: string[], env?: Record<string, string>): CliProcess;
  run(args: string[]): Promise<string>;
}

/** Checks `commit` out into `dir` (which must not exist) and writes its configuration. */
export async function checkoutRelease(commit: string, dir: string, config: Record<string, unknown>): Promise<OldRelease> {
  await mkdir(dir, { recursive: true });
  await exec('sh', ['-c', `git -C "${repositoryRoot}" archive ${commit} | tar -x -C "${dir}"`]);
  await symlink(await realpath(join(repositoryRoot, 'node_modules')), join(dir, 'node_modules'));
  await exec('npm', ['run', '--silent', 'generate'], { cwd: dir });
  const configPath = join(dir, 'load-control.yaml');
  await writeFile(
    configPath,
    toYaml({
      auth: {
        tokens: [
          { name: 'nifi-cluster', sha256: hashToken(TOKENS.nifi), roles: ['nifi'] },
          { name: 'alice-operator', sha256: hashToken(TOKENS.operator), roles: ['operator'] },
          { name: 'victor-viewer', sha256: hashToken(TOKENS.viewer), roles: ['viewer'] },
        ],
      },
      logging: { level: 'warn' },
      ...config,
    }),
  );
  // only what the old CLI needs: none of this process's LC_ settings or DATABASE_URL
  const env = (extra: Record<string, string>) => ({ PATH: process.env.PATH, HOME: process.env.HOME, LC_CONFIG: configPath, ...extra });
  return {
    dir,
    configPath,
    start(args, extra = {}) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
        cwd: dir,
        env: env(extra),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let text = '';
      child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
      return Object.assign(child, { output: () => text });
    },
    async run(args) {
      const { stdout } = await exec(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: dir, env: env({}) });
      return stdout;
    },
  };
}

export async function stopCli(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
