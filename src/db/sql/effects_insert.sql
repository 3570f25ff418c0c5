-- The second witness: a worker's batch of executions ($1 job ids, $3
-- attempts), written from its own connection outside any claim transaction.
INSERT INTO effects (job_id, worker, attempt)
SELECT j, $2::int4, a FROM unnest($1::int8[], $3::int4[]) AS u(j, a)
