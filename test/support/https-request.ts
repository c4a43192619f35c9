// One HTTPS request on a fresh connection (fetch takes no CA or client certificate), reporting the
// certificate the server presented.
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { CertificateFiles } from './certificates.js';

export interface HttpsRequestOptions {
  /** The CA file to trust. */
  ca: string;
  /** The client certificate to present, if any. */
  clientCert?: CertificateFiles;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface HttpsResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  /** SHA-256 fingerprint of the certificate the server presented. */
  serverFingerprint: string;
}

export function httpsRequest(url: string, options: HttpsRequestOptions): Promise<HttpsResponse> {
  return new Promise((resolve, reject) => {
    const request = https.request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
        ca: readFileSync(options.ca),
        cert: options.clientCert && readFileSync(options.clientCert.cert),
        key: options.clientCert && readFileSync(options.clientCert.key),
      },
      (response) => {
        const serverFingerprint = (response.socket as TLSSocket).getPeerCertificate().fingerprint256;
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            serverFingerprint,
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(options.body);
  });
}
