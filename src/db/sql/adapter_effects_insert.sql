-- An adapter's run: a worker's batch of executions ($1 the queue's job ids as
-- text, $2 the harness's numbers, $4 attempts) from its own connection,
-- outside any claim transaction. $5 names the batch (see effects_insert.sql).
INSERT INTO queuebench_effects (job_id, n, worker, attempt, batch)
SELECT j, n, $3::text, a, $5::int8 FROM unnest($1::text[], $2::int8[], $4::int4[]) AS u(j, n, a)
