import { createClient, type Client } from 'graphql-sse';

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

export async function request<T>(token: string, query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json', Authorization: `Bearer ${token}` },
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

/**
 * Subscriptions over SSE, all of a tab's on one connection (graphql-sse's single connection mode on
 * /graphql/stream): Chromium allows six connections per host, and one per subscription left a third tab blank.
 * A lost connection is re-opened forever with backoff; `reopened` counts the re-opens, after which views re-read.
 */
export function createSubscriptions(token: string, events: StreamEvents): Client<true> {
  let connection: Connection = { status: 'connecting', since: Date.now(), reopened: 0 };
  const set = (next: Omit<Connection, 'since'>) => {
    if (next.status === connection.status && next.reopened === connection.reopened) return;
    connection = { ...next, since: next.status === connection.status ? connection.since : Date.now() };
    events.onConnection(connection);
  };
  return createClient({
    url: '/graphql/stream',
    singleConnection: true,
    // kept open a while without subscriptions, so that moving between pages does not re-open it
    lazyCloseTimeout: 10_000,
    headers: () => ({ Authorization: `Bearer ${token}` }),
    retryAttempts: Number.POSITIVE_INFINITY,
    retry: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** retries, 5000) * (0.5 + Math.random() / 2))),
    fetchFn: async (input: RequestInfo | URL, init?: RequestInit) => {
      const response = await fetch(input, init);
      if (response.status === 401) events.onUnauthorized();
      const stream = new Headers(init?.headers).get('accept') === 'text/event-stream';
      if (!stream || !response.ok) return response;
      return reportingEnd(response, () => {
        if (connection.status === 'live') set({ status: 'reconnecting', reopened: connection.reopened });
      });
    },
    on: {
      connecting: (reconnecting) => set({ status: reconnecting ? 'reconnecting' : 'connecting', reopened: connection.reopened }),
      connected: (reconnected) => set({ status: 'live', reopened: connection.reopened + (reconnected ? 1 : 0) }),
    },
  });
}
