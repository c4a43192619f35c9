// prisma/schema.prisma is written by hand to mirror the SQL migrations (the SQL is the source of
// truth). This proves the two agree, column by column, and that the generated client can write and
// read every column of every model.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma, PrismaClient } from '../../src/generated/prisma/client.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

// ---------------------------------------------------------------------------------------------
// A parser for the part of the schema language the mirror uses: model blocks with scalar and
// relation fields, @map, @db.*, @id, @default, @@id, @@map, @@schema.

interface PrismaField {
  name: string;
  type: string;
  optional: boolean;
  list: boolean;
  column: string;
  nativeType?: { name: string; args: string[] };
  id: boolean;
  autoincrement: boolean;
}

interface PrismaModel {
  name: string;
  table: string;
  schema?: string;
  /** Scalar fields only: relation fields (typed by another model) are left out. */
  fields: PrismaField[];
  idColumns: string[];
}

function parsePrismaSchema(source: string): PrismaModel[] {
  const lines = source.split('\n').map((line) => line.replace(/\/\/.*$/, '').trim());
  const blocks: { name: string; lines: string[] }[] = [];
  let current: { name: string; lines: string[] } | undefined;
  for (const line of lines) {
    const start = /^model\s+(\w+)\s*\{$/.exec(line);
    if (start) {
      current = { name: start[1]!, lines: [] };
      blocks.push(current);
    } else if (line === '}') {
      current = undefined;
    } else if (current && line) {
      current.lines.push(line);
    }
  }
  const modelNames = new Set(blocks.map((block) => block.name));

  return blocks.map(({ name, lines: body }) => {
    const fields: PrismaField[] = [];
    let table = name;
    let schema: string | undefined;
    let compoundId: string[] | undefined;
    for (const line of body) {
      if (line.startsWith('@@')) {
        table = /^@@map\("([^"]+)"\)/.exec(line)?.[1] ?? table;
        schema = /^@@schema\("([^"]+)"\)/.exec(line)?.[1] ?? schema;
        const id = /^@@id\(\[([^\]]+)\]/.exec(line)?.[1];
        if (id) compoundId = id.split(',').map((part) => part.trim().replace(/\(.*$/, ''));
        continue;
      }
      const match = /^(\w+)\s+(\w+)(\[\])?(\?)?\s*(.*)$/.exec(line);
      if (!match) throw new Error(`model ${name}: cannot parse "${line}"`);
      const [, fieldName = '', type = '', list, optional, attributes = ''] = match;
      if (modelNames.has(type)) continue; // relation field: no column of its own
      const nativeType = /@db\.(\w+)(?:\(([^)]*)\))?/.exec(attributes);
      fields.push({
        name: fieldName,
        type,
        optional: optional === '?',
        list: list === '[]',
        column: /@map\("([^"]+)"\)/.exec(attributes)?.[1] ?? fieldName,
        nativeType: nativeType
          ? { name: nativeType[1]!, args: nativeType[2] ? nativeType[2].split(',').map((arg) => arg.trim()) : [] }
          : undefined,
        id: /@id\b/.test(attributes),
        autoincrement: /@default\(autoincrement\(\)\)/.test(attributes),
      });
    }
    const idFields = compoundId ?? fields.filter((field) => field.id).map((field) => field.name);
    const idColumns = idFields.map((fieldName) => {
      const field = fields.find((candidate) => candidate.name === fieldName);
      if (!field) throw new Error(`model ${name}: id field ${fieldName} is not a scalar field`);
      return field.column;
    });
    return { name, table, schema, fields, idColumns };
  });
}

