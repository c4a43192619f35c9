import { createClient } from 'graphql-sse';

/** A refused or failed request, in the API's error envelope terms. */
export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

interface GraphQLResponse<T> {
  data?: T | null;
  errors?: Array<{ message: string; extensions?: { code?: string; details?: Record<string, unknown> } }>;
}

/** What a person should read for an error (the TUI's wording for auth problems, ref §8.4). */
export function describeError(error: unknown): string {
  if (error instanceof ApiError) {
    if (error.code === 'UNAUTHENTICATED') return 'Authentication failed: the token is not valid.';
    if (error.code === 'FORBIDDEN') return 'No permission: this token may not do that.';
    if (error.code === 'INVALID_INPUT' && error.details?.field)
      return `${String(error.details.field)}: ${String(error.details.reason ?? error.message)}`;
    return `${error.code}: ${error.message}`;
  }
  return error instanceof Error ? `Network problem: ${error.message}` : 'Something went wrong.';
}

/**
 * What a request proves who it is with: a token's Authorization header, or a signed-in session's X-CSRF-Token
 * (its cookie goes along by itself).
 */
export type Credential = { token: string } | { csrfToken: string };

const credentialHeaders = (credential: Credential): Record<string, string> =>
  'token' in credential ? { Authorization: `Bearer ${credential.token}` } : { 'X-CSRF-Token': credential.csrfToken };

export async function request<T>(credential: Credential, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', ...credentialHeaders(credential) },
    body: JSON.stringify({ query, variables }),
  });
  let body: GraphQLResponse<T>;
  try {
    body = (await response.json()) as GraphQLResponse<T>;
  } catch {
    throw new ApiError(`HTTP_${response.status}`, response.statusText || 'unreadable response', response.status);
  }
  const first = body.errors?.[0];
  if (first) throw new ApiError(first.extensions?.code ?? 'ERROR', first.message, response.status, first.extensions?.details);
  if (!body.data) throw new ApiError('EMPTY', 'no data in the response', response.status);
  return body.data;
}

/** The tab's event stream: up, being opened, or lost and being re-opened; `since` when that began (ms). */
export interface Connection {
  status: 'connecting' | 'live' | 'reconnecting';
  since: number;
  /** One more after every re-open: events sent in between are lost, so every view re-reads. */
  reopened: number;
}

export interface StreamEvents {
  onConnection(connection: Connection): void;
  /** A stream request was refused 401: the token is no longer accepted. */
  onUnauthorized(): void;
}

