-- The Hive query id PG-50 reports with its publish result (reportPublishResult.queryId): what an operator
-- resolving PUBLISH_UNKNOWN looks up in HiveServer2 to learn whether the INSERT OVERWRITE committed.
-- A nullable column without a default is a catalog change only (no table rewrite); the lock timeout keeps
-- the ALTER from queueing behind a long transaction on load_run and stalling every request behind it.
SET LOCAL lock_timeout = '5s';
ALTER TABLE nifi_ops.load_run ADD COLUMN publish_query_id varchar(200);
