// Run.publishUnknown: the PUBLISH_UNKNOWN decision kit (src/domain/publish/publish-unknown-kit.ts).
import { PUBLISH_UNKNOWN_RAISERS, publishUnknownKit, type PublishUnknownKit } from '../domain/publish/publish-unknown-kit.js';
import { builder } from './builder.js';
import { RunRef } from './runs.js';

const PublishUnknownRaiserEnum = builder.enumType('PublishUnknownRaiser', {
  values: PUBLISH_UNKNOWN_RAISERS,
  description: 'PG50: the publishing flow reported PUBLISH_UNKNOWN; SWEEPER: no result came within recovery.publishStale.',
});

const PublishUnknownKitRef = builder.objectRef<PublishUnknownKit>('PublishUnknownKit').implement({
  description: 'What resolving a PUBLISH_UNKNOWN needs: who raised it, what PG-50 reported, the target and its check.',
  fields: (t) => ({
    raisedBy: t.field({ type: PublishUnknownRaiserEnum, resolve: (k) => k.raisedBy }),
    raisedAt: t.field({ type: 'DateTime', description: 'When the outcome became unknown.', resolve: (k) => k.raisedAt }),
    actor: t.exposeString('actor', { nullable: true, description: 'The token name of the PG-50 call, or sweeper.' }),
    errorCode: t.exposeString('errorCode', { nullable: true }),
    message: t.exposeString('message', {
      nullable: true,
      description: 'PG-50’s message (raisedBy PG50), or the sweeper’s reason (raisedBy SWEEPER): never the one for the other.',
    }),
    reportedDetails: t.field({
      type: 'JSON',
      nullable: true,
      description: 'reportPublishResult.details as PG-50 sent them; null when the sweeper raised it.',
      resolve: (k) => k.reportedDetails,
    }),
    queryId: t.exposeString('queryId', { nullable: true, description: 'The Hive query id PG-50 reported.' }),
    publishStartedAt: t.field({ type: 'DateTime', nullable: true, resolve: (k) => k.publishStartedAt }),
    expectedRows: t.field({
      type: 'Long',
      nullable: true,
      description: 'The rows the target partition should hold (the staging count).',
      resolve: (k) => k.expectedRows,
    }),
    checkJob: t.exposeString('checkJob', {
      nullable: true,
      description: 'The console.publishChecks entry (its job) that matched; null: none.',
    }),
    target: t.exposeString('target', { nullable: true, description: 'The target table and partition, from the matching check.' }),
    checkQuery: t.exposeString('checkQuery', {
      nullable: true,
      description: 'The matching check’s query with its placeholders filled from the run, to run on the target.',
    }),
  }),
});

builder.objectField(RunRef, 'publishUnknown', (t) =>
  t.field({
    type: PublishUnknownKitRef,
    nullable: true,
    description: 'For a run that became PUBLISH_UNKNOWN (its latest time), what resolving it needs; null for any other run.',
    resolve: (r, _a, ctx) => publishUnknownKit(ctx.services.db.prisma, r, ctx.services.config.console.publishChecks),
  }),
);
