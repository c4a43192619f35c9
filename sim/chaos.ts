// The infrastructure faults, on a seeded schedule: API and worker processes killed with SIGKILL and
// restarted on their ports, and every connection of theirs terminated by pg_terminate_backend.
import type { Cluster, ManagedProcess } from './cluster.js';
import type { World } from './world.js';

export interface Chaos {
  /** Stops scheduling faults and waits until every killed process is back. */
  stop(): Promise<void>;
  /** Restarts that failed: the process did not come back. */
  failures: string[];
}

export function startChaos(world: World, cluster: Cluster): Chaos {
  let stopped = false;
  const wakers = new Set<() => void>();
  const failures: string[] = [];
  const nap = (ms: number) =>
    new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      wakers.add(wake);
    });

  const every = (
    fault: 'api-kill' | 'worker-kill' | 'pg-terminate',
    minMs: number,
    maxMs: number,
    act: (random: () => number) => Promise<unknown>,
  ) => {
    if (!world.options.faults.has(fault)) return Promise.resolve();
    const random = world.dice.stream(fault);
    return (async () => {
      for (;;) {
        await nap(minMs + random() * (maxMs - minMs));
        if (stopped) return;
        try {
          await act(random);
        } catch (error) {
          failures.push(`${fault}: ${(error as Error).message}`);
        }
      }
    })();
  };
  const restart = (processes: ManagedProcess[], random: () => number) =>
    cluster.restart(processes[Math.floor(random() * processes.length)]!, 300 + Math.round(random() * 900));

  const loops = [
    every('api-kill', 4_000, 9_000, (random) => restart(cluster.apis, random)),
    every('worker-kill', 5_000, 11_000, (random) => restart(cluster.workers, random)),
    every('pg-terminate', 2_500, 6_000, () => cluster.terminateConnections()),
  ];
  return {
    failures,
    async stop() {
      stopped = true;
      for (const wake of [...wakers]) wake();
      await Promise.all(loops);
    },
  };
}
