-- The processes of an installation (src/domain/processes/): every `serve`, `work` and `start` registers at
-- start, beats every few seconds and says when it stops, so that the console, the monitor summary and the
-- metrics can tell a worker that stopped beating (WORKER_STALE) and calls nobody delivers (NO_DISPATCHER).
-- A new table: no lock on the ledger's tables.
CREATE TABLE nifi_ops.process_instance (
    instance_id   uuid PRIMARY KEY,
    role          varchar(10) NOT NULL CONSTRAINT ck_process_instance_role CHECK (role IN ('serve', 'work', 'start')),
    host          varchar(255) NOT NULL,
    pid           integer NOT NULL,
    version       varchar(50) NOT NULL,
    dispatcher    boolean NOT NULL,
    sweeper       boolean NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_seen_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    last_sweep_at timestamptz,
    stopped_at    timestamptz
);
