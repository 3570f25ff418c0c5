-- Quotas per claim batch (seed 000, section 6): one claim takes up to
-- `workers.quotas` jobs of each class, highest priority then oldest within
-- the class, so every class gets its share of each round trip whatever the
-- others' backlog. PostgreSQL does not allow FOR UPDATE directly under
-- UNION, hence one locking CTE per class and a UNION ALL of their ids.
-- The harness fills the two braced placeholders below from the scenario's
-- quotas at plan time: one CTE per class,
--   qN AS (SELECT id FROM jobs WHERE queue = 'default' AND status = 'queued'
--          AND run_at <= now() AND class = '<class>'
--          ORDER BY priority DESC, run_at LIMIT <quota> FOR UPDATE SKIP LOCKED)
-- and `SELECT id FROM q1 UNION ALL SELECT id FROM q2 …`.
WITH {per_class},
next AS (
  {union}
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
