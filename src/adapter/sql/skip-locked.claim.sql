-- Seed 001: lock the picked rows in a CTE, then update through it.
WITH next AS (
  SELECT id FROM jobs
  WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
  ORDER BY run_at
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
