-- Deadline first (seed 000, section 6): jobs ready for longer than
-- :deadline_secs go before everything else, then priority, then age. Below
-- the deadline this is strict priority; a starving class is rescued once its
-- jobs pass the deadline, so its oldest ready age stays near the deadline
-- while the workers have any capacity left for it.
WITH next AS (
  SELECT id FROM jobs
  WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
  ORDER BY (run_at <= now() - make_interval(secs => :deadline_secs)) DESC, priority DESC, run_at
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
