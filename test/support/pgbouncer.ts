// PgBouncer (Debian's /usr/sbin/pgbouncer) in transaction pooling mode, configured from deploy/pgbouncer.example.ini
// with its own port, folder and server address: in front of a PostgreSQL on loopback, for test/process/pgbouncer.test.ts
// and bench/pgbouncer.ts. Run as the `postgres` OS user when we are root (PgBouncer refuses to run as root).
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PGBOUNCER = '/usr/sbin/pgbouncer';
const EXAMPLE = new URL('../../deploy/pgbouncer.example.ini', import.meta.url);

export interface PgBouncer {
  port: number;
  /** The URL of `database` through PgBouncer, for `user`. */
  url(user: string, database: string): string;
  output(): string;
  close(): Promise<void>;
}

/** The example's settings, with these replaced (by key, in any section) and every database routed to `server`. */
function configured(example: string, server: { host: string; port: number }, settings: Record<string, string>): string {
  let ini = example.replace(/^\S+ = host=.*$/m, `* = host=${server.host} port=${server.port}`);
  for (const [key, value] of Object.entries(settings)) ini = ini.replace(new RegExp(`^${key} = .*$`, 'm'), `${key} = ${value}`);
  return ini;
}

export async function startPgBouncer(server: { host: string; port: number }, port: number, user: string): Promise<PgBouncer> {
  const folder = await mkdtemp(join(tmpdir(), 'lc-pgbouncer-'));
  const ini = configured(await readFile(EXAMPLE, 'utf8'), server, {
    listen_port: String(port),
    auth_file: join(folder, 'userlist.txt'),
    admin_users: user,
    logfile: join(folder, 'pgbouncer.log'),
    pidfile: join(folder, 'pgbouncer.pid'),
  });
  await writeFile(join(folder, 'pgbouncer.ini'), ini);
  await writeFile(join(folder, 'userlist.txt'), `"${user}" ""\n`);
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot
    ? {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })),
      }
    : undefined;
  if (owner) for (const file of ['', 'pgbouncer.ini', 'userlist.txt']) await chown(join(folder, file), owner.uid, owner.gid);
  const child: ChildProcess = spawn(PGBOUNCER, [join(folder, 'pgbouncer.ini')], { ...owner, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // listening once a TCP connection is accepted
  for (let attempt = 0; ; attempt++) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection(port, '127.0.0.1');
      socket.once('connect', () => resolve(true)).once('error', () => resolve(false));
      socket.unref();
      setTimeout(() => socket.destroy(), 200);
    });
    if (open) break;
    if (child.exitCode !== null || attempt > 200) {
      throw new Error(`pgbouncer did not start: ${output}${await readFile(join(folder, 'pgbouncer.log'), 'utf8').catch(() => '')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url: (u, database) => `postgresql://${u}@127.0.0.1:${port}/${database}`,
    output: () => output,
    async close() {
      if (child.exitCode === null) child.kill('SIGINT');
      await exited;
      await rm(folder, { recursive: true, force: true });
    },
  };
}