/** The PostgreSQL type a Prisma field declares, spelt as `columnType` spells a column's type. */
function expectedColumnType(field: PrismaField): string {
  const native = field.nativeType;
  const args = native?.args.length ? `(${native.args.join(',')})` : '';
  const key = `${field.type}${native ? `@${native.name}` : ''}`;
  const types: Record<string, string> = {
    String: 'text',
    'String@Text': 'text',
    'String@VarChar': `character varying${args}`,
    'String@Char': `character${args}`,
    'String@Uuid': 'uuid',
    Int: 'integer',
    'Int@Integer': 'integer',
    'Int@SmallInt': 'smallint',
    BigInt: 'bigint',
    'BigInt@BigInt': 'bigint',
    Boolean: 'boolean',
    'Boolean@Boolean': 'boolean',
    Float: 'double precision',
    'Float@DoublePrecision': 'double precision',
    'Float@Real': 'real',
    DateTime: 'timestamp without time zone(3)',
    'DateTime@Timestamp': `timestamp without time zone${args || '(3)'}`,
    'DateTime@Timestamptz': `timestamp with time zone${args || '(3)'}`,
    'DateTime@Date': 'date',
    'DateTime@Time': `time without time zone${args || '(3)'}`,
    Decimal: 'numeric(65,30)',
    'Decimal@Decimal': `numeric${args}`,
    Json: 'jsonb',
    'Json@JsonB': 'jsonb',
    'Json@Json': 'json',
    Bytes: 'bytea',
  };
  const type = types[key];
  if (!type) throw new Error(`no mapping for ${key} (field ${field.name}); extend expectedColumnType`);
  return field.list ? `${type}[]` : type;
}

interface ColumnRow {
  table_name: string;
  column_name: string;
  is_nullable: 'YES' | 'NO';
  data_type: string;
  udt_name: string;
  character_maximum_length: number | null;
  numeric_precision: number | null;
  numeric_scale: number | null;
  datetime_precision: number | null;
}

function columnType(column: ColumnRow): string {
  switch (column.data_type) {
    case 'character varying':
    case 'character':
      return column.character_maximum_length === null ? column.data_type : `${column.data_type}(${column.character_maximum_length})`;
    case 'numeric':
      return column.numeric_precision === null ? 'numeric' : `numeric(${column.numeric_precision},${column.numeric_scale})`;
    case 'timestamp with time zone':
    case 'timestamp without time zone':
    case 'time without time zone':
      return `${column.data_type}(${column.datetime_precision})`;
    case 'ARRAY':
      return `${column.udt_name.replace(/^_/, '')}[]`;
    case 'USER-DEFINED':
      return column.udt_name;
    default:
      return column.data_type;
  }
}

// ---------------------------------------------------------------------------------------------

const schemaPath = new URL('../../prisma/schema.prisma', import.meta.url);
const models = parsePrismaSchema(readFileSync(schemaPath, 'utf8'));
const modelsByName = new Map(models.map((model) => [model.name, model]));
const SCHEMA = 'nifi_ops';
const INTERNAL_TABLES = new Set(['lc_migration', 'lc_function_file']);

let database: TestDatabase;
let columns: ColumnRow[];
let primaryKeys: Map<string, string[]>;

beforeAll(async () => {
  database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    columns = (
      await client.query<ColumnRow>(
        `SELECT table_name, column_name, is_nullable, data_type, udt_name, character_maximum_length,
                numeric_precision, numeric_scale, datetime_precision
           FROM information_schema.columns
          WHERE table_schema = $1
          ORDER BY table_name, ordinal_position`,
        [SCHEMA],
      )
    ).rows;
    const keys = await client.query<{ table_name: string; columns: string[] }>(
      `SELECT c.relname AS table_name,
              array_agg(a.attname::text ORDER BY array_position(i.indkey::int2[], a.attnum)) AS columns
         FROM pg_index i
         JOIN pg_class c ON c.oid = i.indrelid
         JOIN pg_namespace n ON n.oid = c.relnamespace
         JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY (i.indkey)
        WHERE i.indisprimary AND n.nspname = $1
        GROUP BY c.relname`,
      [SCHEMA],
    );
    primaryKeys = new Map(keys.rows.map((row) => [row.table_name, row.columns]));
  } finally {
    await client.end();
  }
});

afterAll(async () => {
  await database?.drop();
});

