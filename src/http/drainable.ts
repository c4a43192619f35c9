import type http from 'node:http';
import net, { type Socket } from 'node:net';

/** A request received and not yet answered, for the log of a drain that ran out of time. */
export interface OpenRequest {
  method: string;
  url: string;
  requestId: string | undefined;
  ageMs: number;
}

export interface DrainableServer {
  open(): OpenRequest[];
  /**
   * Stops accepting connections; every request already received, also one that arrives later on a
   * connection still open, is answered, the last one of each connection with `Connection: close`, which
   * closes it. Connections idle from the start are closed after IDLE_GRACE_MS. Resolves when none is left.
   */
  drain(): Promise<void>;
}

/**
 * How long a drain keeps the keep-alive connections that are idle at its start. A client may be writing its
 * next request on one at this very moment: closing it then resets that request. Within the grace, the
 * request is answered (with `Connection: close`); busy clients send theirs within milliseconds.
 */
const IDLE_GRACE_MS = 1000;

/** Tracks a server's requests per connection, so that it can be drained rather than cut off. */
export function drainable(server: http.Server): DrainableServer {
  const pending = new Map<Socket, Array<{ req: http.IncomingMessage; res: http.ServerResponse; at: number }>>();
  let draining = false;
  let graceOver = false;
  let drained: Promise<void> | undefined;

  // Node drops the responses queued behind one that says `Connection: close` (pipelined requests, whose
  // handlers have run), so only the last request received on a connection may say it
  const markLast = (queue: Array<{ res: http.ServerResponse }>) => {
    for (const { res } of queue.slice(0, -1)) if (!res.headersSent) res.removeHeader('Connection');
    const last = queue.at(-1)?.res;
    if (last && !last.headersSent) last.setHeader('Connection', 'close');
  };

  server.prependListener('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    const queue = pending.get(socket) ?? [];
    const entry = { req, res, at: performance.now() };
    queue.push(entry);
    pending.set(socket, queue);
    if (draining) markLast(queue);
    res.once('close', () => {
      queue.splice(queue.indexOf(entry), 1);
      if (queue.length === 0) pending.delete(socket);
      // a response whose headers went out before the drain (an SSE stream) left its connection open
      if (graceOver) server.closeIdleConnections();
    });
  });

  return {
    open() {
      const now = performance.now();
      return [...pending.values()].flat().map(({ req, at }) => ({
        method: req.method ?? '',
        url: req.url ?? '',
        requestId: typeof req.headers['x-request-id'] === 'string' ? req.headers['x-request-id'] : undefined,
        ageMs: Math.round(now - at),
      }));
    },
    drain() {
      draining = true;
      drained ??= new Promise<void>((resolve) => {
        for (const queue of pending.values()) markLast(queue);
        // net.Server's close only stops accepting; http.Server's would also cut the connections idle now
        net.Server.prototype.close.call(server, () => resolve());
        setTimeout(() => {
          graceOver = true;
          server.closeIdleConnections();
        }, IDLE_GRACE_MS).unref();
      });
      return drained;
    },
  };
}
