// PG-90 Error and Event, as the kit's flow has it: a failure that ends the run is reported first (failRun, with
// the transition the failing group named), then every failure is an event of its run (recordEvent), WARN for the
// normal races and ERROR otherwise — the flow's own expression decides.
import { randomUUID } from 'node:crypto';
import { evaluateText } from '../nifi/expression-language.js';
import { EVENT_LEVEL } from '../nifi/load-control-flow.js';
import type { FlowFile } from './client.js';
import type { World } from './world.js';

function describe(world: World, flowFile: FlowFile): Array<string | number> {
  const run = flowFile['load.run.id'] ? world.ledger.run(flowFile['load.run.id']) : undefined;
  return [
    flowFile['load.error.group'] ?? '-',
    flowFile['load.error.step'] ?? '-',
    run?.keyIndex ?? '-',
    run?.runNumber ?? '-',
    flowFile['load.partition.id'] ?? '-',
    flowFile['invokehttp.status.code'] ?? flowFile['load.error.code'] ?? '-',
  ];
}

/** A failure reaching PG-90's 'failures' port: an event of its run. */
export async function recordFlowEvent(world: World, flowFile: FlowFile): Promise<void> {
  world.log(`PG-90 ${describe(world, flowFile).join(' ')}`);
  const event: FlowFile = {
    ...flowFile,
    uuid: flowFile.uuid ?? randomUUID(),
    'load.event.level': evaluateText(EVENT_LEVEL, flowFile),
    'load.event.node': flowFile['load.worker.node'] ?? 'nifi-01',
  };
  await world.client.nifi('PG-90/recordEvent', event, { key: ['pg90', ...describe(world, flowFile)] });
}

/** A failure reaching PG-90's 'run failures' port: failRun, then the event (also when failRun is refused). */
export async function failRunThenRecord(world: World, flowFile: FlowFile): Promise<void> {
  await world.client.nifi('PG-90/failRun', flowFile, { key: ['pg90-fail', ...describe(world, flowFile)] });
  await recordFlowEvent(world, flowFile);
}
