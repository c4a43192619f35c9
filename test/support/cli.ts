// `load-control` as a child process, as an operator runs it.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

const CLI = ['--import', 'tsx', 'src/cli.ts'];

export type CliProcess = ChildProcess & { output: () => string; exited: Promise<number | null> };

/** The environment of a child process: ours without any load-control settings, plus `env`. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LC_') && k !== 'DATABASE_URL'));
  return { ...base, LC_LOGGING__LEVEL: 'info', ...env };
}

export interface CliOptions {
  /**
   * An installed command (an unpacked bundle's) to run instead of the sources: its executable and first arguments,
   * e.g. the bundle's node and its `bin/load-control.js`. Its environment is then PATH and `env` alone: nothing of
   * this checkout (NODE_OPTIONS, NODE_PATH) reaches it.
   */
  installed?: [string, ...string[]];
  cwd?: string;
}

export function runCli(args: string[], env: Record<string, string>, options: CliOptions = {}): CliProcess {
  const [executable, ...command] = options.installed ? [...options.installed, ...args] : [process.execPath, ...CLI, ...args];
  const environment = options.installed ? { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_LOGGING__LEVEL: 'info', ...env } : childEnv(env);
  const child = spawn(executable!, command, { env: environment, cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return Object.assign(child, { output: () => output, exited });
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
