-- queuebench SQL enqueue for graphile-worker (format: ../CONTRACT.md, "enqueue.sql").
-- $1 = task identifier (text), $2 = payload (JSON text); {schema} = QUEUEBENCH_SCHEMA.
-- add_job() is graphile-worker's documented SQL API; it also sends the NOTIFY
-- that wakes idle workers. No queue_name: jobs in a named queue run one at a time.
SELECT id::text FROM {schema}.add_job($1::text, $2::json)
