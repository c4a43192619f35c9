// PG-70 Cleanup in the simulated world: every ten seconds, for each job, the ended runs past retention (a second,
// in the simulation) lose their staging table and run path, and the cleanup is recorded — the kit's
// cleanupCandidates, one FlowFile per candidate, and recordCleanup.
import { randomUUID } from 'node:crypto';
import type { FlowFile } from './client.js';
import { SIM_JOBS } from './coordinator.js';
import { recordFlowEvent } from './pg90.js';
import { sleep, type World } from './world.js';

const PASS_MS = 10_000;

/** Cleans up until `stopped()`. */
export async function cleanUp(world: World, stopped: () => boolean): Promise<void> {
  for (let pass = 0; !stopped(); pass++) {
    for (const job of SIM_JOBS) {
      const flowFile: FlowFile = { uuid: randomUUID(), 'load.job.key': job };
      const candidates = await world.client.nifi('PG-70/cleanupCandidates', flowFile, { key: ['cleanup', job, pass] });
      if (candidates.status !== 200) {
        await recordFlowEvent(world, { ...flowFile, ...candidates.attributes });
        continue;
      }
      for (const item of candidates.items) {
        // DROP TABLE and DeleteHDFS did their part
        const candidate: FlowFile = { ...flowFile, ...item, uuid: randomUUID() };
        const runId = candidate['load.run.id']!;
        const run = world.ledger.run(runId);
        const recorded = await world.client.nifi<{ changed: boolean }>('PG-70/recordCleanup', candidate, {
          key: ['cleaned', run?.keyIndex ?? runId, run?.runNumber ?? 0],
          observe: (data) => {
            if (data.changed) world.ledger.cleaned.push(runId);
          },
        });
        if (recorded.status !== 200) await recordFlowEvent(world, { ...candidate, ...recorded.attributes });
      }
    }
    // the next pass, unless the simulation stops first
    for (let waited = 0; waited < PASS_MS && !stopped(); waited += 250) await sleep(250);
  }
}
