// A Patroni cluster on loopback, from deploy/ha/'s example configurations (README "Failover"): three etcd 3.4 members
// (the DCS), three PostgreSQL members (the newest installed: 15 on Debian 12) managed by Patroni 3.0 in
// synchronous_mode, and HAProxy routing to the leader by Patroni's REST /primary — Debian's own binaries, each member
// with its own ports and folder under one temporary folder. The processes are detached, their pids in the folder's
// ha-cluster.json, so that the same code serves test/ha/ (which starts one and stops it) and
// `npm run ha:cluster -- up|down` (scripts/ha-cluster.ts), whose processes outlive it. Everything runs as the
// `postgres` OS user when we are root (PostgreSQL and Patroni refuse to run as root).
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parse, stringify } from 'yaml';
import { freePort } from './cli.js';
import { childProcesses, serverBinaries, serverUser } from './pg-cluster.js';
import { until } from './until.js';

const PATRONI = '/usr/bin/patroni';
const PATRONICTL = '/usr/bin/patronictl';
const ETCD = '/usr/bin/etcd';
const HAPROXY = '/usr/sbin/haproxy';
const EXAMPLES = new URL('../../deploy/ha/', import.meta.url);
const STATE_FILE = 'ha-cluster.json';
const MEMBERS = 3;

interface EtcdMember {
  name: string;
  clientPort: number;
  peerPort: number;
}

interface PatroniMember {
  name: string;
  pgPort: number;
  restPort: number;
  dataDir: string;
}

/** What ha-cluster.json records: enough for `down` to stop everything from another process. */
interface ClusterLayout {
  folder: string;
  haproxyPort: number;
  etcd: EtcdMember[];
  members: PatroniMember[];
  pids: Record<string, number>;
}

/** One member as Patroni's GET /cluster lists it. */
interface MemberState {
  name: string;
  role: 'leader' | 'sync_standby' | 'replica' | string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

export interface HaCluster {
  folder: string;
  /** HAProxy's port: the address that always leads to the primary. */
  port: number;
  /** postgresql://postgres@127.0.0.1:<HAProxy>/<database>, trust authentication on loopback. */
  url(database?: string): string;
  /** The same, straight to one member, bypassing HAProxy. */
  memberUrl(name: string, database?: string): string;
  memberNames: string[];
  /** Patroni's view (GET /cluster of any member that answers). */
  members(): Promise<MemberState[]>;
  leader(): Promise<string | undefined>;
  /** Waits until there is a leader, one synchronous standby and one more replica, both streaming, and HAProxy leads to the leader. */
  healthy(timeoutMs?: number): Promise<MemberState[]>;
  patronictl(...args: string[]): Promise<string>;
  /** What a member's process wrote (Patroni's log with its PostgreSQL's, an etcd member's, HAProxy's). */
  log(name: string): Promise<string>;
  /**
   * SIGKILL to a member's postmaster and its WAL senders (its Patroni lives on): the other processes exit when they
   * find the postmaster gone, but a WAL sender stopped by pauseWalSenders would hold its standby's connection.
   */
  killPostmaster(name: string): void;
  /** SIGSTOP to a primary's WAL senders: it goes on writing WAL that no standby receives, and no connection closes. */
  pauseWalSenders(name: string): void;
  /** Stops etcd members (SIGTERM, waiting for them to exit); startEtcd starts them again on their data. */
  stopEtcd(...names: string[]): Promise<void>;
  startEtcd(...names: string[]): Promise<void>;
  etcdNames: string[];
  /** Stops everything and removes the folder. */
  stop(): Promise<void>;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function stopProcess(pid: number | undefined, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (!pid || !alive(pid)) return;
  process.kill(pid, signal);
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  if (alive(pid)) process.kill(pid, 'SIGKILL');
}

const postmasterPid = (dataDir: string): number | undefined => {
  const file = join(dataDir, 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
};

/** The children of a process whose command line (a PostgreSQL process's title) contains `title`. */
function childrenTitled(parent: number, title: string): number[] {
  return childProcesses(parent).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(title);
    } catch {
      return false;
    }
  });
}

function etcdConfig(example: string, folder: string, member: EtcdMember, all: EtcdMember[]): string {
  const config = parse(example) as Record<string, unknown>;
  const client = `http://127.0.0.1:${member.clientPort}`;
  const peer = `http://127.0.0.1:${member.peerPort}`;
  Object.assign(config, {
    name: member.name,
    'data-dir': join(folder, member.name),
    'listen-client-urls': client,
    'advertise-client-urls': client,
    'listen-peer-urls': peer,
    'initial-advertise-peer-urls': peer,
    'initial-cluster': all.map((m) => `${m.name}=http://127.0.0.1:${m.peerPort}`).join(','),
    // unique per cluster, so that members of another cluster on this machine never join this one
    'initial-cluster-token': `load-control-ha-${folder}`,
  });
  return stringify(config);
}

