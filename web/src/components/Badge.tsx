import { tone } from '../states';

/** A status as text on a coloured pill: the text carries the meaning, the colour helps scanning. */
export function Badge({ status, label }: { status: string | null | undefined; label?: string }) {
  if (!status) return <span className="muted">—</span>;
  return <span className={`badge tone-${tone(status)}`}>{label ?? status.replaceAll('_', ' ')}</span>;
}
