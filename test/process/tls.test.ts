// TLS at the edge: the API over HTTPS with mTLS, and the real CLI serving it, re-reading its files on
// SIGHUP, and refusing files it cannot use; the worker's nifi.tls through `load-control work`.
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/auth/tokens.js';
import { startTestApi, TOKENS, type TestApi } from '../support/api.js';
import { createTestCertificates, fingerprintOf, type TestCertificates } from '../support/certificates.js';
import { freePort, runCli } from '../support/cli.js';
import { completeRun } from '../support/fixtures.js';
import { httpsRequest } from '../support/https-request.js';
import { startReceiver } from '../support/receiver.js';
import { until } from '../support/until.js';

const RUNS = '{ runs(first: 1) { nodes { runId } } }';

let certs: TestCertificates;
/** A plain-HTTP API whose database the CLI processes share. */
let api: TestApi;
beforeAll(async () => {
  certs = await createTestCertificates();
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
  await certs?.close();
});

function graphql(url: string, token: string | undefined, options: Parameters<typeof httpsRequest>[1]) {
  return httpsRequest(`${url}/graphql`, {
    ...options,
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query: RUNS }),
  });
}

describe('the API with server.tls and requireClientCert', () => {
  let tlsApi: TestApi;
  beforeAll(async () => {
    tlsApi = await startTestApi({
      server: { tls: { certFile: certs.server.cert, keyFile: certs.server.key, clientCaFile: certs.ca, requireClientCert: true } },
    });
  });
  afterAll(async () => {
    await tlsApi?.close();
  });

  it('answers GraphQL, /healthz and /metrics over HTTPS to a client with a trusted certificate; the token still decides', async () => {
    expect(tlsApi.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const client = { ca: certs.ca, clientCert: certs.client };
    const answered = await graphql(tlsApi.url, TOKENS.viewer, client);
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.body)).toEqual({ data: { runs: { nodes: [] } } });
    expect((await graphql(tlsApi.url, undefined, client)).status).toBe(401);
    expect((await httpsRequest(`${tlsApi.url}/healthz`, client)).status).toBe(200);
    expect((await httpsRequest(`${tlsApi.url}/metrics`, client)).body).toContain('lc_requests_total');
  });

  it('refuses plain HTTP and clients without a trusted certificate', async () => {
    const plain = new Promise((resolve, reject) =>
      http.get(`${tlsApi.url.replace('https:', 'http:')}/healthz`, resolve).on('error', reject),
    );
    await expect(plain).rejects.toThrow();
    await expect(graphql(tlsApi.url, TOKENS.viewer, { ca: certs.ca })).rejects.toThrow();
    await expect(graphql(tlsApi.url, TOKENS.viewer, { ca: certs.ca, clientCert: certs.untrustedClient })).rejects.toThrow();
  });
});

describe('load-control serve with server.tls', () => {
  it('prints https:// URLs, re-reads its certificate on SIGHUP, and keeps the one in use when a file is broken', async () => {
    const live = await mkdtemp(join(certs.dir, 'serve-'));
    const certFile = join(live, 'server.crt');
    const keyFile = join(live, 'server.key');
    await copyFile(certs.server.cert, certFile);
    await copyFile(certs.server.key, keyFile);
    const port = await freePort();
    const child = runCli(['serve'], {
      DATABASE_URL: api.database.url,
      PORT: String(port),
      LC_SERVER__HOST: '127.0.0.1',
      LC_SERVER__TLS: JSON.stringify({ certFile, keyFile, clientCaFile: certs.ca, requireClientCert: true }),
      LC_AUTH__TOKENS: JSON.stringify([{ name: 'viewer', sha256: hashToken(TOKENS.viewer), roles: ['viewer'] }]),
    });
    const base = `https://127.0.0.1:${port}`;
    const client = { ca: certs.ca, clientCert: certs.client };
    const served = async () => (await httpsRequest(`${base}/readyz`, client)).serverFingerprint;
    try {
      await until(
        'readiness over HTTPS',
        async () => (await httpsRequest(`${base}/readyz`, client).catch(() => undefined))?.status === 200,
      );
      expect(child.output()).toContain(`GraphQL + GraphiQL: ${base}/graphql`);
      expect(await served()).toBe(await fingerprintOf(certs.server.cert));
      expect((await graphql(base, TOKENS.viewer, client)).status).toBe(200);

      await copyFile(certs.renewedServer.cert, certFile);
      await copyFile(certs.renewedServer.key, keyFile);
      child.kill('SIGHUP');
      const renewed = await fingerprintOf(certs.renewedServer.cert);
      await until('the renewed certificate', async () => (await served()) === renewed);
      // the log line is written asynchronously and may reach us after the new certificate does
      await until('the reload to be logged', () => child.output().includes('"tls_reloaded"'));

      await writeFile(keyFile, 'garbled\n');
      child.kill('SIGHUP');
      await until('the failed reload to be logged', () => child.output().includes('"tls_reload_failed"'));
      expect(child.output()).toContain('config: server.tls.keyFile:');
      expect(await served()).toBe(renewed);
      expect((await graphql(base, TOKENS.viewer, client)).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await child.exited).toBe(0);
  });

  it('refuses to start with a file it cannot read, naming the key (exit 2)', async () => {
    const missing = join(certs.dir, 'missing.crt');
    const child = runCli(['serve'], {
      DATABASE_URL: api.database.url,
      PORT: String(await freePort()),
      LC_SERVER__TLS: JSON.stringify({ certFile: missing, keyFile: certs.server.key }),
    });
    expect(await child.exited).toBe(2);
    expect(child.output()).toContain(`config: server.tls.certFile: file not found: ${missing}`);
  });
});

describe('load-control work with nifi.tls', () => {
  it('delivers to a receiver requiring mTLS and re-reads its files on SIGHUP', async () => {
    const receiver = await startReceiver({
      tls: {
        cert: readFileSync(certs.server.cert),
        key: readFileSync(certs.server.key),
        ca: readFileSync(certs.ca),
        requestCert: true,
        rejectUnauthorized: true,
      },
    });
    const child = runCli(['work'], {
      DATABASE_URL: api.database.url,
      LC_NIFI__RECEIVER_URL: receiver.url,
      LC_NIFI__TLS: JSON.stringify({ caFile: certs.ca, certFile: certs.client.cert, keyFile: certs.client.key }),
    });
    try {
      await until('the worker', () => child.output().includes('"worker_started"'));
      const run = await completeRun(api);
      await receiver.waitForCalls(1);
      expect(receiver.callsFor(run.dispatchId).map((call) => call.clientCertificate)).toEqual([await fingerprintOf(certs.client.cert)]);
      child.kill('SIGHUP');
      await until('the reload to be logged', () => child.output().includes('"nifi_tls_reloaded"'));
    } finally {
      child.kill('SIGTERM');
      await receiver.close();
    }
    expect(await child.exited).toBe(0);
  });

  it('refuses to start with a file it cannot read, naming the key (exit 2)', async () => {
    const missing = join(certs.dir, 'missing-ca.crt');
    const child = runCli(['work'], {
      DATABASE_URL: api.database.url,
      LC_NIFI__RECEIVER_URL: 'https://127.0.0.1:1/',
      LC_NIFI__TLS: JSON.stringify({ caFile: missing }),
    });
    expect(await child.exited).toBe(2);
    expect(child.output()).toContain(`config: nifi.tls.caFile: file not found: ${missing}`);
  });
});
