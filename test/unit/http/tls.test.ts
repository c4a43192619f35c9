import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createTestCertificates, fingerprintOf, type TestCertificates } from '../../support/certificates.js';
import { httpsRequest } from '../../support/https-request.js';
import { ConfigError } from '../../../src/config/config.js';
import { createHttpServer, type HttpServer, type ServerTlsConfig } from '../../../src/http/tls.js';

let certs: TestCertificates;
const servers: HttpServer[] = [];
const logLines: Array<Record<string, unknown>> = [];
const log = pino(
  { level: 'debug' },
  new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);

beforeAll(async () => {
  certs = await createTestCertificates();
});
afterEach(async () => {
  logLines.length = 0;
  await Promise.all(
    servers.splice(0).map(
      ({ server }) =>
        new Promise((resolve) => {
          server.close(resolve);
          server.closeAllConnections();
        }),
    ),
  );
});
afterAll(async () => {
  await certs?.close();
});

/** An HTTPS server on loopback answering whether the client's certificate was verified. */
async function serve(tls: Partial<ServerTlsConfig> = {}): Promise<{ url: string; tlsServer: HttpServer }> {
  const tlsServer = createHttpServer(
    { certFile: certs.server.cert, keyFile: certs.server.key, requireClientCert: false, ...tls },
    log,
    (req, res) => {
      res.end(JSON.stringify({ clientCertVerified: (req.socket as TLSSocket).authorized }));
    },
  );
  servers.push(tlsServer);
  await new Promise<void>((resolve) => tlsServer.server.listen(0, '127.0.0.1', resolve));
  const { port } = tlsServer.server.address() as { port: number };
  return { url: `https://127.0.0.1:${port}/`, tlsServer };
}

function plainHttpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url.replace('https:', 'http:'), (response) => resolve(response.statusCode ?? 0)).on('error', reject);
  });
}

function configErrorOf(tls: Partial<ServerTlsConfig>): string[] {
  try {
    servers.push(
      createHttpServer({ certFile: certs.server.cert, keyFile: certs.server.key, requireClientCert: false, ...tls }, log, () => {}),
    );
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('createHttpServer', () => {
  it('without server.tls is plain HTTP', () => {
    const plain = createHttpServer(undefined, log, () => {});
    expect(plain.protocol).toBe('http');
    expect(plain.server).toBeInstanceOf(http.Server);
    expect(plain.reload()).toBe(false);
  });

  it('with server.tls serves HTTPS with the configured certificate and does not answer plain HTTP', async () => {
    const { url, tlsServer } = await serve();
    expect(tlsServer.protocol).toBe('https');
    const response = await httpsRequest(url, { ca: certs.ca });
    expect(response.status).toBe(200);
    expect(response.serverFingerprint).toBe(await fingerprintOf(certs.server.cert));
    expect(JSON.parse(response.body)).toEqual({ clientCertVerified: false });
    await expect(plainHttpGet(url)).rejects.toThrow(/socket hang up|ECONNRESET/);
  });

  it('with requireClientCert refuses callers without a certificate or with an untrusted one, and serves a trusted one', async () => {
    const { url } = await serve({ clientCaFile: certs.ca, requireClientCert: true });
    await expect(httpsRequest(url, { ca: certs.ca })).rejects.toThrow(/certificate required/);
    // TLS 1.3 verifies the client after the client's handshake ended: its alert may lose the race with the reset
    await expect(httpsRequest(url, { ca: certs.ca, clientCert: certs.untrustedClient })).rejects.toThrow(
      /unknown ca|socket hang up|ECONNRESET/,
    );
    const trusted = await httpsRequest(url, { ca: certs.ca, clientCert: certs.client });
    expect(trusted.status).toBe(200);
    expect(JSON.parse(trusted.body)).toEqual({ clientCertVerified: true });
    expect(logLines.filter((line) => line.msg === 'tls_client_refused')).toEqual([
      expect.objectContaining({ error: expect.stringContaining('peer did not return a certificate') }),
      expect.objectContaining({ authorizationError: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }),
    ]);
  });

  it('with clientCaFile alone asks for a certificate, verifies it, and also serves callers without one', async () => {
    const { url } = await serve({ clientCaFile: certs.ca });
    const withCert = await httpsRequest(url, { ca: certs.ca, clientCert: certs.client });
    expect(JSON.parse(withCert.body)).toEqual({ clientCertVerified: true });
    const withoutCert = await httpsRequest(url, { ca: certs.ca });
    expect(withoutCert.status).toBe(200);
    expect(JSON.parse(withoutCert.body)).toEqual({ clientCertVerified: false });
  });

  it('refuses files it cannot use, naming their keys', async () => {
    const garbled = join(certs.dir, 'garbled.pem');
    await writeFile(garbled, 'not a PEM file\n');
    const missing = join(certs.dir, 'missing.pem');
    expect(configErrorOf({ certFile: missing, clientCaFile: missing })).toEqual([
      `config: server.tls.certFile: file not found: ${missing}`,
      `config: server.tls.clientCaFile: file not found: ${missing}`,
    ]);
    expect(configErrorOf({ certFile: garbled, keyFile: garbled })).toEqual([
      expect.stringMatching(new RegExp(`^config: server.tls.certFile: ${garbled} is not a PEM certificate \\(`)),
      expect.stringMatching(new RegExp(`^config: server.tls.keyFile: ${garbled} is not a PEM private key \\(`)),
    ]);
    expect(configErrorOf({ clientCaFile: garbled })).toEqual([
      `config: server.tls.clientCaFile: ${garbled} is not a bundle of PEM certificates (no certificate in it)`,
    ]);
    expect(configErrorOf({ keyFile: certs.client.key })).toEqual([
      expect.stringMatching(
        new RegExp(`^config: server.tls.keyFile: ${certs.client.key} does not match server.tls.certFile \\(.*key values mismatch`),
      ),
    ]);
  });
});

describe('reload', () => {
  let live: string;
  beforeAll(async () => {
    live = await mkdtemp(join(certs.dir, 'live-'));
  });
  afterAll(async () => {
    await rm(live, { recursive: true, force: true });
  });

  it('serves a renewed certificate to new connections; a missing or garbled file is logged and the one in use stays', async () => {
    const certFile = join(live, 'server.crt');
    const keyFile = join(live, 'server.key');
    await copyFile(certs.server.cert, certFile);
    await copyFile(certs.server.key, keyFile);
    const { url, tlsServer } = await serve({ certFile, keyFile });
    expect((await httpsRequest(url, { ca: certs.ca })).serverFingerprint).toBe(await fingerprintOf(certs.server.cert));

    await copyFile(certs.renewedServer.cert, certFile);
    await copyFile(certs.renewedServer.key, keyFile);
    expect(tlsServer.reload()).toBe(true);
    const renewed = await fingerprintOf(certs.renewedServer.cert);
    expect((await httpsRequest(url, { ca: certs.ca })).serverFingerprint).toBe(renewed);
    expect(logLines.find((line) => line.msg === 'tls_reloaded')).toMatchObject({ certificate: { fingerprint256: renewed } });

    await writeFile(keyFile, 'garbled\n');
    expect(tlsServer.reload()).toBe(false);
    await rm(certFile);
    expect(tlsServer.reload()).toBe(false);
    expect(logLines.filter((line) => line.msg === 'tls_reload_failed').map((line) => line.problems)).toEqual([
      [expect.stringContaining('config: server.tls.keyFile:')],
      [`config: server.tls.certFile: file not found: ${certFile}`],
    ]);
    expect((await httpsRequest(url, { ca: certs.ca })).serverFingerprint).toBe(renewed);
  });
});