/** The response with a body that reports when it ends or breaks (the event stream was lost). */
function reportingEnd(response: Response, onEnd: () => void): Response {
  if (!response.body) return response;
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          onEnd();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        onEnd();
        controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** Refusals of a subscription that the same request may get past later: it is asked again after a backoff. */
const PASSING_REFUSALS = new Set(['SERVICE_UNAVAILABLE', 'INTERNAL']);

/** Wait before the nth re-open: 250 ms doubling to a 2.5 s cap, each with jitter (half to all of it). */
const backoff = (attempt: number) => Math.min(250 * 2 ** attempt, 2500) * (0.5 + Math.random() / 2);

interface SubscriptionSink<T> {
  next(data: T): void;
  /** The server refused the operation for good (an unknown field after an upgrade, a run that does not exist). */
  refused(error: ApiError): void;
}

/** The tab's subscriptions; each lasts until disposed or refused, whatever happens to the stream under it. */
export interface Subscriptions {
  subscribe<T>(request: { query: string; variables?: Record<string, unknown> }, sink: SubscriptionSink<T>): () => void;
  dispose(): void;
}

interface Held {
  request: { query: string; variables?: Record<string, unknown> };
  sink: SubscriptionSink<unknown>;
  /** Ends it on the current stream. */
  end: () => void;
}

/**
 * Subscriptions over SSE, all of a tab's on one connection (graphql-sse's single connection mode on
 * /graphql/stream): Chromium allows six connections per host, and one per subscription left a third tab blank.
 *
 * The stream is re-opened here, not by graphql-sse. Its own retries race in single connection mode: each of the
 * tab's subscriptions resets the shared connection when it fails, so after an outage several were opened at once and
 * the replaced ones were never closed, until the tab ran out of connections. And a stopping server completes every
 * operation before it ends the stream (its drain), which graphql-sse takes as the end of the subscription, not as a
 * loss to retry: the page said "Live updates stopped" for good. Every subscription the console makes is endless, so
 * one that completes or fails was dropped: the whole stream is given up, and after a backoff a new one carries every
 * subscription again, forever. `reopened` counts the re-opens, after which views re-read.
 */
export function createSubscriptions(credential: Credential, events: StreamEvents): Subscriptions {
  let connection: Connection = { status: 'connecting', since: Date.now(), reopened: 0 };
  const set = (next: Omit<Connection, 'since'>) => {
    if (next.status === connection.status && next.reopened === connection.reopened) return;
    connection = { ...next, since: next.status === connection.status ? connection.since : Date.now() };
    events.onConnection(connection);
  };
  const held = new Set<Held>();
  let disposed = false;
  /** Re-opens since a stream last connected: the backoff's exponent. */
  let failures = 0;
  let reopening: ReturnType<typeof setTimeout> | undefined;
  let stream: { carry(entry: Held): void; close(): void };

  const open = () => {
    let current = true;
    const client = createClient({
      url: '/graphql/stream',
      singleConnection: true,
      // kept open a while without subscriptions, so that moving between pages does not re-open it
      lazyCloseTimeout: 10_000,
      headers: () => credentialHeaders(credential),
      retryAttempts: 0,
      fetchFn: async (input: RequestInfo | URL, init?: RequestInit) => {
        const response = await fetch(input, init);
        if (response.status === 401) events.onUnauthorized();
        const accept = new Headers(init?.headers).get('accept');
        return accept === 'text/event-stream' && response.ok ? reportingEnd(response, lost) : response;
      },
      on: {
        connected: () => {
          if (!current) return;
          failures = 0;
          set({ status: 'live', reopened: connection.reopened + (connection.status === 'reconnecting' ? 1 : 0) });
        },
      },
    });
    const close = () => {
      current = false;
      client.dispose();
    };
    /** This stream is lost: it is closed, and after the backoff another carries every subscription. */
    function lost() {
      if (!current || disposed) return;
      close();
      // a lazy client without subscriptions opens nothing: no backoff for one that only went idle
      if (held.size === 0) return open();
      set({ status: 'reconnecting', reopened: connection.reopened });
      reopening = setTimeout(open, backoff(failures++));
    }
    const carry = (entry: Held) => {
      let refusal: ApiError | null = null;
      const mine = () => current && held.has(entry);
      entry.end = client.subscribe(entry.request, {
        next(result) {
          if (!mine()) return;
          const first = result.errors?.[0] as
            | { message: string; extensions?: { code?: string; details?: Record<string, unknown> } }
            | undefined;
          if (!first) {
            if (result.data) entry.sink.next(result.data);
            return;
          }
          refusal = new ApiError(first.extensions?.code ?? 'ERROR', first.message, 200, first.extensions?.details);
          if (PASSING_REFUSALS.has(refusal.code)) return;
          held.delete(entry);
          entry.sink.refused(refusal);
        },
        error() {
          if (mine()) lost();
        },
        complete() {
          if (!mine()) return;
          // a refusal that may pass (the database busy) is this subscription's alone: only it is made again
          if (!refusal) lost();
          else if (PASSING_REFUSALS.has(refusal.code)) setTimeout(() => mine() && carry(entry), backoff(2));
        },
      });
    };
    stream = { carry, close };
    for (const entry of held) carry(entry);
  };
  open();

  return {
    subscribe<T>(request: { query: string; variables?: Record<string, unknown> }, sink: SubscriptionSink<T>) {
      const entry: Held = { request, sink: sink as SubscriptionSink<unknown>, end: () => undefined };
      held.add(entry);
      stream.carry(entry);
      return () => {
        if (held.delete(entry)) entry.end();
      };
    },
    dispose() {
      disposed = true;
      clearTimeout(reopening);
      held.clear();
      stream.close();
    },
  };
}