describe('prisma/schema.prisma mirrors the SQL migrations', () => {
  it('has models, and the generated client has the same models', () => {
    expect(models.length).toBeGreaterThan(0);
    expect(models.map((model) => model.name).sort()).toEqual(Object.values(Prisma.ModelName).sort());
  });

  it('maps every model to a nifi_ops table and every nifi_ops table (but the runner’s) to a model', () => {
    const tables = new Set(columns.map((column) => column.table_name));
    for (const model of models) {
      expect(model.schema, `${model.name} @@schema`).toBe(SCHEMA);
      expect(tables.has(model.table), `${model.name} → table ${SCHEMA}.${model.table}`).toBe(true);
    }
    const mapped = new Set(models.map((model) => model.table));
    const unmapped = [...tables].filter((table) => !mapped.has(table) && !INTERNAL_TABLES.has(table));
    expect(unmapped, 'tables without a model').toEqual([]);
  });

  it.each(models.map((model) => [model.name, model] as const))('%s: same columns, types, nullability and key', (_name, model) => {
    const tableColumns = columns.filter((column) => column.table_name === model.table);
    const problems: string[] = [];
    for (const field of model.fields) {
      const column = tableColumns.find((candidate) => candidate.column_name === field.column);
      if (!column) {
        problems.push(`${field.name}: no column ${model.table}.${field.column}`);
        continue;
      }
      if (field.optional !== (column.is_nullable === 'YES')) {
        problems.push(
          `${field.name}: ${field.optional ? 'optional' : 'required'} but column is ${column.is_nullable === 'YES' ? 'NULL' : 'NOT NULL'}`,
        );
      }
      const expected = expectedColumnType(field);
      if (expected !== columnType(column)) {
        problems.push(`${field.name}: declares ${expected}, column is ${columnType(column)}`);
      }
    }
    const fieldColumns = new Set(model.fields.map((field) => field.column));
    for (const column of tableColumns) {
      if (!fieldColumns.has(column.column_name)) problems.push(`column ${model.table}.${column.column_name} has no field`);
    }
    expect(problems).toEqual([]);
    expect(model.idColumns, 'primary key').toEqual(primaryKeys.get(model.table));
  });
});

// ---------------------------------------------------------------------------------------------
// Every model written and read back through the generated client, with a value in every field.

type ModelName = Prisma.ModelName;

interface RoundTrip {
  /** The values written, for every scalar field the database lets a client write. */
  data: Record<string, unknown>;
  write(prisma: PrismaClient): Promise<Record<string, unknown>>;
  read(prisma: PrismaClient, written: Record<string, unknown>): Promise<Record<string, unknown>>;
}

const runId = randomUUID();
const partitionId = 'p-0001';
const at = (iso: string) => new Date(iso);
const beyondDoubles = 9_007_199_254_740_993n; // 2^53 + 1: a JS number would lose it
const decimal38 = '12345678901234567890123456789012345678';

const run = {
  runId,
  jobKey: 'job.orders',
  businessKey: '2026-01-31',
  status: 'SUCCESS',
  snapshotScn: decimal38,
  sourceCount: beyondDoubles,
  sourceNullSplitCount: 3n,
  sourceMinSplit: '-99999999999999999999999999999999999999',
  sourceMaxSplit: decimal38,
  expectedPartitionCount: 2_147_483_647,
  successPartitionCount: 1,
  failedPartitionCount: 0,
  extractedCount: 10n,
  stagingCount: 10n,
  targetCount: 10n,
  hdfsRunPath: '/data/job.orders/run',
  stageTableName: 'stage_orders',
  publishToken: randomUUID(),
  publishQueryId: 'hive_20261023070100_4f1c',
  retryOfRunId: runId, // itself: the only run there is, and a self-reference satisfies the foreign key
  versionNo: 7,
  parameters: { window: { from: '2026-01-01', to: '2026-01-31' }, flags: [true, null, 1.5] },
  startedAt: at('2026-01-31T01:00:00.123Z'),
  heartbeatAt: at('2026-01-31T01:05:00.456Z'),
  extractCompletedAt: at('2026-01-31T01:10:00.000Z'),
  publishStartedAt: at('2026-01-31T01:11:00.000Z'),
  publishedAt: at('2026-01-31T01:12:00.000Z'),
  completedAt: at('2026-01-31T01:13:00.000Z'),
  errorStage: 'NONE',
  errorCode: 'NONE',
  errorMessage: 'ünïcødé message',
  cleanedAt: at('2026-02-01T00:00:00.000Z'),
  purgedAt: at('2026-05-01T00:00:00.000Z'),
  idempotencyKey: randomUUID(),
  requestDigest: 'a'.repeat(64),
  createdBy: 'nifi-prod',
} satisfies Prisma.LoadRunUncheckedCreateInput;

