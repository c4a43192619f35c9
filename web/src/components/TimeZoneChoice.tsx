import { useId } from 'react';
import { TIME_ZONES, type TimeZoneChoice as Choice, zoneLabel } from '../format';

/** Which zone every time of the console is shown in: the browser's or UTC, named with its offset. */
export function TimeZoneChoice({ zone, onChange }: { zone: Choice; onChange(zone: Choice): void }) {
  const id = useId();
  return (
    <p className="time-zone">
      <label htmlFor={id}>Times in</label>{' '}
      <select id={id} value={zone} onChange={(e) => onChange(e.target.value as Choice)}>
        {TIME_ZONES.map((z) => (
          <option key={z} value={z}>
            {zoneLabel(z)}
          </option>
        ))}
      </select>
    </p>
  );
}
