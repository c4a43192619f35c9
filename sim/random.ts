// Seeded randomness. Every fault decision is a pure function of the seed and the name of what it decides
// ("crash", run 7, partition 0003, attempt 1), so the same seed injects the same faults into the same
// requests however the concurrent flows happen to interleave.

/** FNV-1a, 32 bits. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a small, fast, well-distributed generator of floats in [0, 1). */
export function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Key = ReadonlyArray<string | number>;

export class Dice {
  constructor(readonly seed: number) {}

  /** A float in [0, 1) determined by the seed and the key. */
  roll(...key: Key): number {
    return generator(hash(`${this.seed}|${key.join('|')}`))();
  }

  chance(probability: number, ...key: Key): boolean {
    return probability > 0 && this.roll(...key) < probability;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number, ...key: Key): number {
    return min + Math.floor(this.roll(...key) * (max - min + 1));
  }

  pick<T>(items: readonly T[], ...key: Key): T {
    return items[Math.floor(this.roll(...key) * items.length)]!;
  }

  /** A sequence of values for things that happen over time (the schedule of process kills). */
  stream(...key: Key): () => number {
    return generator(hash(`${this.seed}|stream|${key.join('|')}`));
  }
}
