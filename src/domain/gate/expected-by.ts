// A required job's expected-by deadline: a time of day in a named time zone, relative to the business date
// (D+1 06:00 Asia/Seoul: the job's observation for D is expected by 06:00 Seoul time on the day after D). The
// instant it falls on is computed by PostgreSQL's tz database (nifi_ops.observation_deadline, which also says
// how a time the clocks skip or repeat reads); the sweeper checks it (src/domain/sweeper/observation-deadlines.ts).

export interface ExpectedBy {
  /** The deadline falls on the business date plus this many days (0 = the business date itself). */
  daysAfter: number;
  /** HH:MM, 24-hour, wall-clock time in `timeZone`. */
  time: string;
  /** An IANA time zone name, as Intl canonicalises it (asia/seoul → Asia/Seoul). */
  timeZone: string;
}

/** What the sweeper found when the first deadline for a job and business date passed. */
export const DEADLINE_OUTCOMES = ['MET', 'OBSERVATION_MISSING', 'OBSERVATION_LATE'] as const;
export type DeadlineOutcome = (typeof DEADLINE_OUTCOMES)[number];

export const MAX_DAYS_AFTER = 31;

export const TIME_OF_DAY = /^(?:[01][0-9]|2[0-3]):[0-5][0-9]$/;

// Area/Location[/Sub] or a bare name (UTC, EST5EDT, Etc/GMT+5): no offsets (+03:00) or POSIX rules, which
// PostgreSQL would read as zones of their own (with the opposite sign, for POSIX ones)
const TIME_ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]{0,29}(?:\/[A-Za-z0-9_+-]{1,30}){0,2}$/;

/** The canonical name of an IANA time zone, or null when the text is not one. */
export function canonicalTimeZone(name: string): string | null {
  if (name.length > 64 || !TIME_ZONE_NAME.test(name)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

/** D+1 06:00 Asia/Seoul */
export function describeExpectedBy(expectedBy: ExpectedBy): string {
  return `D+${expectedBy.daysAfter} ${expectedBy.time} ${expectedBy.timeZone}`;
}
