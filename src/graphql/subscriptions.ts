import { z } from 'zod';
import { DomainError } from '../contract/errors.js';
import * as f from '../domain/fields.js';
import { getRun } from '../domain/runs/queries.js';
import type { Realtime } from '../realtime/realtime.js';
import { builder, type GraphQLContext } from './builder.js';
import { argsOf, uuid } from './inputs.js';
import { AlertRef, monitorSummaryArgs, MonitorSummaryRef } from './monitor.js';
import { ANY_ROLE } from './roles.js';
import type { RunProgressEvent } from '../realtime/run-progress.js';
import type { RealtimeStatus } from '../realtime/status-feed.js';
import { MAX_PARTITIONS_PER_RUN } from './cost.js';
import { PartitionRef, RunRef, StatusCount } from './runs.js';

builder.subscriptionType({
  description:
    'Realtime over Server-Sent Events on /graphql (GraphQL over SSE, distinct connections mode), fed by ' +
    'PostgreSQL LISTEN/NOTIFY. After the server lost and re-established its LISTEN connection, every ' +
    'subscription receives a fresh state (notifications sent while it was down are lost).',
});

/**
 * The process's realtime, and from here on this subscription's fields are read through realtime's own
 * connections: every event re-resolves them, and a backlog of requests waiting for the API's pool must
 * not hold them up.
 */
export function realtimeFor(ctx: GraphQLContext): Realtime {
  const realtime = ctx.services.realtime;
  if (!realtime)
    throw new DomainError('SERVICE_UNAVAILABLE', { reason: 'realtime is not running in this process' }, 'realtime unavailable');
  ctx.services = { ...ctx.services, db: realtime.db };
  return realtime;
}

const runChangedArgs = z.object({ runId: f.optional(uuid), jobKey: f.optional(f.jobKey) });

builder.subscriptionField('runChanged', (t) =>
  t.field({
    type: RunRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      'The run, re-read after every committed transition, dispatch or metric change, and after claim and ' +
      'chunk progress (coalesced: a few per second per run at most). With runId: that run, starting with ' +
      "its current state. With jobKey: that job's runs. Neither: every run. After a LISTEN reconnect: the " +
      'watched run, or every active run and every run that moved since the connection was lost.',
    args: argsOf(t, runChangedArgs),
    subscribe: async (_root, args, ctx) => {
      const { runId, jobKey } = f.parseCommand(runChangedArgs, args, null);
      const realtime = realtimeFor(ctx);
      if (runId) await getRun(realtime.db.prisma, runId);
      return realtime.runs.subscribe({ runId, jobKey });
    },
    resolve: (run) => run,
  }),
);

const RunProgressRef = builder.objectRef<RunProgressEvent>('RunProgress').implement({
  description:
    "A run's progress: a snapshot, then the partitions that changed. Apply an event whose sinceVersion is the " +
    'version you hold; any other non-snapshot event means one was missed: subscribe again for a snapshot.',
  fields: (t) => ({
    version: t.exposeInt('version', { description: "One more per event of this run's subscription in this server process." }),
    sinceVersion: t.exposeInt('sinceVersion', {
      nullable: true,
      description: 'The version whose state this event brings up to date; null for a snapshot.',
    }),
    snapshot: t.exposeBoolean('snapshot', {
      description: 'partitions holds every partition of the run (the first event, and after the server lost change notifications).',
    }),
    run: t.field({ type: RunRef, description: 'The run row as of this event.', resolve: (e) => e.run }),
    partitionCounts: t.field({ type: [StatusCount], resolve: (e) => e.partitionCounts }),
    partitions: t.field({
      type: [PartitionRef],
      complexity: { field: 1, multiplier: MAX_PARTITIONS_PER_RUN },
      description: 'Every partition (snapshot) or those written since sinceVersion, in partition order.',
      resolve: (e) => e.partitions,
    }),
  }),
});

const runProgressArgs = z.object({ runId: uuid });

builder.subscriptionField('runProgress', (t) =>
  t.field({
    type: RunProgressRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      "A run's progress as deltas: a snapshot first (the run, its partition counts and every partition), then " +
      'after each committed transition or claim/chunk progress (coalesced: a few per second at most) the run, ' +
      'its counts and only the partitions that changed, so a push does not grow with the run. After a LISTEN ' +
      'reconnect: a snapshot again.',
    args: argsOf(t, runProgressArgs),
    subscribe: async (_root, args, ctx) => {
      const { runId } = f.parseCommand(runProgressArgs, args, null);
      const realtime = realtimeFor(ctx);
      await getRun(realtime.db.prisma, runId);
      return realtime.progress.subscribe(runId);
    },
    resolve: (progress) => progress,
  }),
);

const RealtimeStatusRef = builder.objectRef<RealtimeStatus>('RealtimeStatus').implement({
  fields: (t) => ({
    live: t.exposeBoolean('live', {
      description:
        'The server receives change notifications. False while its LISTEN connection is down (a database outage): ' +
        'subscriptions stay open but get nothing, so what they showed is stale; when it is back they get fresh state.',
    }),
    since: t.field({ type: 'DateTime', description: 'Since when `live` has held.', resolve: (s) => s.since }),
  }),
});

builder.subscriptionField('realtimeStatus', (t) =>
  t.field({
    type: RealtimeStatusRef,
    nullable: true,
    extensions: ANY_ROLE,
    description: "Whether this server's subscriptions are live: the current status first, then every change.",
    subscribe: (_root, _args, ctx) => realtimeFor(ctx).status.subscribe(),
    resolve: (status) => status,
  }),
);

builder.subscriptionField('monitorSummaryChanged', (t) =>
  t.field({
    type: MonitorSummaryRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      'The monitor summary (as the monitorSummary query), starting with the current one, then whenever it ' +
      'changed (coalesced, at most about twice a second), and at least re-checked every few seconds for ' +
      'what changes with the clock (stale runs, the recent window).',
    args: argsOf(t, monitorSummaryArgs),
    subscribe: (_root, args, ctx) => realtimeFor(ctx).monitor.subscribeSummary(f.parseCommand(monitorSummaryArgs, args, null).alertLimit),
    resolve: (summary) => summary,
  }),
);

builder.subscriptionField('alertRaised', (t) =>
  t.field({
    type: AlertRef,
    nullable: true,
    extensions: ANY_ROLE,
    description:
      'Every alert (the kinds of the monitor summary) that appears from now on, once; an alert that ' +
      'clears and comes back later (a dispatch dead again, a run stale again) is raised again. After a ' +
      'LISTEN reconnect, the alerts that appeared meanwhile.',
    subscribe: (_root, _args, ctx) => realtimeFor(ctx).monitor.subscribeAlerts(),
    resolve: (alert) => alert,
  }),
);
