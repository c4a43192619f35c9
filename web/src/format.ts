// Display helpers: instants as YYYY-MM-DD HH:MM:SS (24-hour, one format everywhere) in the zone the operator chose
// (the browser's, or UTC; remembered in this browser), elapsed H:MM:SS, counts with grouping.

const pad = (n: number) => String(n).padStart(2, '0');

export const TIME_ZONES = ['local', 'UTC'] as const;
export type TimeZoneChoice = (typeof TIME_ZONES)[number];
const ZONE_KEY = 'lc.timeZone';

function storedZone(): TimeZoneChoice {
  try {
    return localStorage.getItem(ZONE_KEY) === 'UTC' ? 'UTC' : 'local';
  } catch {
    return 'local';
  }
}

let zone: TimeZoneChoice = storedZone();

export const timeZone = (): TimeZoneChoice => zone;

/** Times are shown in `choice` from now on, in this browser's every tab opened later too. */
export function chooseTimeZone(choice: TimeZoneChoice): void {
  zone = choice;
  try {
    localStorage.setItem(ZONE_KEY, choice);
  } catch {
    // a browser that keeps nothing still shows the choice in this tab
  }
}

/** How the zone times are shown in is named: "UTC", or the browser's zone with its offset now. */
export function zoneLabel(choice: TimeZoneChoice = zone): string {
  if (choice === 'UTC') return 'UTC';
  const offset = -new Date().getTimezoneOffset();
  const sign = offset < 0 ? '−' : '+';
  const name = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return `${name} (UTC${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)})`;
}

function fields(d: Date) {
  return zone === 'UTC'
    ? { y: d.getUTCFullYear(), mo: d.getUTCMonth() + 1, d: d.getUTCDate(), h: d.getUTCHours(), mi: d.getUTCMinutes(), s: d.getUTCSeconds() }
    : { y: d.getFullYear(), mo: d.getMonth() + 1, d: d.getDate(), h: d.getHours(), mi: d.getMinutes(), s: d.getSeconds() };
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const t = fields(new Date(iso));
  return `${t.y}-${pad(t.mo)}-${pad(t.d)} ${pad(t.h)}:${pad(t.mi)}:${pad(t.s)}`;
}

/** The time of day of an instant (ms since the epoch), HH:MM:SS. */
export function formatClock(ms: number): string {
  const t = fields(new Date(ms));
  return `${pad(t.h)}:${pad(t.mi)}:${pad(t.s)}`;
}

/** The instant a day (YYYY-MM-DD) starts in the chosen zone; `dayAfter`: the next day's, a range's exclusive end. */
export function dayStart(day: string, dayAfter = false): string {
  const d = new Date(zone === 'UTC' ? `${day}T00:00:00Z` : `${day}T00:00:00`);
  if (zone === 'UTC') d.setUTCDate(d.getUTCDate() + (dayAfter ? 1 : 0));
  else d.setDate(d.getDate() + (dayAfter ? 1 : 0));
  return d.toISOString();
}

export function elapsed(from: string | null | undefined, to: string | null | undefined, now: number = Date.now()): string {
  if (!from) return '—';
  const ms = Math.max(0, (to ? new Date(to).getTime() : now) - new Date(from).getTime());
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 3600)}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`;
}

export function count(value: number | string | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return Number(value).toLocaleString('en-US');
}

export const shortId = (id: string | null | undefined): string => (id ? id.slice(0, 8) : '—');

/** The day of an instant as YYYY-MM-DD in the chosen zone. */
export function formatDate(d: Date): string {
  const t = fields(d);
  return `${t.y}-${pad(t.mo)}-${pad(t.d)}`;
}

/** Today as YYYY-MM-DD in the chosen zone (a default only: business dates are always explicit). */
export const today = (): string => formatDate(new Date());
