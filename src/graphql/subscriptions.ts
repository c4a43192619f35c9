import { z } from 'zod';
import { DomainError } from '../domain/errors.js';
import * as f from '../domain/fields.js';
import { getRun } from '../domain/runs/queries.js';
import type { Realtime } from '../realtime/realtime.js';
import { builder, type GraphQLContext } from './builder.js';
import { argsOf, uuid } from './inputs.js';
import { AlertRef, monitorSummaryArgs, MonitorSummaryRef } from './monitor.js';
import { ANY_ROLE } from './roles.js';
import { RunRef } from './runs.js';

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
