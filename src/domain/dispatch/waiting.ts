import { Prisma } from '../../generated/prisma/client.js';
import { DISPATCH_WAITING_RUN_STATUS, REISSUE_WAITING_PARTITION_STATUS } from '../states.js';

/**
 * SQL condition: the call is still wanted (ref §2.3 "run still waiting"). Written over the aliases
 * `d` (load_dispatch), `r` (its run) and `p` (its partition, LEFT JOINed on run and partition id).
 */
export const STILL_WAITING = Prisma.sql`(
  (d.dispatch_type = 'VALIDATE_RUN' AND r.status = ${DISPATCH_WAITING_RUN_STATUS.VALIDATE_RUN})
  OR (d.dispatch_type = 'REISSUE_PARTITION' AND r.status = ${DISPATCH_WAITING_RUN_STATUS.REISSUE_PARTITION}
      AND p.status IS NOT DISTINCT FROM ${REISSUE_WAITING_PARTITION_STATUS}))`;
