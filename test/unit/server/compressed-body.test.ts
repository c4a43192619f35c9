// Which encoding an Accept-Encoding header allows.
import { describe, expect, it } from 'vitest';
import { acceptedEncoding } from '../../../src/server/compressed-body.js';

describe('acceptedEncoding', () => {
  it('prefers br, then gzip, and honours q=0', () => {
    expect(acceptedEncoding('gzip, deflate, br')).toBe('br');
    expect(acceptedEncoding('gzip, deflate, br;q=0')).toBe('gzip');
    expect(acceptedEncoding('BR;q=0.5, gzip;q=1.0')).toBe('br');
    expect(acceptedEncoding('gzip;q=0, br;q=0')).toBeNull();
    expect(acceptedEncoding('*')).toBe('gzip');
    expect(acceptedEncoding('identity')).toBeNull();
    expect(acceptedEncoding('')).toBeNull();
    expect(acceptedEncoding(undefined)).toBeNull();
  });
});
