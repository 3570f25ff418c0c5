-- Separate worker pools per class (seed 000, section 6): strict priority
-- order, but each worker claims only jobs of its own pool's class, :pool
-- being the name of its [[workers.groups]] entry. A class can no longer
-- take another class's workers, so none starves while its pool keeps up;
-- the price is capacity that cannot move: an idle pool's workers sit idle
-- while another pool's backlog grows.
WITH next AS (
  SELECT id FROM jobs
  WHERE queue = 'default' AND status = 'queued' AND run_at <= now() AND class = :pool
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
