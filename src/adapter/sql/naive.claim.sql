-- Seed 001's first mistake: pick the oldest queued job, then update it, in
-- one statement but without a row lock. ARRAY(SELECT ...) is evaluated once
-- (like `id = (SELECT ... LIMIT 1)`); a worker that waited on another's row
-- lock re-checks only `id = ANY(...)` after that commit, so it takes the job too.
UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    locked_until = now() + make_interval(secs => :lease_secs),
    claim_token = gen_random_uuid(),
    locked_by = :worker
WHERE id = ANY (ARRAY(
  SELECT id FROM jobs
  WHERE status = 'queued'
  ORDER BY run_at
  LIMIT :batch
))
RETURNING id, attempts, claim_token, class
