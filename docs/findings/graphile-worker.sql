-- The counterexample by hand (graphile-worker): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
-- batchGetJobs: lock up to :batch available jobs that are due, of the tasks
-- this worker runs (all of them), in (priority, run_at) order, skipping rows
-- other workers hold; a job in a named queue qualifies only if its queue row
-- can be locked too. Then lock them for this pool: attempts + 1, locked_by,
-- locked_at (the lock's age is the only lease). The queue rows of the picked
-- jobs are locked for the pool in the same statement. The task identifier
-- comes back as the class (graphile-worker maps task ids in the client).
WITH j AS (
  SELECT jobs.job_queue_id, jobs.priority, jobs.run_at, jobs.id
  FROM _private_jobs AS jobs
  WHERE jobs.is_available = true
    AND run_at <= '2100-01-01 00:00:00.001000+00'::timestamptz
    AND task_id = any(ARRAY(SELECT id FROM _private_tasks))
    AND (
      jobs.job_queue_id IS NULL
      OR jobs.job_queue_id IN (
        SELECT id
        FROM _private_job_queues AS job_queues
        WHERE job_queues.is_available = true
        FOR UPDATE
        SKIP LOCKED
      )
    )
  ORDER BY priority ASC, run_at ASC
  LIMIT 1::int8
  FOR UPDATE
  SKIP LOCKED
),
q AS (
  UPDATE _private_job_queues AS job_queues
  SET locked_by = 'A'::text,
      locked_at = '2100-01-01 00:00:00.001000+00'::timestamptz
  FROM j
  WHERE job_queues.id = j.job_queue_id
)
UPDATE _private_jobs AS jobs
SET attempts = jobs.attempts + 1,
    locked_by = 'A'::text,
    locked_at = '2100-01-01 00:00:00.001000+00'::timestamptz
FROM j
WHERE jobs.id = j.id
RETURNING jobs.id, jobs.attempts,
          (SELECT identifier FROM _private_tasks AS tasks WHERE tasks.id = jobs.task_id) AS task_identifier;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 14401 s
-- step 4, window R
BEGIN;
-- resetLockedAt (each pool, every 8-10 min): locks older than the timeout
-- (:lease_secs, 4 h by default) are cleared, on jobs (run_at moved up to now
-- if it was earlier) and on named-queue rows. The attempt stays counted.
WITH queues AS (
  UPDATE _private_job_queues AS job_queues
  SET locked_at = NULL,
      locked_by = NULL
  WHERE locked_at < '2100-01-01 04:00:01.003000+00'::timestamptz - make_interval(secs => 14400.0::float8)
)
UPDATE _private_jobs AS jobs
SET locked_at = NULL,
    locked_by = NULL,
    run_at = greatest(run_at, '2100-01-01 04:00:01.003000+00'::timestamptz)
WHERE locked_at < '2100-01-01 04:00:01.003000+00'::timestamptz - make_interval(secs => 14400.0::float8)
RETURNING id;
-- step 5, window R
COMMIT;
-- step 6, window B
BEGIN;
-- batchGetJobs: lock up to :batch available jobs that are due, of the tasks
-- this worker runs (all of them), in (priority, run_at) order, skipping rows
-- other workers hold; a job in a named queue qualifies only if its queue row
-- can be locked too. Then lock them for this pool: attempts + 1, locked_by,
-- locked_at (the lock's age is the only lease). The queue rows of the picked
-- jobs are locked for the pool in the same statement. The task identifier
-- comes back as the class (graphile-worker maps task ids in the client).
WITH j AS (
  SELECT jobs.job_queue_id, jobs.priority, jobs.run_at, jobs.id
  FROM _private_jobs AS jobs
  WHERE jobs.is_available = true
    AND run_at <= '2100-01-01 04:00:01.004000+00'::timestamptz
    AND task_id = any(ARRAY(SELECT id FROM _private_tasks))
    AND (
      jobs.job_queue_id IS NULL
      OR jobs.job_queue_id IN (
        SELECT id
        FROM _private_job_queues AS job_queues
        WHERE job_queues.is_available = true
        FOR UPDATE
        SKIP LOCKED
      )
    )
  ORDER BY priority ASC, run_at ASC
  LIMIT 1::int8
  FOR UPDATE
  SKIP LOCKED
),
q AS (
  UPDATE _private_job_queues AS job_queues
  SET locked_by = 'B'::text,
      locked_at = '2100-01-01 04:00:01.004000+00'::timestamptz
  FROM j
  WHERE job_queues.id = j.job_queue_id
)
UPDATE _private_jobs AS jobs
SET attempts = jobs.attempts + 1,
    locked_by = 'B'::text,
    locked_at = '2100-01-01 04:00:01.004000+00'::timestamptz
FROM j
WHERE jobs.id = j.id
RETURNING jobs.id, jobs.attempts,
          (SELECT identifier FROM _private_tasks AS tasks WHERE tasks.id = jobs.task_id) AS task_identifier;
-- step 7, window A (waits; returns after step 8)
BEGIN;
-- completeJobs (a job without a named queue): delete it by id. No fence: not
-- on locked_by, not on attempts. A worker whose lock was swept and whose job
-- another worker took deletes that worker's job.
DELETE FROM _private_jobs AS jobs
WHERE id = 1;
-- step 8, window B
COMMIT;
-- step 9, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
