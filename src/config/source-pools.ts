// A source pool's fields, declared once: the configuration's `sources.pools` and the API's definePool and
// assignJobToPool parse them with these (README "Source pools").
import { z } from 'zod';

/** A job's key (createRun's jobKey): the pools name jobs in the configuration, below the domain's fields. */
export const JOB_KEY_PATTERN = /^[A-Z0-9_]{1,200}$/;
const POOL_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
export const poolName = z
  .string()
  .regex(POOL_NAME_PATTERN, 'must be 1 to 100 letters, digits, ".", "_" or "-", starting with a letter or digit');
/** 0 closes the pool: its jobs' claims all wait (a source in maintenance). */
export const maxRunning = z.number().int('must be an integer').min(0, 'must be >= 0').max(100_000, 'must be at most 100000');
/** What a claim refused for a full pool is told to wait; the NiFi kit waits this long before it claims again. */
export const retryAfterSeconds = z.number().int('must be an integer').min(1, 'must be >= 1').max(3600, 'must be at most 3600');
export const DEFAULT_RETRY_AFTER_SECONDS = 30;
