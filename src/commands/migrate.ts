// `load-control migrate`: the schema changes of this release, as database.migrationUrl.
import { migrate as applyMigrations } from '../db/migrate.js';
import { asProcess, migrationUrl, type Command } from './process.js';

export const migrate: Command = {
  usage: `  migrate               apply prisma/migrations and prisma/functions (as database.migrationUrl,
                        default database.url); serve and work refuse a database that lacks them`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { log } = context;
      const { applied } = await applyMigrations(await migrationUrl(context), { log: (m) => log.info(m) });
      log.info({ applied }, 'migrated');
      return 'done';
    }),
};
