const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;

const SECONDS_PATTERN = /^\d+(?:\.\d+)?$/;
const NUM = String.raw`(\d+(?:\.\d+)?)`;
const ISO_PATTERN = new RegExp(`^P(?:${NUM}W)?(?:${NUM}D)?(?:T(?:${NUM}H)?(?:${NUM}M)?(?:${NUM}S)?)?$`, 'i');
const CALENDAR_PATTERN = /^P[\d.WD]*\d[YM]/i;

const EXPECTED = 'expected ISO-8601 (e.g. PT90M, P3D, PT1H30M) or a non-negative number of seconds';

/** Parses a duration given as seconds (number or decimal string) or ISO-8601; returns milliseconds. */
export function parseDuration(value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`invalid duration ${describe(value)}: ${EXPECTED}`);
    }
    return toMilliseconds(value * SECOND, value);
  }
  if (typeof value !== 'string') {
    throw new Error(`invalid duration ${describe(value)}: ${EXPECTED}`);
  }
  const text = value.trim();
  if (SECONDS_PATTERN.test(text)) {
    return toMilliseconds(Number(text) * SECOND, value);
  }
  if (CALENDAR_PATTERN.test(text)) {
    throw new Error(
      `invalid duration ${describe(value)}: years and months have no fixed length; use days (P30D)` +
        ' or, for minutes, the time part (PT1M)',
    );
  }
  const match = ISO_PATTERN.exec(text);
  const [weeks, days, hours, minutes, seconds] = match ? match.slice(1) : [];
  const hasTimePart = /T/i.test(text);
  const hasDate = weeks !== undefined || days !== undefined;
  const hasTime = hours !== undefined || minutes !== undefined || seconds !== undefined;
  // The regex alone accepts "P", "PT" and "P1DT"; ISO-8601 requires a component after each designator.
  if (!match || (!hasDate && !hasTime) || (hasTimePart && !hasTime)) {
    throw new Error(`invalid duration ${describe(value)}: ${EXPECTED}`);
  }
  const total = amount(weeks) * WEEK + amount(days) * DAY + amount(hours) * HOUR + amount(minutes) * MINUTE + amount(seconds) * SECOND;
  return toMilliseconds(total, value);
}

/** Renders milliseconds as an ISO-8601 duration (days and smaller), e.g. 5_400_000 → "PT1H30M". */
export function formatDuration(ms: number): string {
  const days = Math.floor(ms / DAY);
  const hours = Math.floor((ms % DAY) / HOUR);
  const minutes = Math.floor((ms % HOUR) / MINUTE);
  const seconds = (ms % MINUTE) / SECOND;
  let time = '';
  if (hours) time += `${hours}H`;
  if (minutes) time += `${minutes}M`;
  if (seconds || (!days && !time)) time += `${seconds}S`;
  return `P${days ? `${days}D` : ''}${time ? `T${time}` : ''}`;
}

function amount(component: string | undefined): number {
  return component === undefined ? 0 : Number(component);
}

function toMilliseconds(ms: number, original: unknown): number {
  const rounded = Math.round(ms);
  if (!Number.isSafeInteger(rounded)) {
    throw new Error(`invalid duration ${describe(original)}: too large`);
  }
  return rounded;
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return '(a list)';
  if (typeof value === 'object' && value !== null) return '(a mapping)';
  return String(value);
}
