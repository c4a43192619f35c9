// A stand-in for NiFi's control receiver (PG-05): a real HTTP (or HTTPS) server on loopback that records
// every call and answers as scripted (status, delay, body), 202 by default.
import http from 'node:http';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';

export interface ReceivedCall {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
  /** performance.timeOrigin + performance.now() when the request arrived: wall-clock ms, sub-ms precise. */
  receivedAt: number;
  /** The caller's port: the same for calls over one kept-alive connection. */
  remotePort: number | undefined;
  /** Over HTTPS: the SHA-256 fingerprint of the client certificate the caller presented, if any. */
  clientCertificate?: string;
}

interface Reply {
  status: number;
  delayMs?: number;
  body?: string;
}

/** Runs for each call after it was recorded; may act like NiFi (e.g. call the API) before the reply. */
type CallHook = (call: ReceivedCall) => Promise<void> | void;

export interface Receiver {
  url: string;
  calls: ReceivedCall[];
  /** The next calls get these replies, in order; afterwards the default. */
  script(...replies: Array<number | Reply>): void;
  setDefault(reply: number | Reply): void;
  /** Each call's reply decided from the call itself (e.g. by how often its X-Dispatch-Id came), before the script. */
  replyBy(decide: ((call: ReceivedCall) => number | Reply) | undefined): void;
  onCall(hook: CallHook | undefined): void;
  /** Waits (polling) until at least n calls arrived; throws after timeoutMs. */
  waitForCalls(n: number, timeoutMs?: number): Promise<ReceivedCall[]>;
  callsFor(dispatchId: string): ReceivedCall[];
  reset(): void;
  close(): Promise<void>;
}

const asReply = (r: number | Reply): Reply => (typeof r === 'number' ? { status: r } : r);

/** With `tls` (certificate, key, and e.g. ca + requestCert + rejectUnauthorized for mTLS) it is an HTTPS server. */
export async function startReceiver(options: { tls?: https.ServerOptions } = {}): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  let queue: Reply[] = [];
  let fallback: Reply = { status: 202 };
  let hook: CallHook | undefined;
  let decider: ((call: ReceivedCall) => number | Reply) | undefined;

  const handle: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const receivedAt = performance.timeOrigin + performance.now();
      const text = Buffer.concat(chunks).toString('utf8');
      const call: ReceivedCall = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: text ? JSON.parse(text) : {},
        receivedAt,
        remotePort: req.socket.remotePort,
      };
      if (options.tls) call.clientCertificate = (req.socket as TLSSocket).getPeerCertificate().fingerprint256;
      calls.push(call);
      const reply = decider ? asReply(decider(call)) : (queue.shift() ?? fallback);
      void (async () => {
        if (hook) await hook(call);
        if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
        if (res.destroyed) return;
        res.writeHead(reply.status, { 'Content-Type': 'text/plain' });
        res.end(reply.body ?? '');
      })();
    });
  };
  const server = options.tls ? https.createServer(options.tls, handle) : http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}/nifi-control/`,
    calls,
    script(...replies) {
      queue.push(...replies.map(asReply));
    },
    setDefault(reply) {
      fallback = asReply(reply);
    },
    onCall(h) {
      hook = h;
    },
    replyBy(decide) {
      decider = decide;
    },
    async waitForCalls(n, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (calls.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver: expected ${n} calls, got ${calls.length} within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return calls;
    },
    callsFor(dispatchId) {
      return calls.filter((c) => c.headers['x-dispatch-id'] === dispatchId);
    },
    reset() {
      calls.length = 0;
      queue = [];
      fallback = { status: 202 };
      hook = undefined;
      decider = undefined;
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
