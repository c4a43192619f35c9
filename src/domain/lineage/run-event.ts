// One OpenLineage RunEvent (spec 2-0-2, facets as openlineage-java 1.46.0 ships them) for one LINEAGE_EVENT call:
// composed when it is sent, from the ledger's facts about its run (the lease reads them) and the deployment's
// lineage settings. Every fact it uses is fixed by the event it describes (a START shows what the manifest said, an
// end what the run ended with), so each retry of a call posts the same body.
import { calendarDate } from '../gate/business-date.js';
import type { LineageEventType, RunStatus } from '../states.js';

const RUN_EVENT_SCHEMA = 'https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent';
const FACETS = 'https://openlineage.io/spec/facets';
/** Load Control's own facets: their JSON schemas are schema/openlineage/, whose $id these are. */
const OWN_FACETS = 'urn:load-control:openlineage:facets:1-0-0';
const RUN_FACET = 'loadControl_run';
const PARTITION_FACET = 'loadControl_partition';

/** Where one job reads and writes, as lineage.jobs names it (OpenLineage's naming conventions). */
interface LineageJob {
  /** oracle://host:port/SERVICE: the namespace oracle://host:port, the service name's prefix on the table. */
  source: string | null;
  /** SCHEMA.TABLE, when the run's parameters do not say it (sourceTable, as the NiFi kit's createRun sends it). */
  sourceTable: string | null;
  /** hive://host:port (the metastore). */
  target: string | null;
  /** database.table. */
  targetTable: string | null;
  /** The Hive partition column the business key is the value of. */
  partitionColumn: string;
}

/** What the dispatcher needs of lineage.*. */
export interface LineageTarget {
  url: string;
  namespace: string;
  producer: string;
  headers: Record<string, string>;
  jobs: Record<string, LineageJob>;
}

/** The ledger's facts one event is composed from (the lease reads them: src/domain/dispatch/lease.ts). */
export interface LeasedLineage {
  eventType: LineageEventType;
  /** When the move that made the event committed (the row's created_at), ISO-8601 UTC. */
  eventTime: string;
  jobKey: string;
  businessKey: string;
  status: RunStatus;
  snapshotScn: string | null;
  sourceCount: number | null;
  extractedCount: number;
  targetCount: number | null;
  parameters: Record<string, unknown>;
  errorStage: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  publishQueryId: string | null;
  /** The backfill that started the run (its START_LOAD call), if one did: the run's parent. */
  backfillId: string | null;
  /** The NiFi flow that created the run, as PG-10 sent its registry coordinates (createRun). */
  flowRegistry: string | null;
  flowBucket: string | null;
  flowId: string | null;
  flowVersion: string | null;
  validations: Array<{ stage: string; metricName: string; result: 'PASS' | 'FAIL' | 'WARN' }>;
}

type Facet = Record<string, unknown>;
type Facets = Record<string, Facet>;

const ENDS: readonly LineageEventType[] = ['COMPLETE', 'FAIL', 'ABORT'];

