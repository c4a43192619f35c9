import { Prisma } from '../../generated/prisma/client.js';
import { DISPATCH_WAITING_RUN_STATUS, REISSUE_WAITING_PARTITION_STATUS, START_LOAD_WAITING_DATE_STATUS } from '../states.js';

/** What the worker asking is configured to deliver besides NiFi's and the gates' calls. */
export interface ConfiguredReceivers {
  /** The names alerts.webhooks configures. */
  alertReceivers: readonly string[];
  /** lineage.enabled. */
  lineage: boolean;
}

/**
 * SQL condition: the call is still wanted (ref §2.3 "run still waiting"; a GATE_READY call while its gate has a
 * receiver, which for an orchestrator (notify_format set) is a ready decision's only: a gate that became an
 * Airflow or Dagster receiver while a withdrawal waited does not send it; an ALERT_WEBHOOK call while its receiver
 * is among the configured alert receivers; a LINEAGE_EVENT while lineage is enabled, whatever became of its run; a
 * START_LOAD call while its backfill date is STARTING). Written over the aliases `d` (load_dispatch), `r` (its run),
 * `p` (its partition), `g` (its gate) and `bd` (its backfill date), each LEFT JOINed: a run's call has no gate, a
 * gate's call no run.
 */
export function stillWaiting({ alertReceivers, lineage }: ConfiguredReceivers): Prisma.Sql {
  return Prisma.sql`(
  (d.dispatch_type = 'VALIDATE_RUN' AND r.status = ${DISPATCH_WAITING_RUN_STATUS.VALIDATE_RUN})
  OR (d.dispatch_type = 'REISSUE_PARTITION' AND r.status = ${DISPATCH_WAITING_RUN_STATUS.REISSUE_PARTITION}
      AND p.status IS NOT DISTINCT FROM ${REISSUE_WAITING_PARTITION_STATUS})
  OR (d.dispatch_type = 'GATE_READY' AND g.notify_url IS NOT NULL
      AND (g.notify_format IS NULL OR EXISTS (
          SELECT 1 FROM nifi_ops.gate_readiness_decision dec
           WHERE dec.consumer = d.consumer AND dec.business_date = d.business_date AND dec.version = d.readiness_version
             AND dec.ready)))
  OR (d.dispatch_type = 'ALERT_WEBHOOK' AND d.receiver = ANY(${[...alertReceivers]}::text[]))
  OR (d.dispatch_type = 'LINEAGE_EVENT' AND ${lineage}::boolean)
  OR (d.dispatch_type = 'START_LOAD' AND bd.status = ${START_LOAD_WAITING_DATE_STATUS}))`;
}

/** The joins stillWaiting reads, after `FROM nifi_ops.load_dispatch d`. */
export const DISPATCH_SUBJECTS = Prisma.sql`
  LEFT JOIN nifi_ops.load_run r ON r.run_id = d.run_id
  LEFT JOIN nifi_ops.load_partition p ON p.run_id = d.run_id AND p.partition_id = d.partition_id
  LEFT JOIN nifi_ops.gate g ON g.consumer = d.consumer
  LEFT JOIN nifi_ops.load_backfill_date bd ON bd.backfill_id = d.backfill_id AND bd.business_date = d.business_date`;
