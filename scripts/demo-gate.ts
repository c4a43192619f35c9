// npm run demo:gate — the business-date gate article's scenario, against the configured database (DATABASE_URL,
// LC_DATABASE__URL or the file LC_CONFIG names) or, when none is configured, an embedded PostgreSQL under
// .data/demo-postgres. Every invocation uses job and consumer names of its own, so it prints the same four lines
// each time.
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config/config.js';
import { createDb, type Db } from '../src/db/client.js';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/db/embedded.js';
import { migrate } from '../src/db/migrate.js';
import { perform } from '../src/db/operation.js';
import { defineGateOperation } from '../src/domain/gate/define-gate.js';
import { readiness } from '../src/domain/gate/ledger.js';
import { publishOperation } from '../src/domain/gate/publish.js';
import { recordObservationOperation } from '../src/domain/gate/record-observation.js';

const DEMO_DATA_DIR = fileURLToPath(new URL('../.data/demo-postgres', import.meta.url));
const ACTOR = 'demo-gate';
const TODAY = '2026-10-23';
const LAST_THURSDAY = '2026-10-16';

async function scenario(db: Db): Promise<void> {
  const suffix = randomUUID().slice(0, 8);
  const consumer = `daily_sales_${suffix}`;
  const dimensions = [`dim_customer_${suffix}`, `dim_product_${suffix}`];
  await perform(db, defineGateOperation, {
    consumer,
    requiredJobs: dimensions,
    boundJobKey: null,
    notifyUrl: null,
    expectedBy: [],
    actor: ACTOR,
  });

  const succeeded = (jobId: string, businessDate: string, startedAt: string) =>
    perform(db, recordObservationOperation, {
      jobId,
      businessDate,
      attempt: 1,
      runId: `${jobId}-${businessDate}-1`,
      state: 'SUCCEEDED',
      startedAt: new Date(startedAt),
      actor: ACTOR,
    });

  // Both dimension jobs finish cleanly at 07:00 UTC today — as backfills of last Thursday's data.
  for (const jobId of dimensions) await succeeded(jobId, LAST_THURSDAY, `${TODAY}T07:00:00Z`);
  const afterBackfill = await readiness(db.prisma, consumer, TODAY);
  console.log(`Backfill completed today: ${afterBackfill.ready}`);

  // Today's own runs: one of them started before midnight, in New York.
  await succeeded(dimensions[0]!, TODAY, '2026-10-22T23:40:00-04:00');
  await succeeded(dimensions[1]!, TODAY, `${TODAY}T05:15:00+00:00`);
  const afterToday = await readiness(db.prisma, consumer, TODAY);
  console.log(`Required business date ready: ${afterToday.ready}`);

  const output = { totalCents: 17_500 };
  const first = await perform(db, publishOperation, { consumer, businessDate: TODAY, output, actor: ACTOR });
  console.log(`First publication: ${first.published}`);
  const retried = await perform(db, publishOperation, { consumer, businessDate: TODAY, output, actor: ACTOR });
  console.log(`Same publication retried: ${retried.published}`);
}

async function main(): Promise<void> {
  const configured = loadConfig().database.url;
  let embedded: EmbeddedPostgresHandle | undefined;
  try {
    if (!configured) embedded = await startEmbeddedPostgres({ dataDir: DEMO_DATA_DIR });
    const url = configured || embedded!.url;
    await migrate(url);
    const db = createDb(url, { poolSize: 2 });
    try {
      await scenario(db);
    } finally {
      await db.close();
    }
  } finally {
    await embedded?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