function nextDay(date: string): string {
  const next = new Date(`${date}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  return next.toISOString().slice(0, 10);
}

/** oracle://host:port/SERVICE → the dataset namespace and the service name. */
function oracleSource(source: string): { namespace: string; service: string } | null {
  const parsed = URL.canParse(source) ? new URL(source) : null;
  const service = parsed?.pathname.replace(/^\/+/, '') ?? '';
  if (parsed?.protocol !== 'oracle:' || !parsed.hostname || !parsed.port || !service) return null;
  return { namespace: `oracle://${parsed.hostname}:${parsed.port}`, service };
}

/** A backfill is a job of its own to a catalog: the parent of every run it started. */
function backfillJobName(jobKey: string): string {
  return `${jobKey}.backfill`;
}

/**
 * Where the NiFi flow that created the run is versioned, as a URI: its registry client, bucket, flow id and version
 * (NiFi's registry has no public URL scheme of its own; a catalog shows this as the job's source location).
 */
function flowUrl(l: Pick<LeasedLineage, 'flowRegistry' | 'flowBucket' | 'flowId' | 'flowVersion'>): string {
  const part = (value: string | null) => encodeURIComponent(value ?? '-');
  const version = l.flowVersion === null ? '' : `/versions/${part(l.flowVersion)}`;
  return `nifi-registry://${part(l.flowRegistry)}/buckets/${part(l.flowBucket)}/flows/${part(l.flowId)}${version}`;
}

function definedFacets(entries: Array<[string, Facet | null]>): Facets {
  return Object.fromEntries(entries.filter((entry): entry is [string, Facet] => entry[1] !== null));
}

/** The RunEvent a LINEAGE_EVENT call posts; its run id is the Load Control run id. */
function runEvent(
  target: Pick<LineageTarget, 'namespace' | 'producer' | 'jobs'>,
  runId: string,
  l: LeasedLineage,
): Record<string, unknown> {
  const facet = (schema: string, name: string, fields: Facet): Facet => ({
    _producer: target.producer,
    _schemaURL: `${schema}#/$defs/${name}`,
    ...fields,
  });
  const standard = (version: string, name: string, fields: Facet) => facet(`${FACETS}/${version}/${name}.json`, name, fields);
  const own = (name: string, fields: Facet) => facet(`${OWN_FACETS}:${name}.json`, name, fields);
  const ended = ENDS.includes(l.eventType);
  const job = target.jobs[l.jobKey];

  const date = calendarDate(l.businessKey);
  const runFacets = definedFacets([
    [
      'nominalTime',
      date === null
        ? null
        : standard('1-0-1', 'NominalTimeRunFacet', { nominalStartTime: `${date}T00:00:00Z`, nominalEndTime: `${nextDay(date)}T00:00:00Z` }),
    ],
    [
      'errorMessage',
      l.eventType === 'FAIL'
        ? standard('1-0-1', 'ErrorMessageRunFacet', {
            message: [l.errorStage, l.errorCode, l.errorMessage].filter(Boolean).join(': ') || `run ended in ${l.status}`,
            programmingLanguage: 'TypeScript',
          })
        : null,
    ],
    [
      'externalQuery',
      l.eventType !== 'START' && l.publishQueryId && job?.target
        ? standard('1-0-2', 'ExternalQueryRunFacet', { externalQueryId: l.publishQueryId, source: job.target })
        : null,
    ],
    [
      'parent',
      l.backfillId === null
        ? null
        : standard('1-1-0', 'ParentRunFacet', {
            run: { runId: l.backfillId },
            job: { namespace: target.namespace, name: backfillJobName(l.jobKey) },
          }),
    ],
    [
      RUN_FACET,
      own('LoadControlRunFacet', {
        businessKey: l.businessKey,
        ...(l.eventType === 'START' ? {} : { status: l.status }),
        ...(l.eventType === 'RUNNING' ? { resolvedFrom: 'PUBLISH_UNKNOWN' } : {}),
        ...(ended && l.errorStage ? { errorStage: l.errorStage } : {}),
        ...(ended && l.errorCode ? { errorCode: l.errorCode } : {}),
      }),
    ],
  ]);

  const oracle = job?.source ? oracleSource(job.source) : null;
  const sourceTable =
    typeof l.parameters.sourceTable === 'string' && l.parameters.sourceTable ? l.parameters.sourceTable : job?.sourceTable;
  const inputs =
    oracle && sourceTable
      ? [
          {
            namespace: oracle.namespace,
            name: `${oracle.service}.${sourceTable}`,
            facets: definedFacets([
              ['dataSource', standard('1-0-1', 'DatasourceDatasetFacet', { name: oracle.namespace, uri: oracle.namespace })],
              [
                'version',
                l.snapshotScn === null ? null : standard('1-0-1', 'DatasetVersionDatasetFacet', { datasetVersion: l.snapshotScn }),
              ],
            ]),
            inputFacets: definedFacets([
              [
                'dataQualityMetrics',
                l.sourceCount === null
                  ? null
                  : standard('1-0-3', 'DataQualityMetricsInputDatasetFacet', { rowCount: l.sourceCount, columnMetrics: {} }),
              ],
              ['inputStatistics', ended ? standard('1-0-0', 'InputStatisticsInputDatasetFacet', { rowCount: l.extractedCount }) : null],
              // OpenLineage puts data-quality results on the dataset read (an input facet): the load's validation
              // gates, from the source's counts to the target's
              [
                'dataQualityAssertions',
                ended && l.validations.length > 0
                  ? standard('1-0-2', 'DataQualityAssertionsDatasetFacet', {
                      assertions: l.validations.map((v) => ({ assertion: `${v.stage}.${v.metricName}`, success: v.result !== 'FAIL' })),
                    })
                  : null,
              ],
            ]),
          },
        ]
      : [];

  const outputs =
    job?.target && job.targetTable
      ? [
          {
            namespace: job.target,
            name: job.targetTable,
            facets: definedFacets([
              ['dataSource', standard('1-0-1', 'DatasourceDatasetFacet', { name: job.target, uri: job.target })],
              [PARTITION_FACET, own('LoadControlPartitionDatasetFacet', { column: job.partitionColumn, value: l.businessKey })],
            ]),
            outputFacets: definedFacets([
              [
                'outputStatistics',
                l.eventType === 'COMPLETE' && l.targetCount !== null
                  ? standard('1-0-2', 'OutputStatisticsOutputDatasetFacet', { rowCount: l.targetCount })
                  : null,
              ],
            ]),
          },
        ]
      : [];

  return {
    eventType: l.eventType,
    eventTime: l.eventTime,
    producer: target.producer,
    schemaURL: RUN_EVENT_SCHEMA,
    run: { runId, facets: runFacets },
    job: {
      namespace: target.namespace,
      name: l.jobKey,
      facets: definedFacets([
        ['jobType', standard('2-0-3', 'JobTypeJobFacet', { processingType: 'BATCH', integration: 'LOAD_CONTROL', jobType: 'LOAD' })],
        [
          'sourceCodeLocation',
          l.flowId === null
            ? null
            : standard('1-1-0', 'SourceCodeLocationJobFacet', {
                type: 'nifi-registry',
                url: flowUrl(l),
                ...(l.flowVersion === null ? {} : { version: l.flowVersion }),
              }),
        ],
      ]),
    },
    inputs,
    outputs,
  };
}

/** The POST of one LINEAGE_EVENT call: Marquez's POST /api/v1/lineage shape, the call's id the same on every retry. */
export function lineageRequest(
  target: LineageTarget,
  dispatchId: string,
  runId: string,
  lineage: LeasedLineage,
): { url: string; headers: Record<string, string>; body: Record<string, unknown> } {
  return {
    url: target.url,
    headers: { ...target.headers, 'Content-Type': 'application/json', 'X-Dispatch-Id': dispatchId },
    body: runEvent(target, runId, lineage),
  };
}
