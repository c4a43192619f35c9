import net from 'node:net';
import { expect } from 'vitest';

/** Sends the request line and headers and only `sent` bytes of a body announced as `length`; resolves with the raw answer. */
export function announceBody(port: number, headers: Record<string, string>, length: number, sent: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n\r\n') && answer.includes('"UNAUTHENTICATED"')) {
        socket.destroy();
        resolve(answer);
      }
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(answer));
    const lines = Object.entries({
      Host: 'localhost',
      'Content-Type': 'application/json',
      'Content-Length': String(length),
      ...headers,
    }).map(([k, v]) => `${k}: ${v}`);
    socket.write(`POST /graphql HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${sent}`);
  });
}

/** The raw answer announceBody got: a 401 decided from the headers, which closes the connection it did not read. */
export function expectUnauthenticatedAnswer(answer: string): void {
  expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  expect(answer.toLowerCase()).toContain('www-authenticate: bearer');
  expect(answer.toLowerCase()).toContain('x-error-code: unauthenticated');
  expect(answer.toLowerCase()).toContain('connection: close');
}
