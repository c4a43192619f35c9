-- load-control: no-transaction
-- The constraints 0017 added NOT VALID, validated now: VALIDATE CONSTRAINT scans load_dispatch and
-- gate_required_job under SHARE UPDATE EXCLUSIVE, which lets their reads and writes go on. Then at most one
-- GATE_READY call per readiness decision, built concurrently (load_dispatch takes writes meanwhile).
ALTER TABLE nifi_ops.gate_required_job VALIDATE CONSTRAINT ck_gate_required_job_expected_by;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_type;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT ck_load_dispatch_target;
ALTER TABLE nifi_ops.load_dispatch VALIDATE CONSTRAINT fk_load_dispatch_readiness_decision;
DROP INDEX CONCURRENTLY IF EXISTS nifi_ops.uq_load_dispatch_gate_ready;
CREATE UNIQUE INDEX CONCURRENTLY uq_load_dispatch_gate_ready
    ON nifi_ops.load_dispatch (consumer, business_date, readiness_version) WHERE dispatch_type = 'GATE_READY';
