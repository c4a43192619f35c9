// A partition page's cursor is opaque text naming a partition id: pure, so no database.
import { describe, expect, it } from 'vitest';
import { decodePartitionCursor, encodePartitionCursor } from '../../../src/domain/runs/partition-page.js';

describe('partition cursors', () => {
  it('decode back to the partition id they encode, and nothing else decodes', () => {
    for (const id of ['0000', 'NULL', '0042', 'ü-β', 'x'.repeat(40)]) expect(decodePartitionCursor(encodePartitionCursor(id))).toBe(id);
    expect(decodePartitionCursor(`${encodePartitionCursor('0001')}=`)).toBeNull();
    expect(decodePartitionCursor('')).toBeNull();
  });
});
