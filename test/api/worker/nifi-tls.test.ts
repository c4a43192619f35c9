// The dispatcher's calls to NiFi's receiver over HTTPS with nifi.tls: the CA it trusts, the client
// certificate it presents (mTLS), and re-reading them.
import { readFileSync } from 'node:fs';
import { copyFile, mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../support/api.js';
import { createTestCertificates, fingerprintOf, type TestCertificates } from '../../support/certificates.js';
import { completeRun } from '../../support/fixtures.js';
import { startReceiver, type Receiver } from '../../support/receiver.js';
import { dispatchRow, quietLog, testWorker, workerConfig, type TestWorkerParts } from '../../support/worker.js';
import { ConfigError, type Config } from '../../../src/config/config.js';
import { createDispatcher } from '../../../src/worker/dispatcher.js';
import { createWorkerMetrics } from '../../../src/worker/metrics.js';

let api: TestApi;
let certs: TestCertificates;
/** Requires a client certificate from the test CA. */
let mtlsReceiver: Receiver;
const workers: TestWorkerParts[] = [];

beforeAll(async () => {
  certs = await createTestCertificates();
  api = await startTestApi();
  mtlsReceiver = await startReceiver({
    tls: {
      cert: readFileSync(certs.server.cert),
      key: readFileSync(certs.server.key),
      ca: readFileSync(certs.ca),
      requestCert: true,
      rejectUnauthorized: true,
    },
  });
});
afterEach(async () => {
  mtlsReceiver.reset();
  await Promise.all(workers.splice(0).map((w) => w.close()));
  // leave nothing due for the next test
  await api.sql.query(
    `UPDATE nifi_ops.load_dispatch SET status = 'ACKED', acked_at = clock_timestamp() WHERE status IN ('PENDING', 'SENT')`,
  );
});
afterAll(async () => {
  await mtlsReceiver?.close();
  await api?.close();
  await certs?.close();
});

function worker(tls: NonNullable<Config['nifi']['tls']>): TestWorkerParts {
  const parts = testWorker(api, workerConfig(api, mtlsReceiver, { nifi: { tls } }));
  workers.push(parts);
  return parts;
}

describe('dispatcher with nifi.tls', () => {
  it('delivers over mTLS: trusts caFile, presents certFile/keyFile, and keeps the connection alive', async () => {
    const { dispatcher } = worker({ caFile: certs.ca, certFile: certs.client.cert, keyFile: certs.client.key });
    const runs = [await completeRun(api), await completeRun(api)];
    // one call per pass: the second pass finds the first one's connection idle in the pool
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET next_attempt_at = next_attempt_at + interval '1 hour' WHERE dispatch_id = $1`, [
      runs[1]!.dispatchId,
    ]);
    expect(await dispatcher.dispatchOnce()).toBe(1);
    await api.sql.query(`UPDATE nifi_ops.load_dispatch SET next_attempt_at = clock_timestamp() WHERE dispatch_id = $1`, [
      runs[1]!.dispatchId,
    ]);
    expect(await dispatcher.dispatchOnce()).toBe(1);

    const [first, second] = mtlsReceiver.calls;
    expect([first!.clientCertificate, second!.clientCertificate]).toEqual(Array(2).fill(await fingerprintOf(certs.client.cert)));
    expect(second!.remotePort).toBe(first!.remotePort);
    for (const run of runs) expect(await dispatchRow(api, run.dispatchId)).toMatchObject({ status: 'SENT', last_http_status: 202 });
  });

  it('backs off, as after a network error, when the receiver certificate is not from caFile', async () => {
    const { dispatcher } = worker({ caFile: certs.untrustedCa, certFile: certs.client.cert, keyFile: certs.client.key });
    const run = await completeRun(api);
    expect(await dispatcher.dispatchOnce()).toBe(1);
    expect(mtlsReceiver.calls).toHaveLength(0);
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: null,
      deferred: true,
      last_error: expect.stringContaining('self-signed certificate in certificate chain'),
    });
  });

  it('backs off when the receiver requires a client certificate and nifi.tls has none', async () => {
    const { dispatcher } = worker({ caFile: certs.ca });
    const run = await completeRun(api);
    expect(await dispatcher.dispatchOnce()).toBe(1);
    expect(mtlsReceiver.calls).toHaveLength(0);
    expect(await dispatchRow(api, run.dispatchId)).toMatchObject({
      status: 'PENDING',
      attempt_count: 1,
      last_http_status: null,
      deferred: true,
      last_error: expect.stringContaining('certificate required'),
    });
  });

  it('reloadTls() presents a renewed client certificate on new calls; a broken file keeps the one in use', async () => {
    const live = await mkdtemp(join(certs.dir, 'nifi-live-'));
    const certFile = join(live, 'client.crt');
    const keyFile = join(live, 'client.key');
    await copyFile(certs.client.cert, certFile);
    await copyFile(certs.client.key, keyFile);
    const { dispatcher } = worker({ caFile: certs.ca, certFile, keyFile });
    await completeRun(api);
    await dispatcher.dispatchOnce();

    await copyFile(certs.renewedClient.cert, certFile);
    await copyFile(certs.renewedClient.key, keyFile);
    expect(dispatcher.reloadTls()).toBe(true);
    await completeRun(api);
    await dispatcher.dispatchOnce();

    await writeFile(certFile, 'garbled\n');
    expect(dispatcher.reloadTls()).toBe(false);
    await completeRun(api);
    await dispatcher.dispatchOnce();

    const renewed = await fingerprintOf(certs.renewedClient.cert);
    expect(mtlsReceiver.calls.map((call) => call.clientCertificate)).toEqual([await fingerprintOf(certs.client.cert), renewed, renewed]);
  });

  it('refuses to start with a file it cannot use, naming its key', () => {
    const missing = join(certs.dir, 'missing.pem');
    const config = workerConfig(api, mtlsReceiver, { nifi: { tls: { caFile: missing } } });
    const create = () => createDispatcher({ config, db: api.db, log: quietLog, metrics: createWorkerMetrics(new Registry()) });
    expect(create).toThrow(ConfigError);
    expect(create).toThrow(`config: nifi.tls.caFile: file not found: ${missing}`);
  });
});
