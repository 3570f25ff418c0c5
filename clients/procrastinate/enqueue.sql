-- queuebench SQL enqueue for procrastinate (format: ../CONTRACT.md, "enqueue.sql").
-- $1 = queue name, also the task name (text), $2 = payload, the task's keyword
-- arguments (JSON text); {schema} = QUEUEBENCH_SCHEMA.
-- procrastinate's functions and triggers name its tables without a schema, so
-- the enqueueing session needs search_path set to the schema:
-- session: SET search_path TO {schema}
SELECT unnest({schema}.procrastinate_defer_jobs_v1(ARRAY[ROW($1::varchar, $1::varchar, 0, NULL, NULL, $2::jsonb, NULL)::{schema}.procrastinate_job_to_defer_v1]))::text
