import net from 'node:net';
import { expect } from 'vitest';

export interface AnnouncedBody {
  /** The raw answer. */
  answer: string;
  /** Resolves when the server has closed the connection. */
  closed: Promise<void>;
}

/**
 * Sends the request line and headers and only `sent` bytes of a body announced as `length`; resolves with the
 * raw answer as soon as it holds the 401, leaving the connection open (close it with `socket.destroy()`).
 */
export function announceBody(
  port: number,
  headers: Record<string, string>,
  length: number,
  sent: string,
): Promise<AnnouncedBody & { socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const closed = new Promise<void>((resolveClosed) => socket.once('close', () => resolveClosed()));
    let answer = '';
    const answered = () => resolve({ answer, closed, socket });
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n\r\n') && answer.includes('"UNAUTHENTICATED"')) answered();
    });
    socket.on('error', reject);
    socket.on('close', answered);
    const lines = Object.entries({
      Host: 'localhost',
      'Content-Type': 'application/json',
      'Content-Length': String(length),
      ...headers,
    }).map(([k, v]) => `${k}: ${v}`);
    socket.write(`POST /graphql HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n${sent}`);
  });
}

/** The raw answer announceBody got: a 401 decided from the headers, before the body came. */
export function expectUnauthenticatedAnswer(answer: string): void {
  expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  expect(answer.toLowerCase()).toContain('www-authenticate: bearer');
  expect(answer.toLowerCase()).toContain('x-error-code: unauthenticated');
}
