import type { PrismaClient } from '../generated/prisma/client.js';

const MODELS = new Set(['loadRun', 'loadPartition', 'loadFile', 'loadDispatch', 'loadValidation', 'loadEvent']);
const READS = new Set(['findMany', 'findFirst', 'findUnique', 'groupBy', 'count', 'aggregate']);
/** How long a settled read stays shareable; far shorter than the run feed keeps its delivery times. */
const KEEP_MS = 2000;

interface SharedRead {
  startedAt: number;
  result: Promise<unknown>;
}

const key = (model: string, method: string, args: unknown) =>
  `${model}.${method}:${JSON.stringify(args, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`;

/**
 * The reader behind subscriptions' fields. After an event, every subscriber of that run resolves the
 * same nested fields (partitions, dispatches, events…): here they share one query. A read filtered by a
 * run id is reused only if it started after that run's latest delivery (`deliveredAt`), so what a
 * subscriber is shown beside a run row is never older than the row. Other reads pass through.
 */
export function createSharedReader(prisma: PrismaClient, deliveredAt: (runId: string) => number): PrismaClient {
  const reads = new Map<string, SharedRead>();
  const delegates = new Map<string, object>();

  const share = (model: string, method: string, call: (args: unknown) => unknown) => (args: unknown) => {
    const runId = (args as { where?: { runId?: unknown } } | undefined)?.where?.runId;
    if (typeof runId !== 'string') return call(args);
    const k = key(model, method, args);
    const existing = reads.get(k);
    if (existing && existing.startedAt >= deliveredAt(runId)) return existing.result;
    const read: SharedRead = { startedAt: performance.now(), result: Promise.resolve(call(args)) };
    reads.set(k, read);
    const forget = () => {
      setTimeout(() => {
        if (reads.get(k) === read) reads.delete(k);
      }, KEEP_MS).unref();
    };
    read.result.then(forget, forget);
    return read.result;
  };

  return new Proxy(prisma, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== 'string' || !MODELS.has(prop)) return typeof value === 'function' ? value.bind(target) : value;
      let delegate = delegates.get(prop);
      if (!delegate) {
        const original = value as Record<string, (args: unknown) => unknown>;
        delegate = new Proxy(original, {
          get(d, method) {
            const fn = Reflect.get(d, method) as unknown;
            if (typeof method !== 'string' || typeof fn !== 'function') return fn;
            const bound = (fn as (args: unknown) => unknown).bind(d);
            return READS.has(method) ? share(prop, method, bound) : bound;
          },
        });
        delegates.set(prop, delegate);
      }
      return delegate;
    },
  });
}
