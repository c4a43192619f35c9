// How big the tests whose proof only grows with size run: at CI size in `npm test`, at nightly size under
// `npm run test:nightly` (TEST_SIZE=nightly). The CI size still takes every path the nightly one does.
const NIGHTLY = process.env.TEST_SIZE === 'nightly';

/** `ci` in `npm test`, `nightly` under `npm run test:nightly`. */
export function sized<T>(ci: T, nightly: T): T {
  return NIGHTLY ? nightly : ci;
}
