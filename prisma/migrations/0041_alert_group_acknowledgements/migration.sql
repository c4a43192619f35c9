-- Alert groups (issue 32, point 3): the alerts present now are grouped by their cause — a webhook receiver, a
-- gate's consumer, a job, or the processes — and an operator acknowledges a group with a note, or snoozes it
-- until a time. One row per group ever acknowledged or snoozed, keyed by the group's key
-- (src/domain/monitor/alert-groups.ts: "KIND:CAUSE_TYPE:cause"). The acknowledgement covers the alerts present
-- when it was made (acknowledged_members: the md5 of each one's identity): an alert of the group not among them
-- re-raises the group. Who did it and why is also in the event log (ALERT_GROUP_ACKNOWLEDGED, ALERT_GROUP_SNOOZED).
--
-- Online-safe: a new table only. The lock timeout keeps nothing waiting behind a long transaction.
SET LOCAL lock_timeout = '5s';

CREATE TABLE nifi_ops.alert_group_ack (
    group_key            varchar(300)  PRIMARY KEY,
    acknowledged_at      timestamptz,
    acknowledged_by      varchar(200),
    acknowledged_note    varchar(2000),
    acknowledged_members text[]        NOT NULL DEFAULT '{}',
    snoozed_until        timestamptz,
    snoozed_at           timestamptz,
    snoozed_by           varchar(200),
    snoozed_note         varchar(2000),
    CONSTRAINT ck_alert_group_ack_acknowledged CHECK ((acknowledged_at IS NULL) = (acknowledged_by IS NULL)),
    CONSTRAINT ck_alert_group_ack_snoozed CHECK ((snoozed_until IS NULL) = (snoozed_by IS NULL))
);
