// test/fixtures/ledger-at-2efcf01.{sql,json}, made by scripts/make-upgrade-fixture.ts: a ledger as commit
// 2efcf01 left it, and what NiFi knows about its runs (which run is which, the claim tokens it holds).
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

interface RunningPartition {
  claimToken: string;
  chunkCount: number;
  chunksReported: number;
  rowsPerChunk: number;
}

export interface UpgradeFixture {
  commit: string;
  jobKey: string;
  runs: {
    /** Partition 0000 done, the partitions in `running` claimed, the rest PENDING; rows per partition 0000, 0001, …. */
    extracting: { runId: string; businessKey: string; partitionRows: number[]; running: Record<string, RunningPartition> };
    publishUnknown: { runId: string; rows: number };
    /** EXTRACTED_VALIDATED, its VALIDATE_RUN dispatch DEAD. */
    deadDispatch: { runId: string; jobKey: string; dispatchId: string; rows: number };
    success: { runId: string };
    failed: { runId: string };
  };
  /** The consumer requires the external job and jobKey; publishedDate is published, nextDate's runs are in flight. */
  gate: { consumer: string; externalJob: string; publishedDate: string; nextDate: string };
}

const fixturePath = (extension: string) => fileURLToPath(new URL(`../fixtures/ledger-at-2efcf01.${extension}`, import.meta.url));

export async function readUpgradeFixture(): Promise<UpgradeFixture> {
  return JSON.parse(await readFile(fixturePath('json'), 'utf8')) as UpgradeFixture;
}

/** Loads the dump into an empty database: the simple query protocol takes the whole file as one query. */
export async function restoreUpgradeFixture(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(await readFile(fixturePath('sql'), 'utf8'));
  } finally {
    await client.end();
  }
}
