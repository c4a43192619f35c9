-- load-control: no-transaction
-- The constraint 0032 added NOT VALID, validated now: VALIDATE CONSTRAINT scans the gate table under SHARE UPDATE
-- EXCLUSIVE, which lets its reads and writes go on.
ALTER TABLE nifi_ops.gate VALIDATE CONSTRAINT ck_gate_notify_format;
