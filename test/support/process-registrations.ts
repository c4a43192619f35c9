// Processes as they register in process_instance, for the processes tests of the domain and api tiers.
import { randomUUID } from 'node:crypto';
import type { ProcessRegistration } from '../../src/domain/processes/processes.js';
import type { TestApi } from './api.js';

/** A `work` process with both loops, unless told otherwise. */
export function registration(overrides: Partial<ProcessRegistration> = {}): ProcessRegistration {
  return {
    instanceId: randomUUID(),
    role: 'work',
    host: 'etl-01',
    pid: 4242,
    version: '0.1.0',
    dispatcher: true,
    sweeper: true,
    ...overrides,
  };
}

/** Moves a process's last beat (and its start, which cannot come after it) back by `ms`. */
export async function silence(world: Pick<TestApi, 'sql'>, instanceId: string, ms: number): Promise<void> {
  await world.sql.query(
    `UPDATE nifi_ops.process_instance
        SET last_seen_at = last_seen_at - $2 * interval '1 millisecond', started_at = started_at - $2 * interval '1 millisecond'
      WHERE instance_id = $1`,
    [instanceId, ms],
  );
}
