// `load-control serve` (the API and the console) and `load-control start` (the same with the worker, migrated
// first, on an embedded PostgreSQL when no database.url is set, with development tokens).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateToken, tokenConfigEntry } from '../auth/tokens.js';
import { describeConfig, type Role } from '../config/config.js';
import { PROCESS_LISTENER_NAME, startListener } from '../db/listener.js';
import { perform } from '../db/operation.js';
import { applyConfiguredPoolsOperation } from '../domain/pools/configured-pools.js';
import { startRealtime } from '../realtime/realtime.js';
import { createApiServer } from '../server/app.js';
import { startExecutionLane } from '../server/execution-lane.js';
import { createApiMetrics } from '../server/metrics.js';
import {
  asProcess,
  DATA_DIR,
  openServiceDatabase,
  startProcessHeartbeat,
  startWorkerLoops,
  type Command,
  type CommandContext,
} from './process.js';

const DEV_TOKENS_FILE = join(DATA_DIR, 'dev-tokens.json');
const DEV_TOKEN_ROLES: Array<{ name: string; roles: Role[] }> = [
  { name: 'dev-nifi', roles: ['nifi'] },
  { name: 'dev-operator', roles: ['operator', 'nifi'] },
  { name: 'dev-viewer', roles: ['viewer'] },
];

/** Development tokens for the embedded database: made on first start, kept under .data/, printed each start. */
function developmentTokens(): Array<{ name: string; roles: Role[]; token: string }> {
  if (existsSync(DEV_TOKENS_FILE)) return JSON.parse(readFileSync(DEV_TOKENS_FILE, 'utf8'));
  const tokens = DEV_TOKEN_ROLES.map((t) => ({ ...t, token: generateToken() }));
  mkdirSync(DATA_DIR, { recursive: true });
  writeFileSync(DEV_TOKENS_FILE, JSON.stringify(tokens, null, 2), { mode: 0o600 });
  return tokens;
}

async function runApi(context: CommandContext, { start }: { start: boolean }): Promise<'running'> {
  const { log, shutdown } = context;
  const { db, url, directUrl, embedded } = await openServiceDatabase(context, { start, sessions: false });
  let config = context.config;
  let devTokens: ReturnType<typeof developmentTokens> = [];
  if (embedded && config.auth.tokens.length === 0) {
    devTokens = developmentTokens();
    config = { ...config, auth: { ...config.auth, tokens: devTokens.map((t) => tokenConfigEntry(t.name, t.roles, t.token)) } };
  }
  log.info({ config: describeConfig(config) }, 'config');
  if (config.sources.pools.length > 0) {
    const { changed } = await perform(db, applyConfiguredPoolsOperation, config.sources.pools);
    log.info({ pools: config.sources.pools.length, changed }, 'source pools applied');
  }
  const metrics = createApiMetrics();
  const readinessChecks: Array<() => boolean> = [];
  // one LISTEN connection for the whole process: realtime's channels and, with `start`, the dispatcher's
  const listener = startListener({ url: directUrl, log, applicationName: PROCESS_LISTENER_NAME, timeouts: config.database });
  shutdown.close('listen', () => listener.close());
  const worker = start ? startWorkerLoops(context, { config, db, registry: metrics.registry, listener }) : null;
  if (worker) readinessChecks.push(worker.listening);
  startProcessHeartbeat(context, { role: start ? 'start' : 'serve', db, registry: metrics.registry, worker });

  // subscriptions are fed by the process's LISTEN connection; its health is part of /readyz
  const realtime = startRealtime({ url, config, log, listener });
  shutdown.close('realtime', () => realtime.close());
  // while the load balancer takes this process out of rotation (server.shutdownDelay), it serves as before
  const { shutdownDelay } = config.server;
  shutdown.drain('subscriptions', async () => {
    await sleep(shutdownDelay);
    realtime.endSubscriptions();
  });
  const lane =
    config.server.executionThreads > 0
      ? startExecutionLane({ threads: config.server.executionThreads, config, databaseUrl: url, log })
      : undefined;
  if (lane) shutdown.close('execution threads', () => lane.close());
  const devTokensFile = devTokens.length ? relative(process.cwd(), DEV_TOKENS_FILE) || DEV_TOKENS_FILE : null;
  const api = createApiServer({ config, db, log, metrics, realtime, readinessChecks, lane, devTokensFile });
  const { port } = await api.listen(config.server.port, config.server.host);
  shutdown.drain(
    'api',
    () => api.drain(shutdownDelay),
    () => ({ requests: api.open() }),
  );
  process.on('SIGHUP', () => {
    if (config.server.tls) api.reloadTls();
    api.reloadTokens();
  });
  const host = config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host;
  const base = `${api.protocol}://${host}:${port}`;
  log.info({ url: base, graphql: `${base}/graphql` }, 'api_started');

  console.log(`\nLoad Control is up.\n  GraphQL + GraphiQL: ${base}/graphql\n  console:            ${base}/`);
  for (const t of devTokens) console.log(`  token ${t.name.padEnd(13)} (${t.roles.join(', ')}): ${t.token}`);
  if (devTokensFile) console.log(`  (kept in ${devTokensFile}; \`npm run demo\` fills the console with runs of every kind)`);
  console.log('  Ctrl-C stops everything.\n');
  return 'running';
}

export const start: Command = {
  usage: `  start                 migrate, then run the API, the worker and the console in one process
                        (no DATABASE_URL: an embedded PostgreSQL under .data/ with development tokens)`,
  run: (invocation) => asProcess(invocation, (context) => runApi(context, { start: true })),
};

export const serve: Command = {
  usage: '  serve                 the API and the console',
  run: (invocation) => asProcess(invocation, (context) => runApi(context, { start: false })),
};
