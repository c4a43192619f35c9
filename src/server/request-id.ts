import { randomUUID } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

const VALID_REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;
const requestIds = new WeakMap<Request, string>();

/** A valid incoming X-Request-Id is kept, anything else replaced by a new UUID. */
export function requestIdFrom(incoming: string | null | undefined): string {
  return incoming && VALID_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

export function requestIdOf(request: Request): string {
  let id = requestIds.get(request);
  if (!id) {
    id = requestIdFrom(request.headers.get('x-request-id'));
    requestIds.set(request, id);
  }
  return id;
}

export function useRequestId(): Plugin {
  return {
    onResponse({ request, response }) {
      response.headers.set('X-Request-Id', requestIdOf(request));
    },
  };
}
