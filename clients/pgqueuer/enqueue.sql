-- queuebench SQL enqueue for PgQueuer (format: ../CONTRACT.md, "enqueue.sql").
-- $1 = entrypoint (text), $2 = payload (JSON text, stored as bytea); {schema} = QUEUEBENCH_SCHEMA.
-- The same row Queries.enqueue() inserts; the statement trigger sends the NOTIFY.
INSERT INTO {schema}.pgqueuer (priority, entrypoint, payload, status) VALUES (0, $1::text, convert_to($2::text, 'UTF8'), 'queued') RETURNING id::text
