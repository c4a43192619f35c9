// The GraphQL documents of the simulated operator and of the simulator's own observations. What the NiFi flows
// send is the kit's (nifi/requests), rendered by SimClient.nifi.

export const RESOLVE_UNKNOWN = `mutation($input: ResolveUnknownInput!) { resolveUnknown(input: $input) { runStatus changed } }`;
export const RESEND_DISPATCH = `mutation($input: ResendDispatchInput!) { resendDispatch(input: $input) { dispatchId status } }`;
export const CANCEL_RUN = `mutation($input: CancelRunInput!) { cancelRun(input: $input) { runStatus changed } }`;
export const DEFINE_GATE = `mutation($input: DefineGateInput!) { defineGate(input: $input) { changed } }`;
export const RUN_STATUS = `query($runId: UUID!) { run(runId: $runId) { status } }`;
export const MONITOR_ALERTS = `query { monitorSummary(alertLimit: 500) { alerts { kind runId status dispatchId partitionId } } }`;
