-- The second witness: a worker's batch of executions ($1 job ids, $3
-- attempts), written from its own connection outside any claim transaction.
-- $4 names the batch, so a batch whose answer a lost connection swallowed is
-- written again in place of itself, never twice (statements::effects_again).
INSERT INTO effects (job_id, worker, attempt, batch)
SELECT j, $2::int4, a, $4::int8 FROM unnest($1::int8[], $3::int4[]) AS u(j, a)
