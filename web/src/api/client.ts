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

/**
 * Subscriptions over SSE, one connection each (distinct connections mode). A dropped connection is
 * re-opened forever with backoff; `onConnected(true)` after such a re-open tells the page to re-read,
 * since events sent in between are lost.
 */
export function createSubscriptions(token: string): Client {
  return createClient({
    url: '/graphql',
    headers: () => ({ Authorization: `Bearer ${token}` }),
    retryAttempts: Number.POSITIVE_INFINITY,
    retry: (retries) => new Promise((resolve) => setTimeout(resolve, Math.min(500 * 2 ** retries, 5000) * (0.5 + Math.random() / 2))),
  });
}
