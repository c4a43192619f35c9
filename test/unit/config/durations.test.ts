import { describe, it, expect } from 'vitest';
import { formatDuration, parseDuration } from '../../../src/config/durations.js';

describe('parseDuration', () => {
  it('reads numbers as seconds', () => {
    expect(parseDuration(90)).toBe(90_000);
    expect(parseDuration(1.5)).toBe(1_500);
    expect(parseDuration(0)).toBe(0);
  });

  it('reads decimal strings as seconds', () => {
    expect(parseDuration('90')).toBe(90_000);
    expect(parseDuration('1.5')).toBe(1_500);
    expect(parseDuration(' 2 ')).toBe(2_000);
  });

  it('reads ISO-8601 durations', () => {
    expect(parseDuration('PT90M')).toBe(90 * 60_000);
    expect(parseDuration('P3D')).toBe(3 * 86_400_000);
    expect(parseDuration('PT1H30M')).toBe(90 * 60_000);
    expect(parseDuration('PT0.5S')).toBe(500);
    expect(parseDuration('P1DT2H')).toBe(26 * 3_600_000);
    expect(parseDuration('P2W')).toBe(14 * 86_400_000);
    expect(parseDuration('pt2s')).toBe(2_000);
    expect(parseDuration('PT1.1S')).toBe(1_100);
  });

  it.each(['PT', 'P', 'P1DT', '', 'abc', '1h', '-1', '+1', '1e3', 'PT1H2', 'PT1S1M', 'P1.5'])('refuses %j', (value) => {
    expect(() => parseDuration(value)).toThrow(/invalid duration/);
  });

  it.each([-1, Number.NaN, Number.POSITIVE_INFINITY, null, undefined, true, {}, []])('refuses %s', (value) => {
    expect(() => parseDuration(value)).toThrow(/invalid duration/);
  });

  it('refuses years and months as ambiguous, pointing to PT1M for minutes', () => {
    expect(() => parseDuration('P1Y')).toThrow(/years and months/);
    expect(() => parseDuration('P1M')).toThrow(/PT1M/);
    expect(() => parseDuration('P1Y2M3DT4H')).toThrow(/years and months/);
  });

  it('refuses values too large to count in milliseconds', () => {
    expect(() => parseDuration('P999999999999D')).toThrow(/too large/);
  });
});

describe('formatDuration', () => {
  it('renders ISO-8601', () => {
    expect(formatDuration(3_600_000)).toBe('PT1H');
    expect(formatDuration(90 * 60_000)).toBe('PT1H30M');
    expect(formatDuration(3 * 86_400_000)).toBe('P3D');
    expect(formatDuration(26 * 3_600_000)).toBe('P1DT2H');
    expect(formatDuration(500)).toBe('PT0.5S');
    expect(formatDuration(0)).toBe('PT0S');
  });

  it('round-trips through parseDuration', () => {
    for (const ms of [1, 999, 61_001, 5_400_000, 2 ** 31 - 1, 15 * 86_400_000 + 1]) {
      expect(parseDuration(formatDuration(ms))).toBe(ms);
    }
  });
});
