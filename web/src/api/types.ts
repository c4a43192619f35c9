// Shapes of what the console's operations select (schema/schema.graphql is the source).

export interface StatusCount {
  status: string;
  count: number;
}

export interface ProcessInstance {
  instanceId: string;
  role: 'serve' | 'work' | 'start';
  host: string;
  pid: number;
  version: string;
  dispatcher: boolean;
  sweeper: boolean;
  state: 'LIVE' | 'STALE' | 'STOPPED';
  startedAt: string;
  lastSeenAt: string;
  lastSweepAt: string | null;
}

/** An alert posted to a receiver of alerts.webhooks (an ALERT_WEBHOOK call). */
export interface AlertWebhookCall {
  dispatchId: string;
  receiver: string;
  status: string;
  attemptCount: number;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: string;
  ackedAt: string | null;
  deadAt: string | null;
  occurrence: {
    dedupKey: string;
    kind: string;
    severity: 'ERROR' | 'WARN';
    runId: string | null;
    jobKey: string | null;
    businessKey: string | null;
  };
}

export interface RunRow {
  runId: string;
  jobKey: string;
  businessKey: string;
  status: string;
  expectedPartitionCount: number | null;
  successPartitionCount: number;
  failedPartitionCount: number;
  sourceCount: number | null;
  extractedCount: number;
  stagingCount: number | null;
  targetCount: number | null;
  startedAt: string;
  heartbeatAt: string;
  completedAt: string | null;
  errorCode: string | null;
}

export interface Partition {
  partitionId: string;
  status: string;
  expectedRowCount: number;
  actualRowCount: number | null;
  receivedChunks: number;
  receivedRows: number;
  reportedChunkCount: number | null;
  attemptCount: number;
  workerNode: string | null;
  heartbeatAt: string | null;
  errorCode: string | null;
  errorMessage: string | null;
}

export interface Dispatch {
  dispatchId: string;
  dispatchType: string;
  partitionId: string | null;
  status: string;
  attemptCount: number;
  createdAt: string;
  sentAt: string | null;
  ackedAt: string | null;
  deadAt: string | null;
  lastHttpStatus: number | null;
  lastError: string | null;
}

interface Metric {
  stage: string;
  metricName: string;
  queryVersion: string;
  expectedValue: string | null;
  actualValue: string | null;
  tolerance: string | null;
  result: string;
  measuredAt: string;
}

interface RunEvent {
  eventId: string;
  eventTime: string;
  level: string;
  name: string;
  partitionId: string | null;
  processGroup: string | null;
  errorCode: string | null;
  message: string | null;
  actor: string | null;
}

export interface RunDetail extends RunRow {
  snapshotScn: string | null;
  hdfsRunPath: string | null;
  stageTable: string | null;
  errorStage: string | null;
  errorMessage: string | null;
  extractCompletedAt: string | null;
  publishStartedAt: string | null;
  publishedAt: string | null;
  cleanedAt: string | null;
  /** Set once ledger retention deleted the run's partitions, metrics, dispatches and events. */
  purgedAt: string | null;
  partitionCounts: StatusCount[];
  partitions: Partition[];
  dispatches: Dispatch[];
  metrics: Metric[];
  events: RunEvent[];
}

export interface Alert {
  kind: string;
  severity: string;
  runId: string | null;
  jobKey: string | null;
  businessKey: string | null;
  status: string | null;
  at: string | null;
  message: string | null;
  dispatchId: string | null;
  partitionId: string | null;
}

export interface MonitorSummary {
  serverTime: string;
  activeRuns: StatusCount[];
  recentRuns: StatusCount[];
  recentWindowHours: number;
  dispatches: StatusCount[];
  cleanupDue: number;
  alerts: Alert[];
}

export interface Gate {
  consumer: string;
  requiredJobs: string[];
  boundJobKey: string | null;
}

interface JobReadiness {
  jobId: string;
  ready: boolean;
  reason: string | null;
  attempt: number | null;
  state: string | null;
  runId: string | null;
  latest: { source: string; startedAt: string } | null;
  expectedBy: { text: string } | null;
  deadline: string | null;
  deadlineOutcome: string | null;
}

interface Evidence {
  jobId: string;
  attempt: number;
  runId: string;
}

export interface Readiness {
  consumer: string;
  businessDate: string;
  gateDefined: boolean;
  ready: boolean;
  jobs: JobReadiness[];
  decision: { version: number; ready: boolean; decidedAt: string; evidence: Evidence[] } | null;
}

export interface GateDispatch {
  dispatchId: string;
  businessDate: string;
  version: number;
  status: string;
  attemptCount: number;
  lastHttpStatus: number | null;
  lastError: string | null;
  createdAt: string;
  ackedAt: string | null;
  deadAt: string | null;
}

export interface GateDetail extends Gate {
  notifyUrl: string | null;
  definedAt: string;
  definedBy: string;
  expectedBy: Array<{ jobId: string; text: string }>;
  dispatches: GateDispatch[];
}

export interface Attempt {
  attempt: number;
  runId: string;
  state: string;
  source: string;
  startedAt: string;
}

export interface AuditedPublication {
  businessDate: string;
  publishedAt: string;
  publishedBy: string;
  outputHash: string;
  evidence: Array<Evidence & { attempts: Attempt[] }>;
}

export interface Publication {
  publishedAt: string;
  publishedBy: string;
  outputHash: string;
  evidence: Array<{ jobId: string; attempt: number; runId: string }>;
}
