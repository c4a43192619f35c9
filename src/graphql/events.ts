import { z } from 'zod';
import { inTransaction } from '../db/transaction.js';
import { recordNifiEvent } from '../domain/events/events.js';
import * as f from '../domain/fields.js';
import { builder } from './builder.js';
import { EventLevelEnum } from './enums.js';
import { NIFI } from './roles.js';
import { actorName } from './runs.js';

const RecordEventInput = builder.inputType('RecordEventInput', {
  fields: (t) => ({
    runId: t.field({ type: 'UUID' }),
    level: t.field({ type: EventLevelEnum, required: true }),
    name: t.string({ required: true }),
    jobKey: t.string(),
    businessKey: t.string(),
    partitionId: t.string(),
    chunkIndex: t.field({ type: 'Long' }),
    processGroup: t.string(),
    processorName: t.string(),
    processorId: t.string(),
    nodeId: t.string(),
    attemptNo: t.field({ type: 'Long' }),
    rowCount: t.field({ type: 'Long' }),
    byteCount: t.field({ type: 'Long' }),
    durationMs: t.field({ type: 'Long' }),
    errorClass: t.string(),
    errorCode: t.string(),
    message: t.string(),
    details: t.field({ type: 'JSON' }),
  }),
});

const optional = <S extends z.ZodType>(s: S) => s.nullish().transform((v) => v ?? null);

const recordEventSchema = z.object({
  runId: optional(z.string()),
  level: z.enum(['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR']),
  name: z.string().regex(/^[A-Za-z0-9_.:-]{1,80}$/, 'must match ^[A-Za-z0-9_.:-]{1,80}$'),
  jobKey: optional(f.jobKey),
  businessKey: optional(f.businessKey),
  partitionId: optional(f.text(40)),
  chunkIndex: optional(f.int32(0)),
  processGroup: optional(f.text(100)),
  processorName: optional(f.text(150)),
  processorId: optional(f.text(100)),
  nodeId: optional(f.text(200)),
  attemptNo: optional(f.int32(0)),
  rowCount: optional(f.count),
  byteCount: optional(f.count),
  durationMs: optional(f.count),
  errorClass: optional(f.text(40)),
  errorCode: optional(f.text(100)),
  message: optional(f.text(2000)),
  details: f.jsonObject.nullish().transform((v) => v ?? {})
    .refine((v) => JSON.stringify(v).length <= 65_536, 'at most 64 KiB of JSON'),
});

const RecordEventPayload = builder.objectRef<{ eventId: string }>('RecordEventPayload').implement({
  fields: (t) => ({ eventId: t.field({ type: 'UUID', resolve: (p) => p.eventId }) }),
});

builder.mutationField('recordEvent', (t) =>
  t.field({
    type: RecordEventPayload,
    nullable: true,
    extensions: NIFI,
    args: { input: t.arg({ type: RecordEventInput, required: true }) },
    resolve: (_root, args, ctx) => {
      const event = { ...f.parseCommand(recordEventSchema, args.input), actor: actorName(ctx) };
      return inTransaction(ctx.services.db, (tx) => recordNifiEvent(tx, event));
    },
  }),
);
