// `load-control grants <role> [--apply]`: what an application role needs for serve and work, and no DDL.
import pg from 'pg';
import { ConfigError } from '../config/config.js';
import { applicationGrants } from '../db/grants.js';
import { asProcess, migrationUrl, type Command } from './process.js';

export const grants: Command = {
  usage: `  grants <role> [--apply]
                        print (or apply, as database.migrationUrl) the grants an application
                        role needs for serve and work: DML and EXECUTE, no DDL`,
  run: (invocation) =>
    asProcess(invocation, async (context) => {
      const { log, args, options } = context;
      const [role] = args;
      if (!role) throw new ConfigError(['usage: load-control grants <role> [--apply]']);
      const client = new pg.Client({ connectionString: await migrationUrl(context), application_name: 'load-control grants' });
      await client.connect();
      try {
        const statements = await applicationGrants(client, role);
        if (options.apply) {
          await client.query(`BEGIN; ${statements.join('\n')} COMMIT;`);
          log.info({ role, statements: statements.length }, 'grants_applied');
        }
        console.log(statements.join('\n'));
      } finally {
        await client.end();
      }
      return 'done';
    }),
};
