// PG-90 Error and Event: what a flow does with a 4xx it will not retry (README "Calling it from NiFi").
import type { Reply } from './client.js';
import { RECORD_EVENT } from './operations.js';
import type { World } from './world.js';

export interface FlowFailure {
  level: 'WARN' | 'ERROR';
  processGroup: 'PG-10' | 'PG-20' | 'PG-40' | 'PG-50' | 'PG-60';
  runId?: string;
  partitionId?: string;
  step: string;
  reply: Reply<unknown>;
}

export async function recordFlowEvent(world: World, failure: FlowFailure): Promise<void> {
  const { reply } = failure;
  world.log(
    `${failure.processGroup} ${failure.step} → ${reply.status} ${reply.code ?? ''} run ${failure.runId ?? '-'} ${failure.partitionId ?? ''}`,
  );
  const run = failure.runId ? world.ledger.run(failure.runId) : undefined;
  await world.client.call(
    'recordEvent',
    RECORD_EVENT,
    {
      input: {
        level: failure.level,
        name: reply.code ?? `HTTP_${reply.status}`,
        runId: failure.runId ?? null,
        partitionId: failure.partitionId ?? null,
        processGroup: failure.processGroup,
        processorName: failure.step,
        errorCode: reply.code ?? null,
        message: `${failure.step} answered ${reply.status}`,
        details: reply.details ?? {},
      },
    },
    {
      key: [
        'pg90',
        failure.processGroup,
        failure.step,
        run?.keyIndex ?? '-',
        run?.runNumber ?? '-',
        failure.partitionId ?? '-',
        reply.status,
      ],
    },
  );
}
