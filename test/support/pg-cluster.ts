// Throwaway PostgreSQL clusters on loopback, run from the distribution's server binaries (/usr/lib/postgresql/N/bin)
// as the `postgres` OS user when we are root (PostgreSQL refuses to run as root), in a folder that user owns: a
// primary, a streaming standby of it (pg_basebackup -R), promotion, and pg_rewind to make the old primary a standby
// of the new one — what test/failover.test.ts fails over between.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { appendFile, chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export interface PgCluster {
  name: string;
  port: number;
  /** postgresql://postgres@127.0.0.1:<port>/<database>, trust authentication. */
  url(database?: string): string;
  start(): Promise<void>;
  /** `immediate`: as if the machine died — no shutdown checkpoint, every connection cut. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Ends recovery (pg_ctl promote) and waits until the cluster takes writes. */
  promote(): Promise<void>;
  /**
   * SIGSTOP to the postmaster and every process of it, or SIGCONT: a server that stops answering without closing
   * anything (a hung machine, a full disk), and wakes up again.
   */
  freeze(): void;
  thaw(): void;
}

export interface PgClusters {
  /** A new primary: streaming replication on, wal_log_hints on (for pg_rewind). */
  primary(name: string, port: number): Promise<PgCluster>;
  /** A hot standby of `primary`, streaming from it (pg_basebackup -R); the primary waits for it on every commit. */
  synchronousStandby(name: string, primary: PgCluster, port: number): Promise<PgCluster>;
  /** Turns a stopped former primary into a running standby of `source` (pg_rewind, then standby.signal). */
  rewindAsStandby(old: PgCluster, source: PgCluster): Promise<void>;
  /** Stops every cluster at once and removes their folder. */
  close(): Promise<void>;
}

/** The newest installed PostgreSQL with the binaries a failover needs. */
export function serverBinaries(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v)) : [];
  const needed = ['initdb', 'pg_ctl', 'pg_basebackup', 'pg_rewind'];
  const found = versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(root, v, 'bin'))
    .find((bin) => needed.every((tool) => existsSync(join(bin, tool))));
  if (!found) throw new Error(`PostgreSQL's server binaries (${needed.join(', ')}) are needed under ${root}/N/bin (Debian: postgresql-15)`);
  return found;
}

/** The uid and gid PostgreSQL runs as: the `postgres` user when we are root, else ourselves. */
export function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** The processes whose parent is `parent` (a postmaster's: backends, checkpointer, walwriter, WAL senders, …). */
export function childProcesses(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      // /proc/PID/stat: "pid (comm) state ppid …", comm may hold spaces and parentheses
      const stat = (() => {
        try {
          return readFileSync(`/proc/${pid}/stat`, 'utf8');
        } catch {
          return '';
        }
      })();
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
    })
    .map(Number);
}

/** Sends `name` to `pid` unless it has exited since it was listed (a backend whose client left). */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

/** The postmaster of a running data directory and its children. */
function serverProcesses(dataDir: string): number[] {
  const postmaster = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  return [postmaster, ...childProcesses(postmaster)];
}