function patroniConfig(example: string, folder: string, bin: string, member: PatroniMember, etcd: EtcdMember[]): string {
  const config = parse(example) as Record<string, any>;
  config.name = member.name;
  config.restapi.listen = config.restapi.connect_address = `127.0.0.1:${member.restPort}`;
  config.etcd3.hosts = etcd.map((m) => `127.0.0.1:${m.clientPort}`).join(',');
  const pgConfig = config.postgresql;
  pgConfig.listen = pgConfig.connect_address = `127.0.0.1:${member.pgPort}`;
  pgConfig.data_dir = member.dataDir;
  pgConfig.bin_dir = bin;
  pgConfig.pgpass = join(folder, `${member.name}.pgpass`);
  pgConfig.parameters = {
    ...pgConfig.parameters,
    unix_socket_directories: folder,
    // a throwaway cluster on a shared machine: nothing here must survive an operating-system crash
    fsync: 'off',
    shared_buffers: '16MB',
  };
  return stringify(config);
}

function haproxyConfig(example: string, port: number, members: PatroniMember[]): string {
  const servers = members.map((m) => `    server ${m.name} 127.0.0.1:${m.pgPort} maxconn 500 check port ${m.restPort}`).join('\n');
  return example.replace(/^([ \t]*bind )\S+$/m, `$1127.0.0.1:${port}`).replace(/^([ \t]*server .*\n)+/m, `${servers}\n`);
}

async function layoutOf(folder: string): Promise<ClusterLayout> {
  return JSON.parse(await readFile(join(folder, STATE_FILE), 'utf8')) as ClusterLayout;
}

/** Stops a cluster from its folder's ha-cluster.json (Patroni first: it stops its PostgreSQL), and removes the folder. */
export async function stopHaCluster(folder: string): Promise<void> {
  const layout = await layoutOf(folder);
  await Promise.all(layout.members.map((m) => stopProcess(layout.pids[m.name], 'SIGTERM', 20_000)));
  // a postmaster whose Patroni was killed, or that Patroni left behind: an immediate shutdown
  await Promise.all(layout.members.map((m) => stopProcess(postmasterPid(m.dataDir), 'SIGQUIT', 10_000)));
  await Promise.all(
    [...layout.etcd.map((m) => layout.pids[m.name]), layout.pids.haproxy].map((pid) => stopProcess(pid, 'SIGTERM', 10_000)),
  );
  await rm(folder, { recursive: true, force: true });
}

