-- queuebench SQL enqueue for pg-boss 10 (format: ../CONTRACT.md, "enqueue.sql").
-- $1 = queue name (text), $2 = payload (JSON text); {schema} = QUEUEBENCH_SCHEMA.
-- pg-boss documents plain INSERTs into its job table for non-Node producers.
-- The queue must exist (setup creates it). Column defaults apply, not the
-- queue's options: retry_limit 2, retry_delay 0, expire_in 15 minutes,
-- keep_until now() + 14 days.
INSERT INTO {schema}.job (name, data) VALUES ($1, $2::jsonb) RETURNING id::text