export async function createPgClusters(): Promise<PgClusters> {
  const bin = serverBinaries();
  const user = serverUser();
  const root = await mkdtemp(join(tmpdir(), 'lc-failover-'));
  if (user) await chown(root, user.uid, user.gid);
  const clusters: Array<{ cluster: PgCluster; running: () => boolean }> = [];

  const tool = (name: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(join(bin, name), args, { cwd: root, env: { PATH: process.env.PATH, LANG: 'C' }, ...user }, (error, stdout, stderr) => {
        if (error) reject(new Error(`${name} ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`));
        else resolve(`${stdout}${stderr}`);
      });
    });

  const query = async (url: string, sql: string): Promise<pg.QueryResult> => {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return await client.query(sql);
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  function cluster(name: string, port: number): PgCluster {
    const dataDir = join(root, name);
    const logFile = join(root, `${name}.log`);
    let running = false;
    // on the command line, so that a cluster copied by pg_basebackup or pg_rewind has its own (the settings they
    // share are in postgresql.conf, which pg_rewind's crash recovery reads too)
    const options = `-c port=${port}`;
    const self: PgCluster = {
      name,
      port,
      url: (database = 'postgres') => `postgresql://postgres@127.0.0.1:${port}/${database}`,
      async start() {
        try {
          await tool('pg_ctl', ['start', '-w', '-t', '60', '-D', dataDir, '-l', logFile, '-o', options]);
        } catch (error) {
          throw new Error(`${(error as Error).message}\n${(await readFile(logFile, 'utf8').catch(() => '')).slice(-2000)}`);
        }
        running = true;
      },
      async stop(mode) {
        await tool('pg_ctl', ['stop', '-w', '-t', '60', '-m', mode, '-D', dataDir]);
        running = false;
      },
      async promote() {
        await tool('pg_ctl', ['promote', '-w', '-t', '60', '-D', dataDir]);
      },
      freeze() {
        // the postmaster first, so that it forks nothing new while its children stop
        for (const pid of serverProcesses(dataDir)) signal(pid, 'SIGSTOP');
      },
      thaw() {
        for (const pid of serverProcesses(dataDir).reverse()) signal(pid, 'SIGCONT');
      },
    };
    clusters.push({ cluster: self, running: () => running });
    return self;
  }

  return {
    async primary(name, port) {
      const primary = cluster(name, port);
      await tool('initdb', ['-D', join(root, name), '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
      const settings = [
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${root}'`,
        // pg_rewind needs hint bits logged (or data checksums), and the WAL back to the last common checkpoint
        'wal_log_hints = on',
        'wal_keep_size = 128MB',
        // a throwaway cluster on a shared machine: nothing here must survive an operating-system crash
        'fsync = off',
        'shared_buffers = 16MB',
      ];
      await appendFile(join(root, name, 'postgresql.conf'), `${settings.join('\n')}\n`);
      await primary.start();
      return primary;
    },
    async synchronousStandby(name, primary, port) {
      await tool('pg_basebackup', [
        '-h',
        '127.0.0.1',
        '-p',
        String(primary.port),
        '-U',
        'postgres',
        '-D',
        join(root, name),
        '-R',
        '-X',
        'stream',
        '-c',
        'fast',
        '--no-sync',
      ]);
      const standby = cluster(name, port);
      await standby.start();
      // after the copy, so that the standby, once promoted, does not wait for a standby of its own
      await query(primary.url(), `ALTER SYSTEM SET synchronous_standby_names = '*'`);
      await query(primary.url(), 'SELECT pg_reload_conf()');
      for (let attempt = 0; ; attempt++) {
        const { rows } = await query(primary.url(), 'SELECT sync_state FROM pg_stat_replication');
        if (rows[0]?.sync_state === 'sync') return standby;
        if (attempt > 300) throw new Error(`the standby did not become synchronous: ${JSON.stringify(rows)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async rewindAsStandby(old, source) {
      // pg_rewind reads the source's timeline from its control file, which the promotion's checkpoint writes
      await query(source.url(), 'CHECKPOINT');
      const dataDir = join(root, old.name);
      await tool('pg_rewind', [
        '--target-pgdata',
        dataDir,
        '--source-server',
        `host=127.0.0.1 port=${source.port} user=postgres dbname=postgres`,
        '--no-sync',
      ]);
      await writeFile(join(dataDir, 'standby.signal'), '');
      await appendFile(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = 'host=127.0.0.1 port=${source.port} user=postgres'\n`);
      if (user) {
        await chown(join(dataDir, 'standby.signal'), user.uid, user.gid);
        await chown(join(dataDir, 'postgresql.auto.conf'), user.uid, user.gid);
      }
      await old.start();
    },
    async close() {
      await Promise.all(clusters.filter((c) => c.running()).map((c) => c.cluster.stop('immediate').catch(() => undefined)));
      await rm(root, { recursive: true, force: true });
    },
  };
}
