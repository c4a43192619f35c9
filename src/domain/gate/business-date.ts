// A business date is a real calendar date written YYYY-MM-DD. It is always given explicitly: nothing in
// the gate derives it from a start time or from the clock. The one definition of a calendar date: the Date and
// DateTime scalars and the purge command check theirs here too, and the one pattern of an instant.

const PATTERN = /^(\d{4})-(\d{2})-(\d{2})$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Why text is not a calendar date written YYYY-MM-DD (2026-02-30 is not one), or null when it is one. */
export function calendarDateProblem(text: string): 'must be YYYY-MM-DD' | 'is not a calendar date' | null {
  const match = PATTERN.exec(text);
  if (!match) return 'must be YYYY-MM-DD';
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const real = year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
  return real ? null : 'is not a calendar date';
}

/** The text when it is a calendar date, else null. */
export function calendarDate(text: string): string | null {
  return calendarDateProblem(text) === null ? text : null;
}

/**
 * An instant written ISO-8601 with its UTC offset (2026-10-23T06:30:00+09:00, seconds and fractions
 * optional). Without an offset it is not one: which instant it means would depend on the machine's zone.
 * The DateTime scalar and the purge command's --before take theirs by it; the day must also be a calendar date.
 */
export const INSTANT_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** A `date` column as Prisma reads it (midnight UTC) written as the calendar date it stands for. */
export function dateOfColumn(value: Date): string {
  return value.toISOString().slice(0, 10);
}