const partition = {
  runId,
  partitionId,
  lowerBound: '0',
  upperBound: decimal38,
  upperInclusive: true,
  isNullPartition: false,
  status: 'RUNNING',
  expectedRowCount: beyondDoubles,
  actualRowCount: 5n,
  fragmentCount: 2,
  fileCount: 2,
  byteCount: 1024n,
  attemptCount: 1,
  claimToken: randomUUID(),
  workerNode: 'nifi-node-1',
  claimedBy: 'nifi-prod',
  startedAt: at('2026-01-31T01:01:00.000Z'),
  heartbeatAt: at('2026-01-31T01:02:00.000Z'),
  completedAt: at('2026-01-31T01:03:00.000Z'),
  errorCode: 'E1',
  errorMessage: 'none',
  receivedChunks: 2,
  receivedRows: 5n,
  receivedBytes: 1024n,
  reportedChunkCount: 2,
  chunkCountMismatches: 0,
  createdAt: at('2026-01-31T01:00:30.000Z'),
} satisfies Prisma.LoadPartitionUncheckedCreateInput;

const file = {
  runId,
  partitionId,
  chunkIndex: 0,
  fragmentIdentifier: 'frag-1',
  fragmentCount: 2,
  hdfsPath: `/data/job.orders/run/${partitionId}/part-0000.parquet`,
  recordCount: 3n,
  byteCount: 512n,
  checksum: `sha256:${'b'.repeat(64)}`,
  status: 'VERIFIED',
  writtenAt: at('2026-01-31T01:02:30.000Z'),
  updatedAt: at('2026-01-31T01:02:31.000Z'),
  reportedBy: 'nifi-prod',
} satisfies Prisma.LoadFileUncheckedCreateInput;

const validation = {
  runId,
  stage: 'TARGET',
  metricName: 'row_count',
  expectedValue: '10',
  actualValue: '10',
  tolerance: '0',
  result: 'PASS',
  queryVersion: 'v1',
  details: { sql: 'SELECT count(*) FROM t' },
  measuredAt: at('2026-01-31T01:12:30.000Z'),
} satisfies Prisma.LoadValidationUncheckedCreateInput;

const businessDate = at('2026-10-23T00:00:00.000Z'); // a date column: midnight UTC

// a GATE_READY call, the one kind with a value in the gate's columns (a run's calls have none: ck_load_dispatch_target)
const dispatch = {
  dispatchId: randomUUID(),
  runId: null,
  dispatchType: 'GATE_READY',
  partitionId: null,
  consumer: 'daily_sales',
  businessDate,
  readinessVersion: 2_147_483_647,
  status: 'ACKED',
  attemptCount: 2,
  nextAttemptAt: at('2026-01-31T01:04:00.000Z'),
  lastHttpStatus: 202,
  lastError: 'HTTP 503 on first attempt',
  createdAt: at('2026-01-31T01:03:30.000Z'),
  sentAt: at('2026-01-31T01:03:40.000Z'),
  ackedAt: at('2026-01-31T01:03:50.000Z'),
  deadAt: at('2026-01-31T01:03:55.000Z'),
  cancelledAt: at('2026-01-31T01:03:56.000Z'),
  // an ALERT_WEBHOOK call's (ck_load_dispatch_target keeps them off a GATE_READY one)
  receiver: null,
  alertDedupKey: null,
} satisfies Prisma.LoadDispatchUncheckedCreateInput;

