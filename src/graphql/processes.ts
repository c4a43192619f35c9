import { listProcesses, PROCESS_ROLES, PROCESS_STATES, type ProcessInstance } from '../domain/processes/processes.js';
import { builder } from './builder.js';
import { ANY_ROLE } from './roles.js';

const ProcessRoleEnum = builder.enumType('ProcessRole', { values: PROCESS_ROLES });
const ProcessStateEnum = builder.enumType('ProcessState', {
  values: PROCESS_STATES,
  description: 'LIVE: beat within the last minute; STALE: stopped beating without saying it stopped; STOPPED: stopped cleanly.',
});

const ProcessInstanceRef = builder.objectRef<ProcessInstance>('ProcessInstance').implement({
  description: 'A serve, work or start process of this installation, as its heartbeat last recorded it.',
  fields: (t) => ({
    instanceId: t.field({ type: 'UUID', resolve: (p) => p.instanceId }),
    role: t.field({ type: ProcessRoleEnum, resolve: (p) => p.role }),
    host: t.exposeString('host'),
    pid: t.exposeInt('pid'),
    version: t.exposeString('version'),
    dispatcher: t.exposeBoolean('dispatcher', { description: 'It delivers calls to NiFi.' }),
    sweeper: t.exposeBoolean('sweeper'),
    state: t.field({ type: ProcessStateEnum, resolve: (p) => p.state }),
    startedAt: t.field({ type: 'DateTime', resolve: (p) => p.startedAt }),
    lastSeenAt: t.field({ type: 'DateTime', resolve: (p) => p.lastSeenAt }),
    lastSweepAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.lastSweepAt }),
    stoppedAt: t.field({ type: 'DateTime', nullable: true, resolve: (p) => p.stoppedAt }),
  }),
});

builder.queryField('processes', (t) =>
  t.field({
    type: [ProcessInstanceRef],
    extensions: ANY_ROLE,
    description: 'Every process seen within the last 7 days: live ones first.',
    // an installation runs a few processes; restarts within the week add a row each
    complexity: { field: 1, multiplier: 100 },
    resolve: (_root, _args, ctx) => listProcesses(ctx.services.db.prisma),
  }),
);
