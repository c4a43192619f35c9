import { describe, expect, it } from 'vitest';
import { parseBefore } from '../../../src/commands/purge.js';

const NOW = new Date('2026-12-01T12:00:00Z');

describe('parseBefore', () => {
  it.each([
    ['2026-09-01', '2026-09-01T00:00:00.000Z'],
    ['2026-09-01T06:30:00Z', '2026-09-01T06:30:00.000Z'],
    ['2026-09-01T06:30Z', '2026-09-01T06:30:00.000Z'],
    ['2026-09-01T06:30:00.250+02:00', '2026-09-01T04:30:00.250Z'],
    ['2026-12-01T12:00:00Z', '2026-12-01T12:00:00.000Z'],
  ])('reads %s as %s', (text, iso) => {
    expect(parseBefore(text, NOW).toISOString()).toBe(iso);
  });

  it.each([
    ['banana', 'is not an ISO date'],
    ['2026-02-30', 'is not an ISO date'],
    ['2026-02-30T00:00:00Z', 'is not an ISO date'],
    ['2026-09-01T25:00:00Z', 'is not an ISO date'],
    ['2026-09-01T06:00:00', 'is not an ISO date'],
    ['1764590400', 'is not an ISO date'],
    ['2026-12-01T12:00:01Z', '2026-12-01T12:00:01.000Z is in the future'],
    ['2999-01-01', '2999-01-01T00:00:00.000Z is in the future'],
  ])('refuses %s', (text, reason) => {
    expect(() => parseBefore(text, NOW)).toThrow(`--before: ${reason.startsWith('is') ? `${JSON.stringify(text)} ${reason}` : reason}`);
  });
});
