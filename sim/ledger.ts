// What the simulated world knows that the database does not: the plan it sent for each run, what the Hive
// target really holds after a publish, and what the clients were told. The invariants compare both sides.
import type { FlowFile } from './client.js';

/** The simulated #{SOURCE.CHECKSUM.EXPRESSION}: the same rows give the same value at the source, staging and target. */
export const checksumOf = (rows: number) => String(rows * 7);

export interface SimPartition {
  partitionId: string;
  expectedRowCount: number;
  /** How many chunks (files) an extraction of this partition writes. */
  chunkCount: number;
  /** Reissue calls that reached the receiver so far. */
  reissueCalls: number;
}

export interface LastChunkRace {
  waiting: Map<string, () => void>;
  /** Partitions expected at the barrier: the run's non-empty ones. */
  expected: number;
  released: boolean;
  /** Reports that were released together. */
  racers: number;
}

export interface SimRun {
  runId: string;
  /** Index of the business key (0-based) and the run's number for that key (1-based). */
  keyIndex: number;
  runNumber: number;
  jobKey: string;
  businessKey: string;
  hdfsRunPath: string;
  /** PG-10's FlowFile: the job's parameters, the run, the source queries' results. */
  attributes: FlowFile;
  sourceCount: number;
  partitions: Map<string, SimPartition>;
  race: LastChunkRace | undefined;
  /** Rows in the Hive target after an INSERT OVERWRITE that really happened (undefined: never written). */
  targetRows: number | undefined;
  /** PG-40's FlowFile once the API validated the staging table: what an operator feeds PG-60 after a resolution. */
  validated: FlowFile | undefined;
  /** Answers with validationScheduled=true, lost ones included. */
  validationScheduled: number;
  /** Publish tokens that were answered claimed=true. */
  publishClaims: Set<string>;
  /** VALIDATE_RUN calls that reached the receiver so far. */
  validateCalls: number;
  /** A PG-40 flow of the simulator is working on the run (the operator leaves it alone meanwhile). */
  validating: number;
  /** PG-60 was started (once per run). */
  targetValidationStarted: boolean;
}

export interface LateReport {
  runId: string;
  partitionId: string;
  status: number;
  code: string | undefined;
  /** The run's status in a 2xx answer. */
  runStatus: string | undefined;
}

export class Ledger {
  readonly runs = new Map<string, SimRun>();
  /** Per business key: the runs made for it, in order, and how its last one ended. */
  readonly keys = new Map<number, { runIds: string[]; outcome: string }>();
  readonly lateReports: LateReport[] = [];
  /** Stalled owners whose partition was never taken from them within the wait. */
  readonly notReissued: string[] = [];
  readonly crashes: string[] = [];
  /** Runs whose source queries failed (PG-10's failRun). */
  readonly sourceFailures: string[] = [];
  /** Partitions whose extraction failed (PG-20's failPartition). */
  readonly extractFailures: string[] = [];
  /** Runs PG-70 recorded as cleaned (changed: true). */
  readonly cleaned: string[] = [];
  readonly races: LastChunkRace[] = [];
  /** consumer|businessDate → answers with published=true. */
  readonly publications = new Map<string, number>();
  readonly operatorActions = { resolved: 0, resent: 0, cancelled: 0 };
  /** Requests that a flow could not complete (no API within the deadline): the flow stopped there. */
  readonly abandonedFlows: string[] = [];

  run(runId: string): SimRun | undefined {
    return this.runs.get(runId);
  }
}