const event = {
  eventId: randomUUID(),
  eventTime: at('2026-01-31T01:02:45.000Z'),
  eventLevel: 'INFO',
  eventName: 'CHUNK_WRITTEN',
  runId,
  jobKey: 'job.orders',
  businessKey: '2026-01-31',
  partitionId,
  chunkIndex: 0,
  processGroup: 'extract',
  processorName: 'PutHDFS',
  processorId: 'a1b2c3',
  nodeId: 'nifi-node-1',
  attemptNo: 1,
  rowCount: 3n,
  byteCount: 512n,
  durationMs: 1234n,
  errorClass: 'NONE',
  errorCode: 'NONE',
  message: 'chunk 0 written',
  details: { offsets: [0, 3] },
  actor: 'nifi-prod',
} satisfies Prisma.LoadEventUncheckedCreateInput;

const observation = {
  jobId: 'dim_customer',
  businessDate,
  attempt: 2_147_483_647,
  runId: 'databricks:881',
  state: 'SUCCEEDED',
  startedAt: at('2026-10-22T22:30:00.000Z'),
  firstObservedAt: at('2026-10-22T22:30:05.000Z'),
  observedAt: at('2026-10-23T01:00:00.000Z'),
  observedBy: 'nifi-prod',
} satisfies Prisma.GateObservationUncheckedCreateInput;

const gate = {
  consumer: dispatch.consumer,
  boundJobKey: 'SALES_DAILY',
  definedAt: at('2026-10-01T09:00:00.000Z'),
  definedBy: 'alice-operator',
  notifyUrl: 'https://reports.example/gates/daily_sales?ü=1',
} satisfies Prisma.GateUncheckedCreateInput;

const requiredJob = {
  consumer: gate.consumer,
  jobId: observation.jobId,
  expectedDaysAfter: 31,
  expectedTime: at('1970-01-01T23:59:00.000Z'), // a time column: the time of day on 1970-01-01 UTC
  expectedTimeZone: 'America/Argentina/Buenos_Aires',
  expectedSince: at('2026-10-01T09:00:00.000Z'),
} satisfies Prisma.GateRequiredJobUncheckedCreateInput;

const readinessDecision = {
  consumer: gate.consumer,
  businessDate,
  version: dispatch.readinessVersion,
  ready: true,
  evidence: [{ jobId: observation.jobId, attempt: observation.attempt, runId: observation.runId, source: 'EXTERNAL' }],
  cause: { source: 'EXTERNAL', jobId: observation.jobId },
  decidedAt: at('2026-10-23T07:00:00.000Z'),
} satisfies Prisma.GateReadinessDecisionUncheckedCreateInput;

const deadlineCheck = {
  jobId: observation.jobId,
  businessDate,
  outcome: 'OBSERVATION_LATE',
  consumer: gate.consumer,
  deadline: at('2026-10-23T21:00:00.000Z'),
  attempt: 2,
  runId: 'databricks:882',
  state: 'RUNNING',
  checkedAt: at('2026-10-23T21:00:30.000Z'),
} satisfies Prisma.GateDeadlineCheckUncheckedCreateInput;

const publication = {
  consumer: gate.consumer,
  businessDate,
  output: { totalCents: 17_500, lines: [{ sku: 'ü', cents: 1 }] },
  outputHash: 'c'.repeat(64),
  publishedBy: 'nifi-prod',
  publishedAt: at('2026-10-23T07:03:00.000Z'),
} satisfies Prisma.GatePublicationUncheckedCreateInput;

const publicationEvidence = {
  consumer: gate.consumer,
  businessDate,
  jobId: observation.jobId,
  attempt: observation.attempt,
  runId: observation.runId,
} satisfies Prisma.GatePublicationEvidenceUncheckedCreateInput;

const publishClaimEvidence = {
  runId,
  jobId: observation.jobId,
  consumer: gate.consumer,
  businessDate,
  publishToken: randomUUID(),
  attempt: 1,
  upstreamRunId: 'databricks:881',
  recordedAt: at('2026-10-23T07:01:00.000Z'),
} satisfies Prisma.GatePublishClaimEvidenceUncheckedCreateInput;

const processInstance = {
  instanceId: randomUUID(),
  role: 'work',
  host: 'etl-01.example',
  pid: 4242,
  version: '0.1.0',
  dispatcher: true,
  sweeper: true,
  startedAt: at('2026-10-23T06:00:00.000Z'),
  lastSeenAt: at('2026-10-23T07:00:00.000Z'),
  lastSweepAt: at('2026-10-23T06:59:30.000Z'),
  stoppedAt: at('2026-10-23T07:00:01.000Z'),
} satisfies Prisma.ProcessInstanceUncheckedCreateInput;

