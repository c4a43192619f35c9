// The business-date gate in the simulated world: two external upstream jobs report their attempts for each
// date (some attempts fail and are repeated), a Load Control job bound to a gate on them waits for both
// before it may start and before it may publish, and a downstream report publishes each date from two
// publishers at once once that job succeeded — exactly one of them may write. The upstream jobs and the
// publishers are flows through the kit's gate group: recordObservation, readiness, publish.
import { randomUUID } from 'node:crypto';
import type { FlowFile } from './client.js';
import { DEFINE_GATE } from '../schema/documents/operator.js';
import { sleep, type World } from './world.js';

export const GATED_JOB = 'SIM_GATED';
const UPSTREAM_JOBS = ['SIM_UP_A', 'SIM_UP_B'];
const LOAD_GATE = 'SIM_GATED_LOAD';
const REPORT_GATE = 'SIM_DAILY_REPORT';

const P_UPSTREAM_FAILS = 0.25;

export function businessDate(index: number): string {
  return new Date(Date.UTC(2030, 0, 1) + index * 86_400_000).toISOString().slice(0, 10);
}

export async function defineGates(world: World): Promise<void> {
  for (const input of [
    { consumer: LOAD_GATE, requiredJobs: UPSTREAM_JOBS, boundJobKey: GATED_JOB },
    { consumer: REPORT_GATE, requiredJobs: [GATED_JOB, UPSTREAM_JOBS[0]!] },
  ]) {
    const reply = await world.client.call('defineGate', DEFINE_GATE, { input }, { role: 'operator', key: ['gate', input.consumer] });
    if (reply.status !== 200) throw new Error(`defineGate ${input.consumer}: ${reply.status} ${reply.code}`);
  }
}

/** Both upstream jobs' attempts for the date: RUNNING, then SUCCEEDED — or FAILED and a second attempt. */
export async function runUpstream(world: World, date: string, index: number): Promise<void> {
  await Promise.all(
    UPSTREAM_JOBS.map(async (jobId) => {
      const attempts = world.dice.chance(P_UPSTREAM_FAILS, 'upstream-fails', jobId, index) ? 2 : 1;
      for (let attempt = 1; attempt <= attempts; attempt++) {
        const flowFile: FlowFile = {
          'gate.job.id': jobId,
          'gate.business.date': date,
          'gate.attempt': String(attempt),
          'gate.run.id': `${jobId}-${date}-${attempt}`,
          'gate.started.at': new Date().toISOString(),
        };
        const observe = async (state: string) => {
          const reply = await world.client.nifi(
            'GATE/recordObservation',
            { ...flowFile, uuid: randomUUID(), 'gate.state': state },
            { key: ['observation', jobId, index, attempt, state] },
          );
          if (reply.status !== 200) throw new Error(`recordObservation ${flowFile['gate.run.id']} ${state}: ${reply.status} ${reply.code}`);
        };
        await observe('RUNNING');
        await sleep(world.dice.int(100, 700, 'upstream-runs', jobId, index, attempt));
        await observe(attempt < attempts ? 'FAILED' : 'SUCCEEDED');
      }
    }),
  );
}

/** Two report publishers for the date at once; each asks the gate until it is ready, then publishes. */
export async function publishReport(world: World, date: string, rows: number): Promise<void> {
  const publishers = [1, 2].map(async (publisher) => {
    const flowFile: FlowFile = {
      uuid: randomUUID(),
      'gate.consumer': REPORT_GATE,
      'gate.business.date': date,
      'gate.output.name': 'daily',
      'gate.output.rows': String(rows),
    };
    for (let attempt = 0; attempt < 20 && !world.stopping(); attempt++) {
      const readiness = await world.client.nifi('GATE/readiness', flowFile, { key: ['readiness', date, publisher, attempt] });
      if (readiness.status !== 200) throw new Error(`readiness ${date}: ${readiness.status} ${readiness.code}`);
      if (readiness.attributes['gate.ready'] !== 'true') {
        await sleep(300);
        continue;
      }
      const reply = await world.client.nifi<{ published: boolean }>('GATE/publish', flowFile, {
        key: ['publish', date, publisher, attempt],
        observe: (data) => {
          if (data.published) {
            const key = `${REPORT_GATE}|${date}`;
            world.ledger.publications.set(key, (world.ledger.publications.get(key) ?? 0) + 1);
          }
        },
      });
      if (reply.status === 200) return;
      if (reply.code !== 'DEPENDENCIES_NOT_READY') throw new Error(`publish ${date}: ${reply.status} ${reply.code}`);
      await sleep(300);
    }
  });
  await Promise.all(publishers);
}
