import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import tls, { type TLSSocket } from 'node:tls';
import { ConfigError, type Config } from '../config/config.js';
import type { Logger } from '../logging/logger.js';

export type ServerTlsConfig = NonNullable<Config['server']['tls']>;

/** A PEM file and the configuration key that names it (e.g. server.tls.certFile), for messages. */
interface PemFile {
  key: string;
  path: string;
}

export interface PemFiles {
  cert?: PemFile;
  key?: PemFile;
  ca?: PemFile;
}

export interface PemContents {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
}

const CERTIFICATE_BLOCK = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

function readPem(file: PemFile | undefined, problems: string[]): Buffer | undefined {
  if (!file) return undefined;
  try {
    return readFileSync(file.path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    problems.push(
      code === 'ENOENT'
        ? `config: ${file.key}: file not found: ${file.path}`
        : `config: ${file.key}: cannot read ${file.path}: ${(error as Error).message}`,
    );
    return undefined;
  }
}

function check(file: PemFile, what: string, build: () => unknown, problems: string[]): void {
  try {
    build();
  } catch (error) {
    problems.push(`config: ${file.key}: ${file.path} ${what} (${(error as Error).message})`);
  }
}

/**
 * Reads the PEM files and checks that they make a TLS context: each one readable and holding what it
 * should, the key matching the certificate. Throws ConfigError naming the key of every file at fault.
 */
export function readPemFiles(files: PemFiles): PemContents {
  const problems: string[] = [];
  const cert = readPem(files.cert, problems);
  const key = readPem(files.key, problems);
  const ca = readPem(files.ca, problems);
  if (problems.length > 0) throw new ConfigError(problems);

  if (files.cert && cert) check(files.cert, 'is not a PEM certificate', () => tls.createSecureContext({ cert }), problems);
  if (files.key && key) check(files.key, 'is not a PEM private key', () => tls.createSecureContext({ key }), problems);
  // OpenSSL skips what it cannot parse in a CA bundle, which would make every peer untrusted without a word
  if (files.ca && ca) {
    check(
      files.ca,
      'is not a bundle of PEM certificates',
      () => {
        const blocks = ca.toString('latin1').match(CERTIFICATE_BLOCK);
        if (!blocks) throw new Error('no certificate in it');
        for (const block of blocks) new X509Certificate(block);
      },
      problems,
    );
  }
  if (problems.length === 0 && files.cert && files.key && cert && key) {
    check(files.key, `does not match ${files.cert.key}`, () => tls.createSecureContext({ cert, key }), problems);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { cert, key, ca };
}

/** The served certificate's fingerprint and expiry, for the log. */
/** Re-reads the files for a reload; on failure logs `event` with what went wrong and returns null (the files in use stay). */
export function rereadPemFiles(files: PemFiles, log: Logger, event: string): PemContents | null {
  try {
    return readPemFiles(files);
  } catch (error) {
    const problems = error instanceof ConfigError ? error.problems : [String(error)];
    log.error({ problems, effect: 'the files in use stay' }, event);
    return null;
  }
}

export function describeCertificate(cert: Buffer | undefined): { fingerprint256: string; validTo: string } | undefined {
  if (!cert) return undefined;
  const { fingerprint256, validTo } = new X509Certificate(cert);
  return { fingerprint256, validTo };
}

function serverPemFiles(config: ServerTlsConfig): PemFiles {
  return {
    cert: { key: 'server.tls.certFile', path: config.certFile },
    key: { key: 'server.tls.keyFile', path: config.keyFile },
    ca: config.clientCaFile === undefined ? undefined : { key: 'server.tls.clientCaFile', path: config.clientCaFile },
  };
}

export interface HttpServer {
  server: http.Server | https.Server;
  protocol: 'http' | 'https';
  /**
   * Re-reads server.tls's certificate, key and client CA for new connections. False when there is no
   * server.tls or a file will not do: that is logged and the server keeps the ones it has.
   */
  reload(): boolean;
}

/**
 * The server for a request handler: plain HTTP, or HTTPS with server.tls, asking for client
 * certificates with clientCaFile and refusing connections without a valid one with requireClientCert.
 * Throws ConfigError when a file will not do.
 */
export function createHttpServer(config: ServerTlsConfig | undefined, log: Logger, handler: http.RequestListener): HttpServer {
  if (!config) return { server: http.createServer(handler), protocol: 'http', reload: () => false };
  const files = serverPemFiles(config);
  const server = https.createServer(
    {
      ...readPemFiles(files),
      requestCert: config.clientCaFile !== undefined,
      rejectUnauthorized: config.requireClientCert,
    },
    handler,
  );
  // refused handshakes are otherwise invisible: an operator chasing an mTLS setup turns on debug
  server.on('tlsClientError', (error, socket) => {
    // a client certificate that fails verification ends the handshake with a bare reset: the reason is here
    const authorizationError = (socket as TLSSocket).authorizationError ?? undefined;
    log.debug({ remoteAddress: socket.remoteAddress, error: error.message, authorizationError }, 'tls_client_refused');
  });
  return {
    server,
    protocol: 'https',
    reload() {
      const contents = rereadPemFiles(files, log, 'tls_reload_failed');
      if (!contents) return false;
      server.setSecureContext(contents);
      log.info({ certificate: describeCertificate(contents.cert) }, 'tls_reloaded');
      return true;
    },
  };
}
