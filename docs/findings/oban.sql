-- The counterexample by hand (oban): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
WITH staged AS (
  UPDATE oban_jobs SET state = 'available'
  WHERE id IN (SELECT id FROM oban_jobs
               WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz)
               ORDER BY scheduled_at DESC, id DESC
               LIMIT 5000
               FOR UPDATE SKIP LOCKED)
), subset AS (
  SELECT id FROM oban_jobs
  WHERE state = 'available' AND queue = 'default'::text
  ORDER BY priority, scheduled_at, id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE oban_jobs AS j
SET state = 'executing',
    attempted_at = timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz),
    attempted_by = ARRAY['queuebench', 'A'::text],
    attempt = j.attempt + 1
FROM subset
WHERE j.id = subset.id AND j.attempt < j.max_attempts
RETURNING j.id, j.attempt, j.worker;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 3601 s
-- step 4, window R
BEGIN;
UPDATE oban_jobs SET state = 'available'
WHERE state = 'executing' AND attempted_at < timezone('UTC', '2100-01-01 01:00:01.003000+00'::timestamptz) - make_interval(secs => 3600.0::float8)
  AND attempt < max_attempts;
-- step 5, window R
UPDATE oban_jobs SET state = 'discarded', discarded_at = timezone('UTC', '2100-01-01 01:00:01.003000+00'::timestamptz)
WHERE state = 'executing' AND attempted_at < timezone('UTC', '2100-01-01 01:00:01.003000+00'::timestamptz) - make_interval(secs => 3600.0::float8)
  AND attempt >= max_attempts;
-- step 6, window R
COMMIT;
-- step 7, window B
BEGIN;
WITH staged AS (
  UPDATE oban_jobs SET state = 'available'
  WHERE id IN (SELECT id FROM oban_jobs
               WHERE state IN ('scheduled', 'retryable') AND scheduled_at <= timezone('UTC', '2100-01-01 01:00:01.004000+00'::timestamptz)
               ORDER BY scheduled_at DESC, id DESC
               LIMIT 5000
               FOR UPDATE SKIP LOCKED)
), subset AS (
  SELECT id FROM oban_jobs
  WHERE state = 'available' AND queue = 'default'::text
  ORDER BY priority, scheduled_at, id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE oban_jobs AS j
SET state = 'executing',
    attempted_at = timezone('UTC', '2100-01-01 01:00:01.004000+00'::timestamptz),
    attempted_by = ARRAY['queuebench', 'B'::text],
    attempt = j.attempt + 1
FROM subset
WHERE j.id = subset.id AND j.attempt < j.max_attempts
RETURNING j.id, j.attempt, j.worker;
-- step 8, window A (waits; returns after step 9)
BEGIN;
UPDATE oban_jobs SET state = 'completed', completed_at = timezone('UTC', '2100-01-01 01:00:01.004000+00'::timestamptz)
WHERE id = 1;
-- step 9, window B
COMMIT;
-- step 10, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
