import { describe, expect, it } from 'vitest';
import { decideDelivery } from '../../../src/domain/dispatch/deliver.js';

const policy = { maxAttempts: 3, backoffMin: 5_000, backoffMax: 60_000 };
const response = (httpStatus: number, responseText = '') => ({ httpStatus, responseText });

describe('decideDelivery (ref §5.1, §4.4)', () => {
  it.each([200, 202, 204])('treats %i as received', (status) => {
    expect(decideDelivery(response(status), 1, policy)).toEqual({ action: 'SENT', httpStatus: status });
  });

  it.each([400, 401, 403, 404, 409, 422])('gives up at once on %i, keeping the body as the error', (status) => {
    expect(decideDelivery(response(status, 'no route'), 1, policy)).toEqual({ action: 'DEAD', httpStatus: status, error: 'no route' });
  });

  it.each([301, 307, 408, 425, 429, 500, 502, 503])('retries %i after the backoff of its attempt', (status) => {
    expect(decideDelivery(response(status), 2, policy)).toEqual({
      action: 'RETRY',
      httpStatus: status,
      error: `HTTP ${status}`,
      delayMs: 10_000,
    });
  });

  it('retries a call that got no response', () => {
    expect(decideDelivery({ httpStatus: null, error: 'TypeError: fetch failed: connect ECONNREFUSED' }, 1, policy)).toEqual({
      action: 'RETRY',
      httpStatus: null,
      error: 'TypeError: fetch failed: connect ECONNREFUSED',
      delayMs: 5_000,
    });
  });

  it('gives up on a transient failure once the attempts are used up', () => {
    expect(decideDelivery(response(503, 'busy'), 3, policy)).toEqual({
      action: 'DEAD',
      httpStatus: 503,
      error: 'max attempts reached: busy',
    });
    expect(decideDelivery({ httpStatus: null, error: 'timeout' }, 4, policy)).toEqual({
      action: 'DEAD',
      httpStatus: null,
      error: 'max attempts reached: timeout',
    });
  });

  it('still counts a 2xx on the last attempt as received', () => {
    expect(decideDelivery(response(202), 3, policy)).toEqual({ action: 'SENT', httpStatus: 202 });
  });
});