/** Starts a cluster in a new folder (under `parent`, default the system's temporary folder) and waits until it is healthy. */
export async function startHaCluster(parent: string = tmpdir()): Promise<HaCluster> {
  for (const binary of [PATRONI, PATRONICTL, ETCD, HAPROXY]) {
    if (!existsSync(binary)) throw new Error(`${binary} is needed (Debian: patroni etcd-server etcd-client haproxy)`);
  }
  const bin = serverBinaries();
  const user = serverUser();
  await mkdir(parent, { recursive: true });
  const folder = await mkdtemp(join(parent, 'lc-ha-'));
  if (user) await chown(folder, user.uid, user.gid);
  const names = Array.from({ length: MEMBERS }, (_, i) => i + 1);
  const etcd: EtcdMember[] = [];
  for (const i of names) etcd.push({ name: `etcd${i}`, clientPort: await freePort(), peerPort: await freePort() });
  const members: PatroniMember[] = [];
  for (const i of names)
    members.push({ name: `pg${i}`, pgPort: await freePort(), restPort: await freePort(), dataDir: join(folder, `pg${i}`) });
  const layout: ClusterLayout = { folder, haproxyPort: await freePort(), etcd, members, pids: {} };

  const writeOwned = async (name: string, text: string) => {
    await writeFile(join(folder, name), text);
    if (user) await chown(join(folder, name), user.uid, user.gid);
  };
  const saveLayout = () => writeOwned(STATE_FILE, `${JSON.stringify(layout, null, 2)}\n`);
  /** A detached process as the cluster's user, its output appended to <name>.log. */
  const launch = async (name: string, command: string, args: string[]) => {
    const log = openSync(join(folder, `${name}.log`), 'a');
    const child = spawn(command, args, {
      ...user,
      cwd: folder,
      detached: true,
      stdio: ['ignore', log, log],
      env: { PATH: `${bin}:/usr/bin:/bin:/usr/sbin:/sbin`, LANG: 'C.UTF-8', HOME: folder },
    });
    child.unref();
    closeSync(log);
    layout.pids[name] = child.pid!;
    await saveLayout();
  };

  const [etcdExample, patroniExample, haproxyExample] = await Promise.all(
    ['etcd.example.yml', 'patroni.example.yml', 'haproxy.example.cfg'].map((file) => readFile(new URL(file, EXAMPLES), 'utf8')),
  );
  for (const member of etcd) await writeOwned(`${member.name}.yml`, etcdConfig(etcdExample, folder, member, etcd));
  for (const member of members) await writeOwned(`${member.name}.yml`, patroniConfig(patroniExample, folder, bin, member, etcd));
  await writeOwned('haproxy.cfg', haproxyConfig(haproxyExample, layout.haproxyPort, members));

  const startEtcdMember = (member: EtcdMember) => launch(member.name, ETCD, ['--config-file', join(folder, `${member.name}.yml`)]);
  const tool = (command: string, args: string[]) =>
    new Promise<string>((resolve, reject) => {
      execFile(
        command,
        args,
        { cwd: folder, env: { PATH: process.env.PATH, LANG: 'C.UTF-8', HOME: folder }, ...user },
        (error, stdout, stderr) => {
          if (error) reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stdout}${stderr}`));
          else resolve(`${stdout}${stderr}`);
        },
      );
    });
  const etcdHealthy = async (member: EtcdMember) =>
    (await fetch(`http://127.0.0.1:${member.clientPort}/health`).catch(() => undefined))?.status === 200;

  const memberStates = async (): Promise<MemberState[]> => {
    for (const member of members) {
      const res = await fetch(`http://127.0.0.1:${member.restPort}/cluster`, { signal: AbortSignal.timeout(1000) }).catch(() => undefined);
      if (res?.ok) return ((await res.json()) as { members: MemberState[] }).members;
    }
    return [];
  };
  /** HAProxy leads to a primary, which streams to every other member. */
  const viaHaproxy = async (): Promise<boolean> => {
    const client = new pg.Client({
      connectionString: `postgresql://postgres@127.0.0.1:${layout.haproxyPort}/postgres`,
      connectionTimeoutMillis: 1000,
    });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query(
        `SELECT pg_is_in_recovery() AS standby, (SELECT count(*)::int FROM pg_stat_replication WHERE state = 'streaming') AS streaming`,
      );
      return rows[0].standby === false && rows[0].streaming === MEMBERS - 1;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  const member = (name: string): PatroniMember => {
    const found = members.find((m) => m.name === name);
    if (!found) throw new Error(`no member ${name}`);
    return found;
  };
  const cluster: HaCluster = {
    folder,
    port: layout.haproxyPort,
    url: (database = 'postgres') => `postgresql://postgres@127.0.0.1:${layout.haproxyPort}/${database}`,
    memberUrl: (name, database = 'postgres') => `postgresql://postgres@127.0.0.1:${member(name).pgPort}/${database}`,
    memberNames: members.map((m) => m.name),
    etcdNames: etcd.map((m) => m.name),
    members: memberStates,
    async leader() {
      return (await memberStates()).find((m) => m.role === 'leader' && m.state === 'running')?.name;
    },
    async healthy(timeoutMs = 90_000) {
      return until(
        'the Patroni cluster to have a leader, a synchronous standby and a replica, with HAProxy leading to the leader',
        async () => {
          const state = await memberStates();
          const running = (role: string) => state.filter((m) => m.role === role && m.state === 'running').length;
          return running('leader') === 1 && running('sync_standby') === 1 && running('replica') === 1 && (await viaHaproxy()) && state;
        },
        timeoutMs,
      );
    },
    patronictl: (...args) => tool(PATRONICTL, ['-c', join(folder, `${members[0]!.name}.yml`), ...args]),
    log: (name) => readFile(join(folder, `${name}.log`), 'utf8'),
    killPostmaster(name) {
      const pid = postmasterPid(member(name).dataDir);
      if (!pid) throw new Error(`member ${name} has no running postmaster`);
      const walSenders = childrenTitled(pid, 'walsender');
      process.kill(pid, 'SIGKILL');
      for (const sender of walSenders) process.kill(sender, 'SIGKILL');
    },
    pauseWalSenders(name) {
      const walSenders = childrenTitled(postmasterPid(member(name).dataDir) ?? 0, 'walsender');
      if (walSenders.length === 0) throw new Error(`member ${name} has no WAL sender`);
      for (const pid of walSenders) process.kill(pid, 'SIGSTOP');
    },
    async stopEtcd(...stopped) {
      await Promise.all(stopped.map((name) => stopProcess(layout.pids[name], 'SIGTERM', 5_000)));
    },
    async startEtcd(...started) {
      for (const name of started) await startEtcdMember(etcd.find((m) => m.name === name)!);
      await until('etcd to be healthy again', async () => (await Promise.all(etcd.map(etcdHealthy))).every(Boolean), 30_000);
    },
    stop: () => stopHaCluster(folder),
  };

  try {
    for (const member of etcd) await startEtcdMember(member);
    await until('etcd to be healthy', async () => (await Promise.all(etcd.map(etcdHealthy))).every(Boolean), 30_000);
    // the first member bootstraps (initdb) while the others wait for a leader to copy
    await launch(members[0]!.name, PATRONI, [join(folder, `${members[0]!.name}.yml`)]);
    await until('the first member to lead', async () => (await cluster.leader()) === members[0]!.name, 60_000);
    for (const member of members.slice(1)) await launch(member.name, PATRONI, [join(folder, `${member.name}.yml`)]);
    await launch('haproxy', HAPROXY, ['-db', '-f', join(folder, 'haproxy.cfg')]);
    await cluster.healthy();
  } catch (error) {
    const logs = await Promise.all(
      Object.keys(layout.pids).map(
        async (name) => `--- ${name}.log\n${(await readFile(join(folder, `${name}.log`), 'utf8').catch(() => '')).slice(-1500)}`,
      ),
    );
    await stopHaCluster(folder).catch(() => undefined);
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`);
  }
  return cluster;
}
