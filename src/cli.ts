import './production-mode.js';
import { parseArgs } from 'node:util';
import { compact } from './commands/compact.js';
import { grants } from './commands/grants.js';
import { importArchive } from './commands/import-archive.js';
import { migrate } from './commands/migrate.js';
import { isJobCommand, JOB_USAGE, runJobCommand } from './commands/backfill-commands.js';
import { isOperatorCommand, OPERATOR_USAGE, runOperatorCommand } from './commands/operator.js';
import type { Command } from './commands/process.js';
import { purge } from './commands/purge.js';
import { serve, start } from './commands/serve.js';
import { token } from './commands/token.js';
import { work } from './commands/work.js';
import { ConfigError } from './config/config.js';

const COMMANDS: Record<string, Command> = {
  start,
  serve,
  work,
  migrate,
  grants,
  token,
  purge,
  compact,
  'import-archive': importArchive,
};

const USAGE = `usage: load-control <command> [--config PATH]

commands:
${Object.values(COMMANDS)
  .map((command) => command.usage)
  .join('\n')}

${OPERATOR_USAGE}

${JOB_USAGE}`;

async function main(argv: string[]): Promise<void> {
  // the operator's commands talk to the API, not the database: no configuration file, no connection
  if (isOperatorCommand(argv[0])) {
    process.exitCode = await runOperatorCommand(argv, { out: console.log, err: console.error, env: process.env });
    return;
  }
  if (isJobCommand(argv[0])) {
    process.exitCode = await runJobCommand(argv, { out: console.log, err: console.error, env: process.env });
    return;
  }
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      'metrics-port': { type: 'string' },
      apply: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      before: { type: 'string' },
      'dry-run': { type: 'boolean' },
      table: { type: 'string', multiple: true },
      export: { type: 'string' },
      schema: { type: 'string' },
    },
    allowPositionals: true,
  });
  const [name, ...args] = positionals;
  if (values.help || !name) {
    console.log(USAGE);
    return;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) {
    console.error(USAGE);
    process.exitCode = 2;
    return;
  }
  await command.run({ name, args, options: values });
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(error instanceof ConfigError ? 2 : 1);
});
