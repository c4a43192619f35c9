// The fields every outbox call shows, whoever it is for: a run's (Dispatch) or a gate's (GateDispatch).
import type { DeliveryState } from '../domain/dispatch/deliver.js';
import type { BuilderTypes } from './builder.js';
import { DispatchStatusEnum } from './enums.js';

export function deliveryFields<T extends DeliveryState>(t: PothosSchemaTypes.ObjectFieldBuilder<BuilderTypes, T>) {
  return {
    dispatchId: t.field({ type: 'UUID', resolve: (d) => d.dispatchId }),
    status: t.field({ type: DispatchStatusEnum, resolve: (d) => d.status }),
    attemptCount: t.int({ resolve: (d) => d.attemptCount }),
    nextAttemptAt: t.field({ type: 'DateTime', resolve: (d) => d.nextAttemptAt }),
    lastHttpStatus: t.int({ nullable: true, resolve: (d) => d.lastHttpStatus }),
    lastError: t.string({ nullable: true, resolve: (d) => d.lastError }),
    createdAt: t.field({ type: 'DateTime', resolve: (d) => d.createdAt }),
    ackedAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.ackedAt }),
    deadAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.deadAt }),
    cancelledAt: t.field({ type: 'DateTime', nullable: true, resolve: (d) => d.cancelledAt }),
  };
}