const alertReceiver = {
  name: 'ops-slack',
  registeredAt: at('2026-10-23T06:00:00.000Z'),
} satisfies Prisma.AlertReceiverUncheckedCreateInput;

const alertOccurrence = {
  dedupKey: `DISPATCH_DEAD-${'d'.repeat(40)}`,
  kind: 'DISPATCH_DEAD',
  severity: 'ERROR',
  runId,
  jobKey: 'job.orders',
  businessKey: '2026-01-31 ü',
  status: 'EXTRACTED_VALIDATED',
  dispatchId: dispatch.dispatchId,
  partitionId,
  consumer: gate.consumer,
  message: 'VALIDATE_RUN: max attempts reached: HTTP 503',
  alertAt: at('2026-01-31T01:03:55.000Z'),
  raisedAt: at('2026-01-31T01:04:00.000Z'),
} satisfies Prisma.AlertOccurrenceUncheckedCreateInput;

// In foreign-key order. Keyed by model so a model added to schema.prisma fails the coverage test
// until it gets a round trip here.
const roundTrips: [ModelName, RoundTrip][] = [
  ['LoadRun', { data: run, write: (p) => p.loadRun.create({ data: run }), read: (p) => p.loadRun.findUniqueOrThrow({ where: { runId } }) }],
  [
    'LoadPartition',
    {
      data: partition,
      write: (p) => p.loadPartition.create({ data: partition }),
      read: (p) => p.loadPartition.findUniqueOrThrow({ where: { runId_partitionId: { runId, partitionId } } }),
    },
  ],
  [
    'LoadFile',
    {
      data: file,
      write: (p) => p.loadFile.create({ data: file }),
      read: (p) => p.loadFile.findUniqueOrThrow({ where: { runId_partitionId_chunkIndex: { runId, partitionId, chunkIndex: 0 } } }),
    },
  ],
  [
    'LoadValidation',
    {
      data: validation, // validationId is GENERATED ALWAYS: the database assigns it
      write: (p) => p.loadValidation.create({ data: validation }),
      read: (p, written) => p.loadValidation.findUniqueOrThrow({ where: { validationId: written.validationId as bigint } }),
    },
  ],
  [
    'LoadEvent',
    {
      data: event,
      write: (p) => p.loadEvent.create({ data: event }),
      read: (p) => p.loadEvent.findUniqueOrThrow({ where: { eventId: event.eventId } }),
    },
  ],
  [
    'GateObservation',
    {
      data: observation,
      write: (p) => p.gateObservation.create({ data: observation }),
      read: (p) =>
        p.gateObservation.findUniqueOrThrow({
          where: { jobId_businessDate_attempt: { jobId: observation.jobId, businessDate, attempt: observation.attempt } },
        }),
    },
  ],
  [
    'Gate',
    {
      data: gate,
      write: (p) => p.gate.create({ data: gate }),
      read: (p) => p.gate.findUniqueOrThrow({ where: { consumer: gate.consumer } }),
    },
  ],
  [
    'GateRequiredJob',
    {
      data: requiredJob,
      write: (p) => p.gateRequiredJob.create({ data: requiredJob }),
      read: (p) =>
        p.gateRequiredJob.findUniqueOrThrow({ where: { consumer_jobId: { consumer: gate.consumer, jobId: observation.jobId } } }),
    },
  ],
  [
    'GateReadinessDecision',
    {
      data: readinessDecision,
      write: (p) => p.gateReadinessDecision.create({ data: readinessDecision }),
      read: (p) =>
        p.gateReadinessDecision.findUniqueOrThrow({
          where: { consumer_businessDate_version: { consumer: gate.consumer, businessDate, version: readinessDecision.version } },
        }),
    },
  ],
  [
    'LoadDispatch',
    {
      data: dispatch,
      write: (p) => p.loadDispatch.create({ data: dispatch }),
      read: (p) => p.loadDispatch.findUniqueOrThrow({ where: { dispatchId: dispatch.dispatchId } }),
    },
  ],
  [
    'GateDeadlineCheck',
    {
      data: deadlineCheck,
      write: (p) => p.gateDeadlineCheck.create({ data: deadlineCheck }),
      read: (p) => p.gateDeadlineCheck.findUniqueOrThrow({ where: { jobId_businessDate: { jobId: observation.jobId, businessDate } } }),
    },
  ],
  [
    'GatePublication',
    {
      data: publication,
      write: (p) => p.gatePublication.create({ data: publication }),
      read: (p) => p.gatePublication.findUniqueOrThrow({ where: { consumer_businessDate: { consumer: gate.consumer, businessDate } } }),
    },
  ],
  [
    'GatePublicationEvidence',
    {
      data: publicationEvidence,
      write: (p) => p.gatePublicationEvidence.create({ data: publicationEvidence }),
      read: (p) =>
        p.gatePublicationEvidence.findUniqueOrThrow({
          where: { consumer_businessDate_jobId: { consumer: gate.consumer, businessDate, jobId: observation.jobId } },
        }),
    },
  ],
  [
    'GatePublishClaimEvidence',
    {
      data: publishClaimEvidence,
      write: (p) => p.gatePublishClaimEvidence.create({ data: publishClaimEvidence }),
      read: (p) => p.gatePublishClaimEvidence.findUniqueOrThrow({ where: { runId_jobId: { runId, jobId: observation.jobId } } }),
    },
  ],
  [
    'AlertReceiver',
    {
      data: alertReceiver,
      write: (p) => p.alertReceiver.create({ data: alertReceiver }),
      read: (p) => p.alertReceiver.findUniqueOrThrow({ where: { name: alertReceiver.name } }),
    },
  ],
  [
    'AlertOccurrence',
    {
      data: alertOccurrence,
      write: (p) => p.alertOccurrence.create({ data: alertOccurrence }),
      read: (p) => p.alertOccurrence.findUniqueOrThrow({ where: { dedupKey: alertOccurrence.dedupKey } }),
    },
  ],
  [
    'ProcessInstance',
    {
      data: processInstance,
      write: (p) => p.processInstance.create({ data: processInstance }),
      read: (p) => p.processInstance.findUniqueOrThrow({ where: { instanceId: processInstance.instanceId } }),
    },
  ],
];

