// What GraphQL is told of an input field, read from the zod schema that parses it.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as f from '../../../src/domain/fields.js';
import { RUN_STATUSES } from '../../../src/domain/states.js';
import { RunStatusEnum } from '../../../src/graphql/enums.js';
import { date, decimal, inputEnum, inputFieldOptions, inputObject, uuid } from '../../../src/graphql/inputs.js';

describe('input fields derived from their zod schema', () => {
  it.each([
    ['a scalar carried as a string', uuid, { type: 'UUID', required: true }],
    ['an optional one', f.optional(decimal), { type: 'Decimal', required: false }],
    ['a calendar date', date, { type: 'Date', required: true }],
    ['text', f.requiredText(80), { type: 'String', required: true }],
    ['a Long count', f.count, { type: 'Long', required: true }],
    ['a 32-bit count sent as a Long', f.int32(0), { type: 'Long', required: true }],
    ['an instant', z.date(), { type: 'DateTime', required: true }],
    ['a JSON object, absent meaning {}', f.optional(f.jsonObject, {}), { type: 'JSON', required: false }],
    ['an enum with no GraphQL enum', z.enum(['STAGING', 'TARGET']), { type: 'String', required: true }],
    ['a GraphQL enum', inputEnum(RunStatusEnum, RUN_STATUSES), { type: RunStatusEnum, required: true }],
    ['a default', f.withDefault(z.boolean(), false), { type: 'Boolean', required: false, defaultValue: false }],
    ['a Long default', f.withDefault(f.count, 0n), { type: 'Long', required: false, defaultValue: 0n }],
    ['an argument with a default', z.number().int().min(1).default(50), { type: 'Int', required: false, defaultValue: 50 }],
    ['a list of required items', z.array(z.string()).min(1), { type: ['String'], required: { list: true, items: true } }],
  ])('%s', (_what, schema, expected) => {
    expect(inputFieldOptions('field', schema)).toEqual(expected);
  });

  it('takes the description from outside the optional wrapper or from the field itself, keeping a scalar type through describe()', () => {
    expect(inputFieldOptions('idempotencyKey', f.optional(f.requiredText(200)).describe('the FlowFile uuid'))).toEqual({
      type: 'String',
      required: false,
      description: 'the FlowFile uuid',
    });
    expect(inputFieldOptions('publishToken', uuid.describe('reused on retries'))).toEqual({
      type: 'UUID',
      required: true,
      description: 'reused on retries',
    });
  });

  it('types a named input object by its name, and refuses an object without one', () => {
    const partition = inputObject('InputsTestPartition', z.object({ partitionId: f.partitionId }));
    const { type } = inputFieldOptions('partitions', z.array(partition));
    expect(type).toHaveLength(1);
    expect((type as [{ name: string }])[0].name).toBe('InputsTestPartition');
    expect(() => inputFieldOptions('partition', z.object({ partitionId: f.partitionId }))).toThrow(
      'partition: no GraphQL input type for a zod object; declare it with inputObject or inputEnum',
    );
  });
});
