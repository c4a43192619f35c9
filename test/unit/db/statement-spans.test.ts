import { describe, expect, it } from 'vitest';
import { statementText } from '../../../src/db/statement-spans.js';

describe('statementText', () => {
  it('keeps placeholders and replaces the literals written into a statement, quotes doubled inside them included', () => {
    expect(statementText("UPDATE nifi_ops.load_dispatch SET status = 'SENT', last_error = 'it''s gone' WHERE dispatch_id = $1")).toBe(
      "UPDATE nifi_ops.load_dispatch SET status = '?', last_error = '?' WHERE dispatch_id = $1",
    );
    expect(statementText('SELECT pg_notify($1, $2)')).toBe('SELECT pg_notify($1, $2)');
  });

  it('cuts a long statement at 2,000 characters', () => {
    const text = statementText(`SELECT ${'x, '.repeat(2000)}1`);
    expect(text).toHaveLength(2001);
    expect(text.endsWith('…')).toBe(true);
  });

  it('replaces an unterminated literal up to the end rather than keeping what follows its quote', () => {
    expect(statementText("SELECT 'secret")).toBe("SELECT '?'");
    expect(statementText("SELECT 'a', 'secret")).toBe("SELECT '?', '?'");
  });
});
