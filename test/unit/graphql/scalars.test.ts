// The Date scalar's calendar date is the gate's: one definition (domain/gate/business-date.ts). Boolean inputs
// take the strings of NiFi's attributes, coerced before graphql-js reads the variables.
import { parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { calendarDate } from '../../../src/domain/gate/business-date.js';
import { coerceBooleanStrings, parseDate, parseDateTime } from '../../../src/graphql/scalars.js';
import { buildSchema } from '../../../src/graphql/schema.js';

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

describe('Boolean inputs given as strings', () => {
  const schema = buildSchema();
  const coerce = (document: string, variables: Record<string, unknown>) =>
    coerceBooleanStrings(schema, parse(document), undefined, variables);
  const MANIFEST = 'mutation($input: RegisterManifestInput!) { registerManifest(input: $input) { status } }';

  it('become Booleans at Boolean positions only, in nested inputs and in every item of a list', () => {
    const variables = {
      input: {
        runId: 'true',
        partitions: [
          { partitionId: '0000', upperInclusive: 'false', isNullPartition: ' false ' },
          { partitionId: 'NULL', upperInclusive: false, isNullPartition: 'true' },
        ],
        sourceMetrics: { flag: 'true' },
      },
    };
    expect(coerce(MANIFEST, variables)).toBeNull();
    expect(variables.input).toEqual({
      runId: 'true',
      partitions: [
        { partitionId: '0000', upperInclusive: false, isNullPartition: false },
        { partitionId: 'NULL', upperInclusive: false, isNullPartition: true },
      ],
      sourceMetrics: { flag: 'true' },
    });
  });

  it('a single item where a list is expected is coerced as the list of one it stands for', () => {
    const variables = { input: { partitions: { partitionId: '0000', upperInclusive: 'true' } } };
    expect(coerce(MANIFEST, variables)).toBeNull();
    expect(variables.input.partitions).toEqual({ partitionId: '0000', upperInclusive: true });
  });

  it('any other string is INVALID_INPUT naming the field; other types are left to graphql-js', () => {
    const refused = coerce(MANIFEST, { input: { partitions: [{ upperInclusive: 'true' }, { isNullPartition: 'yes' }] } });
    expect(refused?.extensions).toEqual({
      code: 'INVALID_INPUT',
      details: {
        field: 'input.partitions.1.isNullPartition',
        reason: 'must be true or false (a JSON boolean, or the string "true" or "false")',
      },
    });
    const number = { input: { partitions: [{ upperInclusive: 1 }] } };
    expect(coerce(MANIFEST, number)).toBeNull();
    expect(number.input.partitions[0]!.upperInclusive).toBe(1);
    const filter = { active: 'true' };
    expect(coerce('query($active: Boolean) { runs(filter: { activeOnly: $active }) { nodes { runId } } }', filter)).toBeNull();
    expect(filter.active).toBe(true);
  });
});
