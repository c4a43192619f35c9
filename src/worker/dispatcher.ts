import { type Attributes, SpanKind } from '@opentelemetry/api';
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_URL_FULL,
} from '@opentelemetry/semantic-conventions';
import { consolePublicUrl, type Config } from '../config/config.js';
import type { Db } from '../db/client.js';
import { startListener, type Listener } from '../db/listener.js';
import { perform } from '../db/operation.js';
import {
  decideDelivery,
  deferDispatchOperation,
  markDeadOperation,
  markReceivedOperation,
  type DeliveryAttempt,
  type DeliveryDecision,
} from '../domain/dispatch/deliver.js';
import {
  cancelUnwantedDispatchesOperation,
  leaseDispatchesOperation,
  releaseLeasesOperation,
  type LeasedAlert,
  type LeasedDecision,
  type LeasedDispatch,
} from '../domain/dispatch/lease.js';
import { airflowTokenUrl, credentialFor } from '../domain/dispatch/gate-ready-request.js';
import { dispatchRequest } from '../domain/dispatch/request.js';
import { DISPATCH_CHANNEL } from '../db/channels.js';
import type { Logger } from '../logging/logger.js';
import { currentTraceparent, failSpan, inSpan, LC_ATTRIBUTES } from '../tracing/tracing.js';
import type { WorkerMetrics } from './metrics.js';
import { createAirflowTokens } from './airflow-tokens.js';
import { createReceiverClient } from './http-post.js';
import { createPollLoop } from './poll-loop.js';

const DISPATCHER_ACTOR = 'dispatcher';
export const LISTEN_APPLICATION_NAME = 'load-control-dispatcher';

const MAX_ERROR_BODY = 2000;

export interface DispatcherOptions {
  config: Config;
  db: Db;
  log: Logger;
  metrics: WorkerMetrics;
  /**
   * The process's LISTEN connection, shared with realtime (`load-control start`); without it the
   * dispatcher opens one of its own, named LISTEN_APPLICATION_NAME in pg_stat_activity.
   */
  listener?: Listener;
}

export interface Dispatcher {
  /** Leases and sends until nothing is due; returns how many calls it made. */
  dispatchOnce(): Promise<number>;
  /** LISTEN for wake-ups and run passes until stopped: on a wake-up, else every dispatch.pollInterval. */
  start(): void;
  /**
   * Lets the batch on the wire finish, gives back the leases of a batch leased but not sent, then closes
   * its own LISTEN connection (not a shared one).
   */
  stop(): Promise<void>;
  /** The calls on the wire, if any: what a stop still waits for. */
  sending(): { dispatchIds: string[]; forMs: number } | null;
  /** The LISTEN connection is up. */
  listening(): boolean;
  /** Re-reads nifi.tls's files (SIGHUP); a file that will not do is logged and the old ones stay. */
  reloadTls(): boolean;
}

interface Delivery {
  d: LeasedDispatch;
  decision: DeliveryDecision;
  durationMs: number;
}

/** What a delivery's span says of the call: where it goes and which run, partition, job and dispatch it is about. */
function deliveryAttributes(d: LeasedDispatch, url: string): Attributes {
  const target = new URL(url);
  return {
    [ATTR_HTTP_REQUEST_METHOD]: 'POST',
    [ATTR_SERVER_ADDRESS]: target.hostname,
    [ATTR_SERVER_PORT]: Number(target.port) || (target.protocol === 'https:' ? 443 : 80),
    // an alert webhook's path may be its secret (Slack's are): its spans name the origin only
    [ATTR_URL_FULL]: d.alert ? target.origin : `${target.origin}${target.pathname}`,
    ...(d.alert ? { [LC_ATTRIBUTES.alertReceiver]: d.alert.receiver } : {}),
    [LC_ATTRIBUTES.dispatchId]: d.dispatchId,
    [LC_ATTRIBUTES.dispatchType]: d.dispatchType,
    [LC_ATTRIBUTES.dispatchAttempt]: d.attempt,
    ...(d.runId ? { [LC_ATTRIBUTES.runId]: d.runId } : {}),
    ...(d.partitionId ? { [LC_ATTRIBUTES.partitionId]: d.partitionId } : {}),
    ...(d.jobKey ? { [LC_ATTRIBUTES.jobKey]: d.jobKey } : {}),
  };
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return `${error.name}: ${error.message}${cause}`;
}

/**
 * The outbox's delivery loop (ref §5.1): at least once, confirmed only by NiFi's ACK. Without nifi.receiverUrl it
 * delivers the gates', alerts' and lineage calls, and NiFi's wait in the outbox for a worker that has one.
 */
