import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Gauge, type Registry } from 'prom-client';
import type { Db } from '../db/client.js';
import {
  beat,
  HEARTBEAT_INTERVAL_MS,
  listProcesses,
  markStopped,
  registerProcess,
  type ProcessInstance,
  type ProcessRegistration,
  type ProcessRole,
} from '../domain/processes/processes.js';
import type { Logger } from '../logging/logger.js';

/** The release this process runs, as package.json names it. */
const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export interface HeartbeatOptions {
  db: Db;
  log: Logger;
  role: ProcessRole;
  dispatcher: boolean;
  sweeper: boolean;
  /** lc_process_heartbeat_age_seconds goes here. */
  registry: Registry;
  /** When this process's sweeper last finished a cycle. */
  lastSweepAt?: () => Date | null;
  intervalMs?: number;
}

export interface Heartbeat {
  instanceId: string;
  /** Stops beating and records that this process stopped (a process that dies without it turns stale). */
  stop(): Promise<void>;
}

/**
 * Registers this process and beats every HEARTBEAT_INTERVAL_MS. Each beat also reads every process's last
 * beat into lc_process_heartbeat_age_seconds, so that any live process reports the ones that went quiet. A
 * beat that fails (the database is away) is logged and the next one tries again.
 */
export function startHeartbeat(options: HeartbeatOptions): Heartbeat {
  const { db, log, intervalMs = HEARTBEAT_INTERVAL_MS } = options;
  const registration: ProcessRegistration = {
    instanceId: randomUUID(),
    role: options.role,
    host: hostname(),
    pid: process.pid,
    version: VERSION,
    dispatcher: options.dispatcher,
    sweeper: options.sweeper,
  };
  const ages = new Gauge({
    name: 'lc_process_heartbeat_age_seconds',
    help: 'Seconds since each process (serve, work, start) last beat; stopped ones and ones a restart replaced are left out',
    labelNames: ['instance_id', 'role', 'host'],
    registers: [options.registry],
  });

  async function once(): Promise<void> {
    await beat(db.prisma, registration, options.lastSweepAt?.() ?? null);
    const processes = await listProcesses(db.prisma);
    ages.reset();
    const now = Date.now();
    // as WORKER_STALE decides: a process that stopped, or was replaced by a restart on its host, is not reported
    const replaced = (p: ProcessInstance) => processes.some((n) => n.role === p.role && n.host === p.host && n.startedAt > p.lastSeenAt);
    for (const p of processes) {
      if (p.state === 'STOPPED' || replaced(p)) continue;
      ages.set({ instance_id: p.instanceId, role: p.role, host: p.host }, (now - p.lastSeenAt.getTime()) / 1000);
    }
  }

  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let beating: Promise<void> = registerProcess(db.prisma, registration)
    .then(() => log.info({ instanceId: registration.instanceId, role: registration.role }, 'process_registered'))
    .catch((error: unknown) => log.warn({ err: error }, 'process_register_failed'));
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      beating = once()
        .catch((error: unknown) => log.warn({ err: error }, 'heartbeat_failed'))
        .finally(schedule);
    }, intervalMs);
    timer.unref();
  };
  schedule();

  return {
    instanceId: registration.instanceId,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await beating;
      await markStopped(db.prisma, registration.instanceId).catch((error: unknown) =>
        log.warn({ err: error }, 'process_stop_not_recorded'),
      );
    },
  };
}
