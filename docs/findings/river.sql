-- The counterexample by hand (river): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
-- JobGetAvailable: lock up to :batch available jobs of the queue, due now, in
-- (priority, scheduled_at, id) order, skipping rows other workers hold, and
-- mark them running in the same statement: attempt + 1, attempted_at = '2100-01-01 00:00:00.001000+00'::timestamptz
-- (the rescuer's clock), the worker appended to attempted_by (River keeps the
-- last 100). The row lock ends with the statement: from then on ownership is
-- only state = 'running'.
WITH locked_jobs AS (
  SELECT id
  FROM river_job
  WHERE state = 'available'
    AND queue = 'default'::text
    AND scheduled_at <= '2100-01-01 00:00:00.001000+00'::timestamptz
  ORDER BY priority ASC, scheduled_at ASC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE river_job
SET state = 'running',
    attempt = river_job.attempt + 1,
    attempted_at = '2100-01-01 00:00:00.001000+00'::timestamptz,
    attempted_by = array_append(
      CASE WHEN array_length(river_job.attempted_by, 1) >= 100
           THEN river_job.attempted_by[array_length(river_job.attempted_by, 1) + 2 - 100:]
           ELSE river_job.attempted_by
      END,
      'A'::text)
FROM locked_jobs
WHERE river_job.id = locked_jobs.id
RETURNING river_job.id, river_job.attempt, river_job.kind;
-- step 2, window A
COMMIT;
-- step 3, window A
BEGIN;
-- JobSetStateIfRunning(completed): the job's only fence is state = 'running',
-- no attempt, no attempted_by. A worker whose job was rescued and claimed
-- again completes the new owner's running job; once it is not running the
-- write changes nothing (River returns the row unchanged).
UPDATE river_job
SET state = 'completed',
    finalized_at = '2100-01-01 00:00:00.002000+00'::timestamptz
WHERE id = 1
  AND state = 'running';
-- step 4: the lease runs out: the clock moves to 3601 s
-- step 5, window R (waits; returns after step 7)
BEGIN;
-- JobRescuer (every 30 s on the leader): running jobs whose attempted_at is
-- older than RescueStuckJobsAfter (:lease_secs, 1 h by default), 10,000 per
-- batch by id. River picks them with one query and updates them by id with a
-- second one that does not check the state again; here the pick is a plain
-- CTE (no row lock) and the update matches on id only, so a job completed in
-- between is still turned back, as in River. Out of attempts -> discarded;
-- cancellation attempted -> cancelled; else retryable at the retry policy's
-- time (the scenario's [retry] backoff), with an error appended and the
-- rescue counted in metadata. River skips jobs younger than their JobTimeout
-- (1 min by default, below the 1 h rescue time).
WITH stuck AS (
  SELECT id, attempt, max_attempts, metadata ? 'cancel_attempted_at' AS cancelling
  FROM river_job
  WHERE state = 'running'
    AND attempted_at < '2100-01-01 01:00:01.003000+00'::timestamptz - make_interval(secs => 3600.0::float8)
  ORDER BY id
  LIMIT 10000
)
UPDATE river_job
SET state = CASE
      WHEN stuck.cancelling THEN 'cancelled'
      WHEN stuck.attempt < stuck.max_attempts THEN 'retryable'
      ELSE 'discarded'
    END::river_job_state,
    finalized_at = CASE
      WHEN stuck.cancelling OR stuck.attempt >= stuck.max_attempts THEN '2100-01-01 01:00:01.003000+00'::timestamptz
    END,
    scheduled_at = CASE
      WHEN stuck.cancelling OR stuck.attempt >= stuck.max_attempts THEN river_job.scheduled_at
      ELSE '2100-01-01 01:00:01.003000+00'::timestamptz + make_interval(secs => least(10.0::float8, 0.1::float8 * power(2, greatest(stuck.attempt - 1, 0))))
    END,
    errors = array_append(river_job.errors,
      jsonb_build_object('at', '2100-01-01 01:00:01.003000+00'::timestamptz, 'attempt', stuck.attempt, 'error', 'Stuck job rescued by JobRescuer')),
    metadata = river_job.metadata || jsonb_build_object('river:rescue_count',
      coalesce(CASE WHEN jsonb_typeof(river_job.metadata -> 'river:rescue_count') = 'number'
                    THEN (river_job.metadata ->> 'river:rescue_count')::int END, 0) + 1)
FROM stuck
WHERE river_job.id = stuck.id
RETURNING river_job.id, river_job.state;
-- step 6: the lease runs out: the clock moves to 7202 s
-- step 7, window A
COMMIT;
-- step 8, window R
-- JobScheduler (every 5 s on the leader): retryable and scheduled jobs that
-- are due become available, 10,000 per batch, locked in fetch order (a plain
-- FOR UPDATE: it waits for rows a worker is writing). Unique-key conflicts,
-- which River discards here, cannot happen: our jobs have no unique_key.
WITH jobs_to_schedule AS (
  SELECT id
  FROM river_job
  WHERE state IN ('retryable', 'scheduled')
    AND priority >= 0
    AND queue IS NOT NULL
    AND scheduled_at <= '2100-01-01 02:00:02.005000+00'::timestamptz
  ORDER BY priority, scheduled_at, id
  LIMIT 10000
  FOR UPDATE
)
UPDATE river_job
SET state = 'available'
FROM jobs_to_schedule
WHERE river_job.id = jobs_to_schedule.id;
-- step 9, window R
COMMIT;
-- step 10, window A
BEGIN;
-- JobGetAvailable: lock up to :batch available jobs of the queue, due now, in
-- (priority, scheduled_at, id) order, skipping rows other workers hold, and
-- mark them running in the same statement: attempt + 1, attempted_at = '2100-01-01 02:00:02.006000+00'::timestamptz
-- (the rescuer's clock), the worker appended to attempted_by (River keeps the
-- last 100). The row lock ends with the statement: from then on ownership is
-- only state = 'running'.
WITH locked_jobs AS (
  SELECT id
  FROM river_job
  WHERE state = 'available'
    AND queue = 'default'::text
    AND scheduled_at <= '2100-01-01 02:00:02.006000+00'::timestamptz
  ORDER BY priority ASC, scheduled_at ASC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE river_job
SET state = 'running',
    attempt = river_job.attempt + 1,
    attempted_at = '2100-01-01 02:00:02.006000+00'::timestamptz,
    attempted_by = array_append(
      CASE WHEN array_length(river_job.attempted_by, 1) >= 100
           THEN river_job.attempted_by[array_length(river_job.attempted_by, 1) + 2 - 100:]
           ELSE river_job.attempted_by
      END,
      'A'::text)
FROM locked_jobs
WHERE river_job.id = locked_jobs.id
RETURNING river_job.id, river_job.attempt, river_job.kind;
-- step 11, window A
COMMIT;
-- then: 1 job was handed out again after a completion of it was accepted (1 claim in all; a statement gave the finished job back to the queue, or the claim took it as it was); the first: job 1: w1's completion was accepted (sent t=7202.000 s, answered t=7202.000 s), then w1's claim (sent t=7202.000 s) returned it again
