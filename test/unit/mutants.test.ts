// The mutant catalogue stays applicable as the code moves: each mutant's text occurs once in its file, and the
// tests named to kill it exist. Whether they do kill it is `npm run mutants`' job (it runs each one's tests).
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MUTANTS, applyMutant } from '../../spec/mutants.js';

describe('the mutant catalogue', () => {
  it('has at least 15 mutants with unique ids', () => {
    expect(MUTANTS.length).toBeGreaterThanOrEqual(15);
    expect(new Set(MUTANTS.map((m) => m.id)).size).toBe(MUTANTS.length);
  });

  it.each(MUTANTS.map((m) => [m.id, m] as const))('%s applies to its file once and changes it', (_id, mutant) => {
    const source = readFileSync(mutant.file, 'utf8');
    const mutated = applyMutant(source, mutant);
    expect(mutated).not.toBe(source);
    for (const test of mutant.tests) expect(existsSync(test), test).toBe(true);
  });

  it('refuses a mutant whose text is not in the file, or is there twice', () => {
    const mutant = { ...MUTANTS[0]!, find: 'x' };
    expect(() => applyMutant('no match', mutant)).toThrow(/exactly once/);
    expect(() => applyMutant('x x', mutant)).toThrow(/exactly once/);
  });
});
