// The simulated operator: watches the monitor's alerts (operator token) and acts as the runbook says.
// PUBLISH_UNKNOWN: check the Hive target and resolve to PUBLISHED (then PG-60 is started by hand) or
// FAILED_PUBLISH. DISPATCH_DEAD: resend. A run stale in CREATED or STAGE_VALIDATING with no flow working on
// it (its flow's answer was lost): cancel, so that the next trigger starts a new run for the key.
import { randomUUID } from 'node:crypto';
import { CANCEL_RUN, RESEND_DISPATCH, RESOLVE_UNKNOWN } from '../schema/documents/operator.js';
import { MONITOR_ALERTS } from './operations.js';
import { targetValidationFlow } from './validate.js';
import { sleep, type World } from './world.js';

interface Alert {
  kind: string;
  runId: string | null;
  status: string | null;
  dispatchId: string | null;
}

const CANCELLABLE_WHEN_STALE = new Set(['CREATED', 'STAGE_VALIDATING']);

export class Operator {
  private readonly handled = new Set<string>();
  private readonly followUps: Array<Promise<void>> = [];
  private passes = 0;

  constructor(private readonly world: World) {}

  /** Looks at the alerts every second until `stopped()`, then waits for the PG-60 flows it started. */
  async watch(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      await this.pass();
      await sleep(1_000);
    }
    await Promise.all(this.followUps);
  }

  private async pass(): Promise<void> {
    const { world } = this;
    const reply = await world.client.call<{ alerts: Alert[] }>(
      'monitorSummary',
      MONITOR_ALERTS,
      {},
      { role: 'operator', key: ['monitor', this.passes++] },
    );
    if (reply.status !== 200) return;
    for (const alert of reply.data!.alerts) {
      if (!alert.runId) continue;
      if (alert.kind === 'PUBLISH_UNKNOWN') await this.resolve(alert.runId);
      else if (alert.kind === 'DISPATCH_DEAD' && alert.dispatchId) await this.resend(alert.runId, alert.dispatchId);
      else if (alert.kind === 'RUN_STALE' && alert.status && CANCELLABLE_WHEN_STALE.has(alert.status))
        await this.cancel(alert.runId, alert.status);
    }
  }

  private async resolve(runId: string): Promise<void> {
    const { world } = this;
    const run = world.ledger.run(runId);
    if (!run || this.handled.has(`resolve|${runId}`)) return;
    const published = run.targetRows !== undefined;
    const reply = await world.client.call<{ runStatus: string }>(
      'resolveUnknown',
      RESOLVE_UNKNOWN,
      {
        input: {
          runId,
          resolution: published ? 'PUBLISHED' : 'FAILED_PUBLISH',
          reason: published ? `target holds ${run.targetRows} rows of this run` : 'target was not overwritten by this run',
        },
      },
      { role: 'operator', key: ['resolve', run.keyIndex, run.runNumber] },
    );
    if (reply.status !== 200) return;
    this.handled.add(`resolve|${runId}`);
    world.ledger.operatorActions.resolved++;
    world.log(`operator resolved ${runId} as ${reply.data!.runStatus}`);
    // PG-60 is not triggered by the resolution: the operator feeds it the run PG-40 validated
    if (reply.data!.runStatus === 'PUBLISHED' && run.validated) {
      this.followUps.push(targetValidationFlow(world, run, { ...run.validated, uuid: randomUUID(), 'load.run.status': 'PUBLISHED' }));
    }
  }

  private async resend(runId: string, dispatchId: string): Promise<void> {
    const { world } = this;
    const run = world.ledger.run(runId);
    const reply = await world.client.call(
      'resendDispatch',
      RESEND_DISPATCH,
      {
        input: { runId, dispatchId, reason: 'receiver is back, sending again' },
      },
      { role: 'operator', key: ['resend', run?.keyIndex ?? runId, run?.runNumber ?? 0, world.ledger.operatorActions.resent] },
    );
    if (reply.status === 200) {
      world.ledger.operatorActions.resent++;
      world.log(`operator resent ${dispatchId}`);
    }
  }

  private async cancel(runId: string, status: string): Promise<void> {
    const { world } = this;
    const run = world.ledger.run(runId);
    if (!run || run.validating > 0 || this.handled.has(`cancel|${runId}`)) return;
    const reply = await world.client.call(
      'cancelRun',
      CANCEL_RUN,
      {
        input: { runId, reason: `stalled in ${status} with no flow working on it` },
      },
      { role: 'operator', key: ['cancel', run.keyIndex, run.runNumber] },
    );
    if (reply.status !== 200) return;
    this.handled.add(`cancel|${runId}`);
    world.ledger.operatorActions.cancelled++;
    world.log(`operator cancelled ${runId} (stale in ${status})`);
  }
}
