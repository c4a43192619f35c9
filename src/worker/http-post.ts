import http from 'node:http';
import https from 'node:https';
import type { Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';
import { describeCertificate, readPemFiles, rereadPemFiles, type PemContents, type PemFiles } from '../http/tls.js';

export type NifiTlsConfig = NonNullable<Config['nifi']['tls']>;

interface PostResult {
  status: number;
  text: string;
}

export interface ReceiverClient {
  /** POSTs a JSON body; redirects are not followed (3xx is the answer); fails after timeoutMs. */
  post(url: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<PostResult>;
  /**
   * Re-reads nifi.tls's files for new connections. False when there is no nifi.tls or a file will not
   * do: that is logged and the client keeps the ones it has.
   */
  reloadTls(): boolean;
}

// keep-alive agents: the dispatcher talks to one receiver (NiFi's load balancer) over and over, and
// node:http with a pooled socket costs a fraction of fetch's per-call CPU (measured 4-6× less here)
const KEEP_ALIVE = { keepAlive: true, maxSockets: 64 };

function nifiPemFiles(config: NifiTlsConfig): PemFiles {
  const file = (name: keyof NifiTlsConfig) => {
    const path = config[name];
    return path === undefined ? undefined : { key: `nifi.tls.${name}`, path };
  };
  return { ca: file('caFile'), cert: file('certFile'), key: file('keyFile') };
}

/** Idle connections made with the old files are closed; one in flight finishes on them. */
function retire(agent: https.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/**
 * The dispatcher's client for NiFi's receiver. With nifi.tls, https calls trust only caFile (when
 * given) and present certFile/keyFile (mTLS). Throws ConfigError when a file will not do.
 */
export function createReceiverClient(config: NifiTlsConfig | undefined, log: Logger): ReceiverClient {
  const files = config && nifiPemFiles(config);
  const httpsAgent = (contents: PemContents = {}) => new https.Agent({ ...KEEP_ALIVE, ...contents });
  const agents = { 'http:': new http.Agent(KEEP_ALIVE), 'https:': httpsAgent(files && readPemFiles(files)) };

  return {
    post(url, headers, body, timeoutMs) {
      const target = new URL(url);
      const transport = target.protocol === 'https:' ? https : http;
      const agent = agents[target.protocol as keyof typeof agents];
      if (!agent) return Promise.reject(new Error(`unsupported protocol ${target.protocol}`));
      return new Promise((resolve, reject) => {
        const request = transport.request(
          target,
          {
            method: 'POST',
            agent,
            headers: { ...headers, 'Content-Length': Buffer.byteLength(body) },
            timeout: timeoutMs,
          },
          (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
            response.on('error', reject);
          },
        );
        request.on('timeout', () => request.destroy(new Error(`timeout: no answer within ${timeoutMs} ms`)));
        request.on('error', reject);
        request.end(body);
      });
    },
    reloadTls() {
      if (!files) return false;
      const contents = rereadPemFiles(files, log, 'nifi_tls_reload_failed');
      if (!contents) return false;
      const previous = agents['https:'];
      agents['https:'] = httpsAgent(contents);
      retire(previous);
      log.info({ clientCertificate: describeCertificate(contents.cert) }, 'nifi_tls_reloaded');
      return true;
    },
  };
}
