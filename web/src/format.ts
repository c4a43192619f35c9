// Display helpers: times in the browser's zone, elapsed H:MM:SS, counts with grouping.

const pad = (n: number) => String(n).padStart(2, '0');

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
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

/** The day of an instant as YYYY-MM-DD in the browser's zone. */
export function formatDate(d: Date): string {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

/** Today as YYYY-MM-DD in the browser's zone (a default only: business dates are always explicit). */
export const today = (): string => formatDate(new Date());
