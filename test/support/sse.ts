// A GraphQL-over-SSE client (distinct connections mode) for tests: what a browser's fetch would do.
import { TOKENS, type TokenName } from './api.js';
import { eventStreamBlocks } from './event-stream-blocks.js';

interface SseMessage<T = Record<string, any>> {
  data?: T | null;
  errors?: Array<{ message: string; extensions?: Record<string, any> }>;
}

export interface SseSubscription<T = Record<string, any>> {
  status: number;
  headers: Headers;
  /** Every `next` message so far, in arrival order. */
  messages: Array<SseMessage<T>>;
  /** When each message arrived (performance.now()). */
  arrivals: number[];
  /** The server sent `complete` or closed the stream. */
  ended: boolean;
  /** The server sent `complete`. */
  completed: boolean;
  /** Why the stream broke off rather than ended (a reset, or close()). */
  broken: unknown;
  /** Waits (polling, generous) until a message satisfies the predicate; returns it. */
  waitFor(predicate: (message: SseMessage<T>) => boolean, timeoutMs?: number): Promise<SseMessage<T>>;
  close(): void;
}

export async function subscribe<T = Record<string, any>>(
  url: string,
  query: string,
  variables: Record<string, unknown> = {},
  options: { token?: TokenName | null } = {},
): Promise<SseSubscription<T>> {
  const token = options.token === undefined ? 'viewer' : options.token;
  const abort = new AbortController();
  const response = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'text/event-stream',
      ...(token ? { Authorization: `Bearer ${TOKENS[token]}` } : {}),
    },
    body: JSON.stringify({ query, variables }),
    signal: abort.signal,
  });
  const subscription: SseSubscription<T> = {
    status: response.status,
    headers: response.headers,
    messages: [],
    arrivals: [],
    ended: false,
    completed: false,
    broken: undefined,
    async waitFor(predicate, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      for (let seen = 0; ; ) {
        for (; seen < subscription.messages.length; seen++) {
          if (predicate(subscription.messages[seen]!)) return subscription.messages[seen]!;
        }
        if (subscription.ended || Date.now() > deadline) {
          throw new Error(
            `no matching message (${subscription.ended ? 'stream ended' : 'timed out'}); got ${JSON.stringify(subscription.messages)}`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    close: () => abort.abort(),
  };
  void (async () => {
    try {
      for await (const block of eventStreamBlocks(response.body!)) {
        const lines = block.split('\n');
        const event = lines
          .find((l) => l.startsWith('event:'))
          ?.slice(6)
          .trim();
        const data = lines
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trim())
          .join('\n');
        if (event === 'next' || (!event && data)) {
          subscription.messages.push(JSON.parse(data));
          subscription.arrivals.push(performance.now());
        }
        if (event === 'complete') subscription.ended = subscription.completed = true;
      }
    } catch (error) {
      subscription.broken = error;
    }
    subscription.ended = true;
  })();
  return subscription;
}
