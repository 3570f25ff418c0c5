-- Seed 004: one claim that also takes jobs whose lease has expired, highest
-- priority first. Expired jobs come back without a reaper.
UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    locked_until = now() + make_interval(secs => :lease_secs),
    claim_token = gen_random_uuid(),
    locked_by = :worker
WHERE id IN (
  SELECT id FROM jobs
  WHERE (status = 'queued' AND run_at <= now())
     OR (status = 'running' AND locked_until < now())
  ORDER BY priority DESC, run_at
  LIMIT :batch
  FOR UPDATE SKIP LOCKED
)
RETURNING id, attempts, claim_token, class
