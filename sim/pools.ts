// With --pool-limit: the ungated jobs share one source pool, defined through the API as an operator would, and
// the pool's RUNNING partitions are sampled on the database while the flows run — never more than the limit,
// whatever the faults (claims refused POOL_FULL wait and ask again, sim/extract.ts).
import { ASSIGN_JOB_TO_POOL, DEFINE_POOL } from '../schema/documents/operator.js';
import type { InvariantResult } from './invariants.js';
import { sleep, type World } from './world.js';

const POOL = 'sim-oracle';
const SAMPLE_MS = 25;

export async function definePool(world: World, jobs: string[], limit: number): Promise<void> {
  const define = await world.client.call(
    'definePool',
    DEFINE_POOL,
    { input: { name: POOL, maxRunning: limit, retryAfterSeconds: 1, reason: 'one Oracle for the ungated jobs' } },
    { role: 'operator', key: ['pool'] },
  );
  if (define.status !== 200) throw new Error(`definePool answered ${define.status}`);
  for (const jobKey of jobs) {
    const assigned = await world.client.call(
      'assignJobToPool',
      ASSIGN_JOB_TO_POOL,
      { input: { jobKey, pool: POOL, reason: 'reads the shared Oracle' } },
      { role: 'operator', key: ['pool', jobKey] },
    );
    if (assigned.status !== 200) throw new Error(`assignJobToPool ${jobKey} answered ${assigned.status}`);
  }
}

/** Samples the pool's use until stopped; the invariant counts the samples and names those over the limit. */
export function samplePool(world: World, limit: number): { stop(): Promise<InvariantResult> } {
  let running = true;
  let samples = 0;
  let peak = 0;
  const violations: string[] = [];
  const sampling = (async () => {
    while (running) {
      const { rows } = await world.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM nifi_ops.load_partition p JOIN nifi_ops.load_run r USING (run_id)
           JOIN nifi_ops.source_pool_job j ON j.job_key = r.job_key
          WHERE p.status = 'RUNNING' AND j.pool_name = $1`,
        [POOL],
      );
      const n = rows[0]!.n;
      samples++;
      peak = Math.max(peak, n);
      if (n > limit) violations.push(`sample ${samples}: ${n} RUNNING in ${POOL} (limit ${limit})`);
      await sleep(SAMPLE_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await sampling;
      world.log(`pool ${POOL}: peak ${peak} RUNNING of ${limit} over ${samples} samples`);
      return { name: 'pool_limit_held', checked: samples, violations };
    },
  };
}
