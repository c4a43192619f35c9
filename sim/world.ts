// Everything a simulated actor (NiFi flows, operator, upstream jobs, publishers) works with.
import type pg from 'pg';
import type { FaultSwitch, Log, SimClient } from './client.js';
import type { Ledger } from './ledger.js';
import type { SimOptions } from './options.js';
import type { Dice } from './random.js';

export interface World {
  client: SimClient;
  dice: Dice;
  faults: FaultSwitch;
  options: SimOptions;
  ledger: Ledger;
  log: Log;
  /** The simulator's own view of the database, for what only an observer can know (was it reissued?). */
  db: pg.Pool;
  /** Set when the time is up: flows finish what they are doing and start nothing new. */
  stopping(): boolean;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls until probe returns a value, or gives up after timeoutMs (undefined). */
export async function poll<T>(
  probe: () => Promise<T | undefined>,
  intervalMs: number,
  timeoutMs: number,
  world: World,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !world.stopping()) {
    const value = await probe();
    if (value !== undefined) return value;
    await sleep(intervalMs);
  }
  return undefined;
}
