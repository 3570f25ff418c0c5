-- Priority with aging (seed 000, section 6): a job's effective priority is
-- its priority plus one for every :aging_step_secs it has been ready
-- (since run_at), at most :aging_cap extra. A normal job (priority 0)
-- overtakes a fresh high one (priority 10) after 10 steps of waiting. The
-- cap bounds the boost: a job waiting longer than cap steps stops climbing,
-- so in a sustained overload the gap between classes comes back.
-- The ORDER BY is an expression of the clock, so no index serves it: every
-- ready row is read and sorted on each claim (fine for thousands of ready
-- jobs, not for millions).
WITH next AS (
  SELECT id FROM jobs
  WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
  ORDER BY priority + least(:aging_cap, floor(extract(epoch FROM now() - run_at) / :aging_step_secs)::int8) DESC,
           run_at
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
