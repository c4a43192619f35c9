import type { HTMLAttributes, ReactNode } from 'react';

export interface Column<T> {
  /** The column's header text; also its key. */
  header: string;
  cell(row: T): ReactNode;
  /** The header's tooltip. */
  title?: string;
  /** The cells' class (`num` aligns numbers). */
  className?: string;
  /** The cell names its row: a row header (<th scope="row">). */
  rowHeader?: boolean;
  /** The header is for screen readers only (a column of buttons). */
  hiddenHeader?: boolean;
  /** The cells' data-testid. */
  testId?: string;
}

type RowProps = HTMLAttributes<HTMLTableRowElement> & { [data: `data-${string}`]: string };

interface TableProps<T> {
  columns: ReadonlyArray<Column<T>>;
  rows: readonly T[];
  rowKey(row: T): string;
  /** A row's class and data attributes. */
  rowProps?(row: T): RowProps;
  /** The heading that names the table's region, or else its label. */
  labelledBy?: string;
  label?: string;
  caption?: string;
  className?: string;
  /** More classes of the scrolling region (phone layouts hide or restyle it). */
  regionClassName?: string;
  /** Below 640 px wide each row is a card, every cell under its header's name: nothing scrolls sideways. */
  cards?: boolean;
}

/**
 * A table in a region that scrolls sideways on narrow screens; the region is focusable so a keyboard can scroll it
 * (axe: scrollable-region-focusable) and named by its heading or label.
 */
export function Table<T>({
  columns,
  rows,
  rowKey,
  rowProps,
  labelledBy,
  label,
  caption,
  className,
  regionClassName,
  cards,
}: TableProps<T>) {
  const regionClasses = ['table-wrap', regionClassName, cards && 'table-cards'].filter(Boolean).join(' ');
  return (
    <div className={regionClasses} tabIndex={0} role="region" aria-labelledby={labelledBy} aria-label={labelledBy ? undefined : label}>
      <table className={className}>
        {caption && <caption>{caption}</caption>}
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column.header} title={column.title}>
                {column.hiddenHeader ? <span className="visually-hidden">{column.header}</span> : column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={rowKey(row)} {...rowProps?.(row)}>
              {columns.map((column) =>
                column.rowHeader ? (
                  <th
                    scope="row"
                    key={column.header}
                    className={column.className}
                    data-label={column.hiddenHeader ? undefined : column.header}
                  >
                    {column.cell(row)}
                  </th>
                ) : (
                  <td
                    key={column.header}
                    className={column.className}
                    data-testid={column.testId}
                    data-label={column.hiddenHeader ? undefined : column.header}
                  >
                    {column.cell(row)}
                  </td>
                ),
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