function comparable(value: unknown): unknown {
  if (Prisma.Decimal.isDecimal(value)) return (value as Prisma.Decimal).toFixed(); // never exponent notation
  if (value instanceof Date) return value.toISOString();
  return value;
}

function comparableRecord(record: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, comparable(value)]));
}

describe('the generated client', () => {
  let prisma: PrismaClient;
  beforeAll(() => {
    prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: database.url }) });
  });
  afterAll(async () => {
    await prisma?.$disconnect();
  });

  it('has a round trip for every model of schema.prisma, with a value for every writable field', () => {
    expect(roundTrips.map(([model]) => model).sort()).toEqual(models.map((model) => model.name).sort());
    for (const [modelName, roundTrip] of roundTrips) {
      const writable = modelsByName
        .get(modelName)!
        .fields.filter((field) => !field.autoincrement)
        .map((field) => field.name);
      expect(Object.keys(roundTrip.data).sort(), `${modelName} fields`).toEqual(writable.sort());
    }
  });

  it('writes and reads back one row of every model', async () => {
    const done: ModelName[] = [];
    for (const [modelName, roundTrip] of roundTrips) {
      const written = await roundTrip.write(prisma);
      const readBack = await roundTrip.read(prisma, written);
      const fieldNames = modelsByName.get(modelName)!.fields.map((field) => field.name);

      expect(Object.keys(readBack).sort(), `${modelName} columns read`).toEqual([...fieldNames].sort());
      const expected = comparableRecord(roundTrip.data);
      const actual = comparableRecord(Object.fromEntries(Object.keys(roundTrip.data).map((key) => [key, readBack[key]])));
      expect(actual, modelName).toEqual(expected);
      done.push(modelName);
    }
    expect(done.sort()).toEqual(models.map((model) => model.name).sort());
  });
});
