// `npm run ha:cluster -- up [parent folder]` starts the Patroni cluster that test/ha/ runs (deploy/ha/: three etcd
// members, three PostgreSQL 15 members under Patroni, HAProxy on the leader) on loopback ports, leaves it running
// and prints its URL; `npm run ha:cluster -- down [folder]` stops it (the last one started, by default).
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { startHaCluster, stopHaCluster } from '../test/support/ha-cluster.js';

/** Where `up` notes the folder of the cluster it started, for `down`. */
const LAST = '.data/ha-cluster';

const [command, folder] = process.argv.slice(2);
if (command === 'up') {
  const cluster = await startHaCluster(folder);
  await mkdir('.data', { recursive: true });
  await writeFile(LAST, cluster.folder);
  const members = await cluster.members();
  console.log(`Patroni cluster in ${cluster.folder} (configurations and logs there)`);
  for (const m of members) console.log(`  ${m.name}: ${m.role}, ${m.state}`);
  console.log(`DATABASE_URL=${cluster.url()}   (HAProxy, always the leader)`);
  console.log(`patronictl -c ${cluster.folder}/pg1.yml list`);
  console.log(`stop it: npm run ha:cluster -- down`);
} else if (command === 'down') {
  const target = folder ?? (await readFile(LAST, 'utf8').catch(() => undefined));
  if (!target) {
    console.error(`no cluster to stop: give its folder (${LAST} names none)`);
    process.exit(2);
  }
  await stopHaCluster(target);
  if (!folder) await rm(LAST, { force: true });
  console.log(`stopped and removed ${target}`);
} else {
  console.error('usage: npm run ha:cluster -- up [parent folder] | down [folder]');
  process.exit(2);
}
