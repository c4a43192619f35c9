// The Date scalar's calendar date is the gate's: one definition (domain/gate/business-date.ts).
import { describe, expect, it } from 'vitest';
import { calendarDate } from '../domain/gate/business-date.js';
import { parseDate, parseDateTime } from './scalars.js';

const reason = (parse: () => unknown): string | null => {
  try {
    parse();
    return null;
  } catch (error) {
    return (error as { extensions: { details: { reason: string } } }).extensions.details.reason;
  }
};

describe('Date scalar', () => {
  it.each([
    ['2024-02-29', null],
    ['0001-01-01', null],
    ['2023-02-29', '2023-02-29 is not a calendar date'],
    ['2026-04-31', '2026-04-31 is not a calendar date'],
    ['2026-13-01', '2026-13-01 is not a calendar date'],
    ['0000-01-01', '0000-01-01 is not a calendar date'],
    ['2026-1-01', 'must be YYYY-MM-DD'],
    ['2026-01-01T00:00:00Z', 'must be YYYY-MM-DD'],
  ])('%s: accepted exactly when the gate takes it for a calendar date', (text, expected) => {
    expect(reason(() => parseDate(text))).toBe(expected);
    expect(calendarDate(text)).toBe(expected === null ? text : null);
  });

  it('refuses what is not a string, and DateTime checks its day the same way', () => {
    expect(reason(() => parseDate(20260101))).toBe('must be YYYY-MM-DD');
    expect(reason(() => parseDateTime('2026-02-30T06:30:00+09:00'))).toBe('2026-02-30 is not a calendar date');
    expect(parseDateTime('2024-02-29T06:30:00+09:00').toISOString()).toBe('2024-02-28T21:30:00.000Z');
  });
});
