import { z } from 'zod';
import { EVENT_LEVELS, recordNifiEventOperation } from '../domain/events/events.js';
import * as f from '../domain/fields.js';
import { builder } from './builder.js';
import { EventLevelEnum } from './enums.js';
import { inputEnum, uuid } from './inputs.js';
import { defineMutation } from './mutation.js';
import { NIFI } from './roles.js';

const RecordEventPayload = builder.objectRef<{ eventId: string }>('RecordEventPayload').implement({
  fields: (t) => ({ eventId: t.field({ type: 'UUID', resolve: (p) => p.eventId }) }),
});

defineMutation('recordEvent', {
  roles: NIFI,
  input: z.object({
    runId: f.optional(uuid),
    level: inputEnum(EventLevelEnum, EVENT_LEVELS),
    name: z.string().regex(/^[A-Za-z0-9_.:-]{1,80}$/, 'must match ^[A-Za-z0-9_.:-]{1,80}$'),
    jobKey: f.optional(f.jobKey),
    businessKey: f.optional(f.businessKey),
    partitionId: f.optional(f.text(40)),
    chunkIndex: f.optional(f.int32(0)),
    processGroup: f.optional(f.text(100)),
    processorName: f.optional(f.text(150)),
    processorId: f.optional(f.text(100)),
    nodeId: f.optional(f.text(200)),
    attemptNo: f.optional(f.int32(0)),
    rowCount: f.optional(f.count),
    byteCount: f.optional(f.count),
    durationMs: f.optional(f.count),
    errorClass: f.optional(f.text(40)),
    errorCode: f.optional(f.text(100)),
    message: f.optional(f.text(2000)),
    details: f.optional(f.jsonObject, {}),
  }),
  payload: RecordEventPayload,
  operation: recordNifiEventOperation,
});
