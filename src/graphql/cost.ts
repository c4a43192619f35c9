// What a selection costs: every field 1, and a list's sub-selection times the number of items it can hold.
// src/server/query-cost.ts refuses a request whose cost exceeds MAX_QUERY_COST before anything executes.

/**
 * The most a request may cost. The console's run page (every field of up to MAX_PARTITIONS_PER_RUN
 * partitions, 1,000 dispatches, 300 events) costs about 150,000; twenty aliases of a 500-run page cost more.
 */
export const MAX_QUERY_COST = 250_000;

/** The largest page of runs(first). */
export const MAX_RUNS_PAGE = 500;

/** The largest page of Run.partitionPage(first). */
export const MAX_PARTITIONS_PAGE = 500;

/** A manifest plans at most 10,000 partitions (registerManifest's plannedPartitionCount). */
export const MAX_PARTITIONS_PER_RUN = 10_000;

/** Lists whose length no argument bounds: an estimate of their length, for the cost. */
export const LIST_ESTIMATES = { dispatchesPerRun: 1_000, metricsPerRun: 200, default: 10 } as const;

/**
 * A list field paged by an argument: costs as many items as the argument asks for, at most `max` (a larger
 * value is refused by the field itself with 422, so the cost need not count it).
 */
export function pagedCost(argument: string, fallback: number, max: number) {
  return (args: Record<string, unknown>) => {
    const asked = typeof args[argument] === 'number' ? (args[argument] as number) : fallback;
    return { field: 1, multiplier: Math.min(Math.max(asked, 1), max) };
  };
}

/** The largest page of jobs(first). */
export const MAX_JOBS_PAGE = 100;

/** The most runs per job jobs(recentRuns) gives. */
export const MAX_RECENT_RUNS = 50;

/** jobMatrix's bounds: jobs (rows) and business dates (columns). */
export const MAX_MATRIX_JOBS = 20;
export const MAX_MATRIX_DAYS = 31;

/** The largest page of Run.eventPage(first). */
export const MAX_EVENTS_PAGE = 200;
