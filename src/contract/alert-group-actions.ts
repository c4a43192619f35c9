// Acknowledging and snoozing an alert group, as the console (schema/documents/operator.ts types them) and
// `load-control alerts ack|snooze` send them: one text each, since the CLI is built from src/ alone.
export const ACKNOWLEDGE_ALERT_GROUP_TEXT = `
  mutation AcknowledgeAlertGroup($input: AcknowledgeAlertGroupInput!) { acknowledgeAlertGroup(input: $input) { groupKey changed count } }
` as const;

export const SNOOZE_ALERT_GROUP_TEXT = `
  mutation SnoozeAlertGroup($input: SnoozeAlertGroupInput!) { snoozeAlertGroup(input: $input) { groupKey changed until } }
` as const;
