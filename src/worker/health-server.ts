import http from 'node:http';
import type { Registry } from 'prom-client';
import { drainable } from '../http/drainable.js';

export interface WorkerHealthOptions {
  registry: Registry;
  /** Database reachable and LISTEN connection up. */
  ready(): Promise<boolean>;
  port: number;
  host: string;
}

export interface WorkerHealthServer {
  port: number;
  /** Answers the requests already received, as the API's drain. */
  close(): Promise<void>;
}

/** `work --metrics-port`: /healthz, /readyz and /metrics of a worker process (ref §9.1 worker metrics port). */
export async function serveWorkerHealth(options: WorkerHealthOptions): Promise<WorkerHealthServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    if (path === '/healthz') return json(200, { status: 'ok' });
    if (path === '/readyz') {
      void options.ready().then(
        (ok) => json(ok ? 200 : 503, { status: ok ? 'ok' : 'unavailable' }),
        () => json(503, { status: 'unavailable' }),
      );
      return;
    }
    if (path === '/metrics') {
      void options.registry.metrics().then((text) => {
        res.writeHead(200, { 'Content-Type': options.registry.contentType });
        res.end(text);
      });
      return;
    }
    json(404, { code: 'NOT_FOUND', message: 'Not Found' });
  });
  const lifecycle = drainable(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : options.port,
    close: () => lifecycle.drain(),
  };
}
