// lineage.enabled as the database knows it: nifi_ops.lineage_delivery holds its row while lineage is on, and the
// trigger that writes the events (prisma/functions/06_lineage.sql) writes nothing without it. The workers' sweepers
// say what their configuration says on every cycle, so turning lineage on or off takes effect within one cycle.
import type pg from 'pg';
import { asStatements } from '../../db/operation.js';

/** Records lineage.enabled; true when this call changed it. */
export async function setLineageDelivery(sql: pg.Pool, enabled: boolean): Promise<boolean> {
  const { rowCount } = enabled
    ? await sql.query(`INSERT INTO nifi_ops.lineage_delivery DEFAULT VALUES ON CONFLICT DO NOTHING`)
    : await sql.query(`DELETE FROM nifi_ops.lineage_delivery`);
  return (rowCount ?? 0) > 0;
}

export const setLineageDeliveryOperation = asStatements(setLineageDelivery);
