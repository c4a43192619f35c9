// HAProxy (Debian's /usr/sbin/haproxy, 2.6) in front of `serve` processes, configured from
// deploy/haproxy-api.example.cfg with its own port, servers, stats socket and log to stderr: what clients
// talk to in test/process/rolling-upgrade.test.ts. Its stats socket says which servers it has in rotation and how
// often it had to try a request again.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from './until.js';

const HAPROXY = '/usr/sbin/haproxy';
const EXAMPLE = new URL('../../deploy/haproxy-api.example.cfg', import.meta.url);

/** A server of the backend as `show stat` reports it; the counters count since HAProxy started. */
interface ServerStat {
  /** As HAProxy's checks see it: UP, DOWN, DOWN 1/2 (going up), … */
  status: string;
  /** Connections to it that failed and were tried again (wretr). */
  retries: number;
  /** Requests that went to another server after failing on it (wredis). */
  redispatches: number;
  /** Requests that got no valid response from it (eresp) or could not connect to it (econ). */
  errors: number;
}

export interface Haproxy {
  url: string;
  serverStats(): Promise<Record<string, ServerStat>>;
  /** Waits until HAProxy has `server` in this status. */
  waitForServer(server: string, status: 'UP' | 'DOWN', timeoutMs?: number): Promise<void>;
  /** HAProxy's log: only the requests that were not normal (failed, retried, redispatched) and the checks' news. */
  output(): string;
  close(): Promise<void>;
}

/** The example's configuration with this port, these servers (name → host:port) and a socket and log of its own. */
function configured(example: string, port: number, servers: Record<string, string>, socket: string): string {
  const lines = example.split('\n').filter((line) => !/^\s*server /.test(line));
  const backend = lines.findIndex((line) => line.startsWith('backend '));
  const end = lines.findIndex((line, index) => index > backend && line.trim() === '');
  const serverLines = Object.entries(servers).map(([name, address]) => `    server ${name} ${address}`);
  lines.splice(end === -1 ? lines.length : end, 0, ...serverLines);
  return lines
    .join('\n')
    .replace(/^(\s*)log \/dev\/log .*$/m, '$1log stderr format short local0 info')
    .replace(/^(\s*)stats socket \S+/m, `$1stats socket ${socket}`)
    .replace(/^(\s*)bind \S+/m, `$1bind 127.0.0.1:${port}`);
}

async function command(socket: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let answer = '';
    const connection = createConnection(socket);
    connection.on('connect', () => connection.end(`${text}\n`));
    connection.on('data', (d: Buffer) => (answer += d.toString()));
    connection.on('end', () => resolve(answer));
    connection.on('error', reject);
  });
}

export async function startHaproxy(port: number, servers: Record<string, string>): Promise<Haproxy> {
  const folder = await mkdtemp(join(tmpdir(), 'lc-haproxy-'));
  const socket = join(folder, 'haproxy.sock');
  const file = join(folder, 'haproxy.cfg');
  await writeFile(file, configured(await readFile(EXAMPLE, 'utf8'), port, servers, socket));
  // -db: in the foreground, not daemonized
  const child: ChildProcess = spawn(HAPROXY, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));

  async function serverStats(): Promise<Record<string, ServerStat>> {
    const csv = (await command(socket, 'show stat')).trim().split('\n');
    const columns = csv[0]!.replace(/^# /, '').split(',');
    const rows = csv.slice(1).map((line) => {
      const values = line.split(',');
      return (column: string) => values[columns.indexOf(column)] ?? '';
    });
    const count = (value: string) => Number(value || 0);
    return Object.fromEntries(
      rows
        .filter((row) => row('pxname') === 'load_control_serve' && row('svname') !== 'BACKEND')
        .map((row) => [
          row('svname'),
          {
            status: row('status'),
            retries: count(row('wretr')),
            redispatches: count(row('wredis')),
            errors: count(row('eresp')) + count(row('econ')),
          },
        ]),
    );
  }

  await until(
    'haproxy to answer on its stats socket',
    () => {
      if (child.exitCode !== null) throw new Error(`haproxy exited: ${output}`);
      return serverStats().catch(() => undefined);
    },
    10_000,
  );
  return {
    url: `http://127.0.0.1:${port}`,
    serverStats,
    async waitForServer(server, status, timeoutMs = 30_000) {
      await until(`haproxy to see ${server} ${status}`, async () => (await serverStats())[server]?.status === status, timeoutMs);
    },
    output: () => output,
    async close() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      await rm(folder, { recursive: true, force: true });
    },
  };
}
