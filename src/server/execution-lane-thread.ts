// One execution thread (see execution-lane.ts): a Yoga of its own over a database pool of its own; Piscina calls
// the default export once per request. With tracing, the thread exports its own spans (an SDK and exporter per
// thread): a request's spans here are children of its server span on the main thread, whose traceparent comes
// with the request.
import { BroadcastChannel, threadId, workerData } from 'node:worker_threads';
import { behindTransactionPooler, createDb } from '../db/client.js';
import { inTraceparent, startTracing } from '../tracing/tracing.js';
import type { LaneMessage, LaneRequest, LaneResponse, LaneThreadData } from './execution-lane.js';
import { createGraphQLServer } from './graphql-server.js';
import { createLogger } from '../logging/logger.js';
import { createApiMetrics } from './metrics.js';

const { config, databaseUrl, channel: channelName } = workerData as LaneThreadData;
const log = createLogger(config.logging, 'serve').child({ thread: threadId });
// not a top-level await: tsx, loading this module from the sources, cannot load one that has it in a thread
const tracingStarted = startTracing(config.tracing, { role: 'serve execution thread', log }).catch((error: unknown) => {
  log.error({ err: error }, 'tracing_not_started');
  return null;
});
const db = createDb(databaseUrl, {
  poolSize: config.database.poolSize,
  timeouts: config.database,
  applicationName: `load-control execution thread ${threadId}`,
  transactionPooler: behindTransactionPooler(config),
});
const metrics = createApiMetrics({ processMetrics: false });
const yoga = createGraphQLServer({ config, db, log, metrics, realtime: null });

const channel = new BroadcastChannel(channelName);
channel.onmessage = async (event) => {
  const message = (event as { data: LaneMessage }).data;
  if (message.type === 'metrics') {
    // getMetricsAsJSON() holds functions, which cannot be posted
    const plain = JSON.parse(JSON.stringify(await metrics.registry.getMetricsAsJSON())) as object[];
    channel.postMessage({ type: 'metrics-answer', id: message.id, thread: threadId, metrics: plain } satisfies LaneMessage);
  } else if (message.type === 'close') {
    await db.close();
    await (await tracingStarted)?.shutdown();
    channel.postMessage({ type: 'closed', id: message.id, thread: threadId } satisfies LaneMessage);
    channel.close();
  }
};
void tracingStarted.then(() => channel.postMessage({ type: 'ready', thread: threadId } satisfies LaneMessage));

/** What a request taken up after its answerBy gets: nothing, since the main thread answered it 503 already. */
const ANSWERED_ALREADY: LaneResponse = { status: 503, headers: [], body: new Uint8Array() };

export default async function execute(request: LaneRequest): Promise<LaneResponse> {
  if (request.answerBy !== undefined && Date.now() > request.answerBy) return ANSWERED_ALREADY;
  const response = await inTraceparent(request.traceparent, () =>
    yoga.fetch(
      `http://execution-thread${request.url}`,
      { method: request.method, headers: request.headers, body: request.body },
      { actor: request.actor },
    ),
  );
  return { status: response.status, headers: [...response.headers], body: new Uint8Array(await response.arrayBuffer()) };
}
