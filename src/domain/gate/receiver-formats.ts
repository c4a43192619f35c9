// The formats a gate's receiver takes its readiness decisions in: Load Control's own body (GENERIC), an Airflow 3
// asset event, or a Dagster asset materialization. In the ledger, gate.notify_format is NULL for GENERIC.

export const GATE_RECEIVER_FORMATS = ['GENERIC', 'AIRFLOW', 'DAGSTER'] as const;
export type GateReceiverFormat = (typeof GATE_RECEIVER_FORMATS)[number];
export type OrchestratorFormat = Exclude<GateReceiverFormat, 'GENERIC'>;

/**
 * What names the orchestrator's asset (gate.notify_asset; ck_gate_notify_format says the same). Airflow's
 * `POST /api/v2/assets/events` takes the asset's integer id (at most 15 digits: a JSON number that stays exact);
 * Dagster's `/report_asset_materialization/{asset_key}` an asset key whose parts are joined by "/", each part a
 * Dagster name ([A-Za-z0-9_]).
 */
export const ORCHESTRATOR_ASSET: Record<OrchestratorFormat, { pattern: RegExp; description: string }> = {
  AIRFLOW: { pattern: /^[1-9][0-9]{0,14}$/, description: 'an Airflow asset id (a positive integer, at most 15 digits)' },
  DAGSTER: {
    pattern: /^[A-Za-z0-9_]{1,100}(\/[A-Za-z0-9_]{1,100}){0,9}$/,
    description: 'a Dagster asset key: 1 to 10 parts of [A-Za-z0-9_] joined by "/"',
  },
};

export const formatOfColumn = (column: string | null): GateReceiverFormat => (column === null ? 'GENERIC' : (column as OrchestratorFormat));
export const columnOfFormat = (format: GateReceiverFormat): OrchestratorFormat | null => (format === 'GENERIC' ? null : format);
