// alertWebhookCalls: the outbox's ALERT_WEBHOOK calls (alerts.webhooks), each with the occurrence it posts.
import { z } from 'zod';
import * as f from '../domain/fields.js';
import type { AlertNotification } from '../domain/notifications/alert-notification.js';
import { listAlertWebhookCalls, MAX_ALERT_WEBHOOK_CALLS_PAGE, type AlertWebhookCall } from '../domain/notifications/alert-webhook-calls.js';
import { builder } from './builder.js';
import { pagedCost } from './cost.js';
import { deliveryFields } from './dispatch-fields.js';
import { argsOf } from './inputs.js';
import { AlertKindEnum, AlertSeverityEnum } from './monitor.js';
import { ANY_ROLE } from './roles.js';

const AlertOccurrenceRef = builder.objectRef<AlertNotification>('AlertOccurrence').implement({
  description: 'One occurrence of an alert, as the webhooks post it (the generic format’s body).',
  fields: (t) => ({
    dedupKey: t.exposeString('dedupKey', {
      description: 'The same for every read of this occurrence; a new one when the alert clears and comes back. Sent as Idempotency-Key.',
    }),
    kind: t.field({ type: AlertKindEnum, resolve: (o) => o.kind }),
    severity: t.field({ type: AlertSeverityEnum, resolve: (o) => o.severity }),
    message: t.exposeString('message', { nullable: true }),
    runId: t.field({ type: 'UUID', nullable: true, resolve: (o) => o.runId }),
    jobKey: t.exposeString('jobKey', { nullable: true }),
    businessKey: t.exposeString('businessKey', { nullable: true }),
    dispatchId: t.field({
      type: 'UUID',
      nullable: true,
      description: 'DISPATCH_DEAD only: the dispatch that died.',
      resolve: (o) => o.dispatchId,
    }),
    partitionId: t.exposeString('partitionId', { nullable: true }),
    consumer: t.exposeString('consumer', { nullable: true }),
    at: t.field({ type: 'DateTime', nullable: true, description: 'The alert’s own time.', resolve: (o) => o.at }),
    raisedAt: t.field({ type: 'DateTime', description: 'When a sweeper first saw this occurrence.', resolve: (o) => o.raisedAt }),
  }),
});

const AlertWebhookCallRef = builder.objectRef<AlertWebhookCall>('AlertWebhookCall').implement({
  description: 'An ALERT_WEBHOOK call: one alert occurrence posted to one receiver of alerts.webhooks.',
  fields: (t) => ({
    ...deliveryFields(t),
    receiver: t.exposeString('receiver', { description: 'The receiver’s name (its URL and headers are not shown).' }),
    occurrence: t.field({ type: AlertOccurrenceRef, resolve: (c) => c.occurrence }),
  }),
});

const alertWebhookCallsArgs = z.object({
  receiver: f.optional(z.string().max(200, 'must be at most 200 characters')).describe('Only the calls to this receiver.'),
  last: z.number().int().min(1, 'must be >= 1').max(MAX_ALERT_WEBHOOK_CALLS_PAGE, `must be <= ${MAX_ALERT_WEBHOOK_CALLS_PAGE}`).default(20),
});

builder.queryField('alertWebhookCalls', (t) =>
  t.field({
    type: [AlertWebhookCallRef],
    description: 'The latest alert notifications (ALERT_WEBHOOK calls), newest first.',
    extensions: ANY_ROLE,
    complexity: pagedCost('last', 20, MAX_ALERT_WEBHOOK_CALLS_PAGE),
    args: argsOf(t, alertWebhookCallsArgs),
    resolve: (_root, args, ctx) => {
      const q = f.parseCommand(alertWebhookCallsArgs, args, 'args');
      return listAlertWebhookCalls(ctx.services.db.prisma, q.receiver, q.last);
    },
  }),
);
