// The traces the spec test replays, chosen by coverage (`npm run spec:choose` writes spec/replay-seeds.json).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPLAY_SEEDS_FILE = join(dirname(fileURLToPath(import.meta.url)), 'replay-seeds.json');

export interface ReplaySeeds {
  /** The length of every trace. */
  steps: number;
  /** How many seeds the choice was made from. */
  candidates: number;
  /** The seeds chosen, each one trace, with the witnesses of spec/coverage.ts it reaches. */
  seeds: Array<{ seed: string; reaches: string[] }>;
  /** The witnesses no candidate reached: the stories must. */
  reachedByNone: string[];
}

export function readReplaySeeds(): ReplaySeeds {
  return JSON.parse(readFileSync(REPLAY_SEEDS_FILE, 'utf8')) as ReplaySeeds;
}
