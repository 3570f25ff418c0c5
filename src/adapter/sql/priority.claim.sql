-- Strict priority (seed 000, section 6): the highest priority first, oldest
-- first within a priority. While higher-priority jobs keep arriving faster
-- than the workers drain them, lower ones wait forever: this is the strategy
-- the starvation check exists for. jobs_priority_idx serves the ORDER BY.
WITH next AS (
  SELECT id FROM jobs
  WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
  ORDER BY priority DESC, run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
UPDATE jobs j
SET status = 'running',
    attempts = j.attempts + 1,
    locked_until = now() + make_interval(secs => :lease_secs),
    claim_token = gen_random_uuid(),
    locked_by = :worker
FROM next
WHERE j.id = next.id
RETURNING j.id, j.attempts, j.claim_token, j.class
