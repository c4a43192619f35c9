// Throwaway certificates for the TLS tests, made with openssl in a temporary directory that close()
// removes: a CA, server certificates for 127.0.0.1/localhost, client certificates, and a client
// certificate from a second CA that nobody trusts.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const OPENSSL = '/usr/bin/openssl';
const NEW_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Paths of a certificate and its private key. */
export interface CertificateFiles {
  cert: string;
  key: string;
}

export interface TestCertificates {
  dir: string;
  /** The CA that signed server, renewedServer and client. */
  ca: string;
  server: CertificateFiles;
  /** Another server certificate from the same CA, as after a rotation. */
  renewedServer: CertificateFiles;
  client: CertificateFiles;
  /** Another client certificate from the same CA. */
  renewedClient: CertificateFiles;
  /** A CA that signed nothing the tests trust. */
  untrustedCa: string;
  untrustedClient: CertificateFiles;
  close(): Promise<void>;
}

async function makeCa(dir: string, name: string): Promise<CertificateFiles> {
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  await run(OPENSSL, ['req', '-x509', ...NEW_KEY, '-keyout', files.key, '-out', files.cert, '-days', '1', '-subj', `/CN=${name}`]);
  return files;
}

async function makeSigned(dir: string, name: string, ca: CertificateFiles, extensions: string): Promise<CertificateFiles> {
  const files = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await writeFile(ext, `basicConstraints=critical,CA:FALSE\n${extensions}\n`);
  await run(OPENSSL, ['req', ...NEW_KEY, '-keyout', files.key, '-out', csr, '-subj', `/CN=${name}`]);
  await run(OPENSSL, [
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-CAcreateserial',
    '-days',
    '1',
    '-extfile',
    ext,
    '-out',
    files.cert,
  ]);
  return files;
}

export async function createTestCertificates(): Promise<TestCertificates> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-tls-'));
  const serverExtensions = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth';
  const ca = await makeCa(dir, 'test-ca');
  const untrustedCa = await makeCa(dir, 'untrusted-ca');
  return {
    dir,
    ca: ca.cert,
    server: await makeSigned(dir, 'server', ca, serverExtensions),
    renewedServer: await makeSigned(dir, 'renewed-server', ca, serverExtensions),
    client: await makeSigned(dir, 'client', ca, 'extendedKeyUsage=clientAuth'),
    renewedClient: await makeSigned(dir, 'renewed-client', ca, 'extendedKeyUsage=clientAuth'),
    untrustedCa: untrustedCa.cert,
    untrustedClient: await makeSigned(dir, 'untrusted-client', untrustedCa, 'extendedKeyUsage=clientAuth'),
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/** SHA-256 fingerprint as Node's getPeerCertificate() spells it (AA:BB:…). */
export async function fingerprintOf(certFile: string): Promise<string> {
  return new X509Certificate(await readFile(certFile)).fingerprint256;
}
