import type { ResultOf } from 'gql.tada';
import { useId, useState } from 'react';
import { DEFINE_POOL, SOURCE_POOLS } from '../../../schema/documents/operator.js';
import { useApi, useQuery } from '../api/typed';
import { ReasonDialog } from './ActionDialogs';
import { OperatorButton } from './OperatorButton';
import { type Column, Table } from './Table';

type Pool = NonNullable<ResultOf<typeof SOURCE_POOLS>['sourcePools']>[number];

/** A pool's new limit, and why: the limit takes no slot from a RUNNING partition. */
function LimitDialog({ pool, onDone, onClose }: { pool: Pool; onDone(): void; onClose(): void }) {
  const api = useApi();
  const [limit, setLimit] = useState(String(pool.maxRunning));
  const limitId = useId();
  return (
    <ReasonDialog
      title={`Change the limit of ${pool.name}`}
      confirmLabel="Change limit"
      onClose={onClose}
      onConfirm={async (reason) => {
        await api.request(DEFINE_POOL, { input: { name: pool.name, maxRunning: Number(limit), reason } });
        onDone();
      }}
    >
      <p>
        {pool.running} of {pool.maxRunning} partitions RUNNING now. A lower limit stops no running partition: new claims wait until the use
        is under it. 0 closes the pool.
      </p>
      <label htmlFor={limitId}>Most RUNNING partitions</label>
      <input id={limitId} type="number" min={0} max={100000} step={1} value={limit} onChange={(e) => setLimit(e.target.value)} />
    </ReasonDialog>
  );
}

/** The source pools with their use (README "Source pools"); an operator changes a limit here. */
export function SourcePools() {
  const { data, error, reload } = useQuery(SOURCE_POOLS, {});
  const [editing, setEditing] = useState<Pool | null>(null);
  const pools = data?.sourcePools ?? [];
  const columns: Array<Column<Pool>> = [
    { header: 'Pool', rowHeader: true, cell: (p) => p.name },
    {
      header: 'Running / limit',
      className: 'num',
      testId: 'pool-use',
      cell: (p) => (
        <span className={p.running >= p.maxRunning ? 'attention' : undefined}>
          {p.running} / {p.maxRunning}
        </span>
      ),
    },
    { header: 'Jobs', cell: (p) => (p.jobs.length ? p.jobs.join(', ') : '—') },
    { header: 'Wait when full', cell: (p) => `${p.retryAfterSeconds} s` },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (p) => <OperatorButton onClick={() => setEditing(p)}>Change limit of {p.name}…</OperatorButton>,
    },
  ];
  return (
    <section aria-labelledby="pools-title">
      <h2 id="pools-title">Source pools</h2>
      {error && <p className="error">{error}</p>}
      {data && pools.length === 0 && <p className="muted">No source pools: no job's claims are limited.</p>}
      {pools.length > 0 && <Table columns={columns} rows={pools} rowKey={(p) => p.name} labelledBy="pools-title" />}
      {editing && <LimitDialog pool={editing} onDone={reload} onClose={() => setEditing(null)} />}
    </section>
  );
}
