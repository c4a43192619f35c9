// `load-control` as a child process (node --import tsx src/cli.ts), its stdout and stderr collected.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

export type CliProcess = ChildProcess & { output: () => string; exited: Promise<number | null> };

/** Runs the CLI with our environment minus any load-control settings, plus `env`, logging at info. */
export function runCli(args: string[], env: Record<string, string>): CliProcess {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LC_') && k !== 'DATABASE_URL'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], {
    env: { ...base, LC_LOGGING__LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return Object.assign(child, { output: () => output, exited });
}

/** A port nothing listens on (for a server that must be given one). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