export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { config, db, metrics } = options;
  const receiverUrl = config.nifi.receiverUrl ?? null;
  const log = options.log.child({ component: 'dispatcher' });
  const policy = config.dispatch;
  const { lineage } = config;
  const targets = {
    receiverUrl,
    alertWebhooks: config.alerts.webhooks,
    gateCredentials: config.gates.credentials,
    consoleUrl: consolePublicUrl(config),
    lineage: lineage.enabled && lineage.url ? { ...lineage, url: lineage.url } : null,
  };
  const receivers = { alertReceivers: config.alerts.webhooks.map((w) => w.name), lineage: targets.lineage !== null };
  const nifi = receiverUrl !== null;
  const receiver = createReceiverClient(config.nifi.tls, log);
  // gates' receivers, alert webhooks and the lineage endpoint are not NiFi: their certificates are checked against
  // Node's CAs, and no client certificate
  const otherReceivers = createReceiverClient(undefined, log);
  const airflowTokens = createAirflowTokens(otherReceivers, config.nifi.timeoutSeconds * 1000);
  let stopping = false;

  const childLog = (d: {
    runId: string | null;
    dispatchId: string;
    partitionId: string | null;
    decision?: LeasedDecision | null;
    alert?: LeasedAlert | null;
  }) =>
    log.child({
      runId: d.runId ?? undefined,
      dispatchId: d.dispatchId,
      partitionId: d.partitionId ?? undefined,
      ...(d.decision ? { consumer: d.decision.consumer, businessDate: d.decision.businessDate, version: d.decision.version } : {}),
      ...(d.alert ? { receiver: d.alert.receiver, dedupKey: d.alert.occurrence.dedupKey } : {}),
    });

  /** One call, in a client span whose traceparent the receiver gets. */
  function call(d: LeasedDispatch): Promise<DeliveryAttempt> {
    const request = dispatchRequest(targets, d);
    return inSpan(
      `POST ${d.dispatchType}`,
      () => ({ kind: SpanKind.CLIENT, attributes: deliveryAttributes(d, request.url) }),
      async (span) => {
        // an alert webhook's URL may carry its secret (Slack's do): its receiver's name is logged instead
        if (log.isLevelEnabled('debug'))
          childLog(d).debug({ url: d.alert ? undefined : request.url, body: request.body, attempt: d.attempt }, 'dispatch_sending');
        const traceparent = currentTraceparent();
        const headers = traceparent ? { ...request.headers, traceparent } : request.headers;
        const airflowUser =
          d.decision?.format === 'AIRFLOW' ? credentialFor(targets.gateCredentials, d.decision.notifyUrl)?.airflowToken : null;
        const client = d.decision || d.alert || d.lineage ? otherReceivers : receiver;
        const post = async (renewToken: boolean) => {
          const authorization: Record<string, string> = airflowUser
            ? { Authorization: `Bearer ${await airflowTokens.get(airflowTokenUrl(d.decision!.notifyUrl), airflowUser, renewToken)}` }
            : {};
          return client.post(
            request.url,
            { ...headers, ...authorization },
            JSON.stringify(request.body),
            config.nifi.timeoutSeconds * 1000,
          );
        };
        try {
          let response = await post(false);
          // the token expired (or Airflow restarted with another secret): one new token, one more try
          if (airflowUser && response.status === 401) response = await post(true);
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, response.status);
          if (response.status < 200 || response.status >= 300) failSpan(span, String(response.status));
          return { httpStatus: response.status, responseText: response.text.slice(0, MAX_ERROR_BODY) };
        } catch (error) {
          failSpan(span, 'NO_ANSWER', describeError(error));
          return { httpStatus: null, error: describeError(error) };
        }
      },
    );
  }

  /** A call that was not received: back off, or give up. */
  async function recordFailure({ d, decision }: Delivery): Promise<void> {
    if (decision.action === 'SENT') return;
    const dlog = childLog(d);
    if (decision.action === 'RETRY') {
      await perform(db, deferDispatchOperation, { dispatchId: d.dispatchId, failure: decision });
      metrics.dispatches.inc({ type: d.dispatchType, result: 'retry' });
      dlog.warn(
        { httpStatus: decision.httpStatus, error: decision.error, attempt: d.attempt, retryInMs: decision.delayMs },
        'dispatch_retry',
      );
      return;
    }
    await perform(db, markDeadOperation, {
      dispatchId: d.dispatchId,
      runId: d.runId,
      gate: d.decision && { consumer: d.decision.consumer, businessDate: d.decision.businessDate, version: d.decision.version },
      alert: d.alert && { receiver: d.alert.receiver, dedupKey: d.alert.occurrence.dedupKey },
      dispatchType: d.dispatchType,
      partitionId: d.partitionId,
      attempt: d.attempt,
      httpStatus: decision.httpStatus,
      error: decision.error,
      actor: DISPATCHER_ACTOR,
    });
    metrics.dispatches.inc({ type: d.dispatchType, result: 'dead' });
    dlog.error({ httpStatus: decision.httpStatus, error: decision.error, attempt: d.attempt }, 'dispatch_dead');
  }

  /**
   * Sends a leased batch concurrently, then records what happened: the received calls in one statement. Traced,
   * a batch is a trace: its calls and its bookkeeping statements are the children of one span.
   */
  function deliver(leased: LeasedDispatch[]): Promise<void> {
    return inSpan('dispatch batch', { attributes: { [LC_ATTRIBUTES.dispatchBatchSize]: leased.length } }, () => deliverBatch(leased));
  }

  async function deliverBatch(leased: LeasedDispatch[]): Promise<void> {
    const deliveries = await Promise.all(
      leased.map(async (d): Promise<Delivery> => {
        const started = performance.now();
        const decision = decideDelivery(await call(d), d.attempt, policy);
        return { d, decision, durationMs: Math.round(performance.now() - started) };
      }),
    );
    const sent = deliveries.flatMap((o) => (o.decision.action === 'SENT' ? [{ ...o, httpStatus: o.decision.httpStatus }] : []));
    if (sent.length > 0) {
      const changed = await perform(
        db,
        markReceivedOperation,
        sent.map(({ d, httpStatus }) => ({ dispatchId: d.dispatchId, dispatchType: d.dispatchType, httpStatus })),
      );
      // child loggers cost allocations per call: made only when the line will be written
      const logSent = log.isLevelEnabled('info');
      for (const { d, httpStatus, durationMs } of sent) {
        metrics.dispatches.inc({ type: d.dispatchType, result: 'sent' });
        if (logSent)
          childLog(d).info({ httpStatus, attempt: d.attempt, durationMs, acknowledgedFirst: !changed.has(d.dispatchId) }, 'dispatch_sent');
      }
    }
    // one failed bookkeeping write must not stop the others; the lease makes such a row due again
    const failures = await Promise.allSettled(deliveries.map(recordFailure));
    for (const f of failures) if (f.status === 'rejected') log.error({ err: f.reason }, 'dispatch_record_failed');
  }

  const lease = () => perform(db, leaseDispatchesOperation, { batch: policy.batch, leaseMs: policy.lease, nifi, ...receivers });

  async function cancelUnwanted(dispatchIds: string[]): Promise<void> {
    const cancelled = await perform(db, cancelUnwantedDispatchesOperation, { dispatchIds, actor: DISPATCHER_ACTOR, receivers });
    for (const c of cancelled) {
      metrics.dispatches.inc({ type: c.dispatchType, result: 'cancelled' });
      childLog(c).info({ reason: c.reason }, 'dispatch_cancelled');
    }
  }

  /** Leased calls that will not be sent (the dispatcher is stopping): due again at once, for any worker. */
  async function giveBack(leased: LeasedDispatch[]): Promise<void> {
    if (leased.length === 0) return;
    const released = await perform(db, releaseLeasesOperation, leased);
    log.info({ released, dispatchIds: leased.map((d) => d.dispatchId) }, 'dispatch_leases_released');
  }

  let onTheWire: { dispatchIds: string[]; since: number } | null = null;

  async function dispatchOnce(): Promise<number> {
    let attempted = 0;
    let next = lease();
    for (;;) {
      const { leased, unwanted } = await next;
      if (stopping) {
        await giveBack(leased);
        return attempted;
      }
      if (leased.length === 0 && unwanted.length === 0) return attempted;
      attempted += leased.length;
      // the next batch is leased while this one is on the wire; if that lease fails meanwhile (the database went
      // away), its rejection waits for the await above, or the catch below, instead of ending the process unhandled
      next = lease();
      next.catch(() => undefined);
      try {
        if (unwanted.length > 0) await cancelUnwanted(unwanted);
        onTheWire = { dispatchIds: leased.map((d) => d.dispatchId), since: performance.now() };
        await deliver(leased);
      } catch (error) {
        // what the pending lease took becomes due again when its lease expires; let it settle first
        await next.catch(() => undefined);
        throw error;
      } finally {
        onTheWire = null;
      }
    }
  }

  let listener: Listener | undefined;
  const loop = createPollLoop({
    pass: dispatchOnce,
    intervalMs: policy.pollInterval,
    onError: (error) => log.error({ err: error }, 'dispatch_loop_error'),
  });

  return {
    dispatchOnce,
    start() {
      if (listener) return;
      if (options.listener) {
        listener = options.listener;
      } else {
        const url = config.database.directUrl ?? config.database.url;
        if (!url) throw new Error('config: database.url: required for the LISTEN connection');
        listener = startListener({ url, log, applicationName: LISTEN_APPLICATION_NAME, timeouts: config.database });
      }
      // every (re)connect wakes it too: hints sent while the connection was down are lost
      listener.route({ channels: [DISPATCH_CHANNEL], onNotification: loop.wake, onListening: loop.wake });
      loop.start();
    },
    async stop() {
      stopping = true;
      await loop.stop();
      if (!options.listener) await listener?.close();
    },
    listening: () => listener?.connected() ?? false,
    reloadTls: receiver.reloadTls,
    sending: () => onTheWire && { dispatchIds: onTheWire.dispatchIds, forMs: Math.round(performance.now() - onTheWire.since) },
  };
}
