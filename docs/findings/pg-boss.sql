-- The counterexample by hand (pg-boss): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
-- fetchNextJob: lock up to :batch queued jobs (created or retry) of the queue
-- whose start_after has passed, highest priority first, then oldest, skipping
-- rows other workers hold, and make them active: started_on = '2100-01-01 00:00:00.001000+00'::timestamptz, and
-- retry_count + 1 when the job was started before (a retry).
-- pg-boss fixes each job's expire_in when it is sent (expireInSeconds); the
-- claim writes it from :lease_secs, which stands for jobs sent with
-- expireInSeconds = lease.duration (by default the same 15 minutes).
WITH next AS (
  SELECT id
  FROM job
  WHERE name = 'queuebench'::text
    AND state < 'active'
    AND start_after < '2100-01-01 00:00:00.001000+00'::timestamptz
  ORDER BY priority DESC, created_on, id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE job j
SET state = 'active',
    started_on = '2100-01-01 00:00:00.001000+00'::timestamptz,
    retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END,
    expire_in = make_interval(secs => 900.0::float8)
FROM next
WHERE j.name = 'queuebench'::text
  AND j.id = next.id
RETURNING j.id, j.retry_count, j.data ->> 'class' AS class;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 901 s
-- step 4, window R
BEGIN;
-- Maintenance's expire() (failJobsByTimeout, every 120 s in v10): every active
-- job whose started_on + expire_in has passed is failed like failJobsById
-- (deleted and inserted again as `retry`, or `failed` out of retries) with
-- pg-boss's timeout message. One row per expired job, led by true.
WITH deleted_jobs AS (
  DELETE FROM job
  WHERE state = 'active'
    AND (started_on + expire_in) < '2100-01-01 00:15:01.003000+00'::timestamptz
  RETURNING *
),
retried_jobs AS (
  INSERT INTO job (id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
                   start_after, started_on, singleton_key, singleton_on, expire_in, created_on,
                   completed_on, keep_until, dead_letter, policy, output)
  SELECT id, name, priority, data,
         CASE WHEN retry_count < retry_limit THEN 'retry'::job_state ELSE 'failed'::job_state END,
         retry_limit, retry_count, retry_delay, retry_backoff,
         CASE
           WHEN retry_count = retry_limit THEN start_after
           WHEN NOT retry_backoff THEN '2100-01-01 00:15:01.003000+00'::timestamptz + retry_delay * interval '1 second'
           ELSE '2100-01-01 00:15:01.003000+00'::timestamptz + (retry_delay * 2 ^ least(16, retry_count + 1) / 2
                         + retry_delay * 2 ^ least(16, retry_count + 1) / 2 * random()) * interval '1 second'
         END,
         started_on, singleton_key, singleton_on, expire_in, created_on,
         CASE WHEN retry_count < retry_limit THEN NULL ELSE '2100-01-01 00:15:01.003000+00'::timestamptz END,
         keep_until, dead_letter, policy,
         '{"value": {"message": "job failed by timeout in active state"}}'::jsonb
  FROM deleted_jobs
  ON CONFLICT DO NOTHING
  RETURNING id, state
),
failed_jobs AS (
  INSERT INTO job (id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff,
                   start_after, started_on, singleton_key, singleton_on, expire_in, created_on,
                   completed_on, keep_until, dead_letter, policy, output)
  SELECT id, name, priority, data, 'failed'::job_state, retry_limit, retry_count, retry_delay, retry_backoff,
         start_after, started_on, singleton_key, singleton_on, expire_in, created_on,
         '2100-01-01 00:15:01.003000+00'::timestamptz, keep_until, dead_letter, policy,
         '{"value": {"message": "job failed by timeout in active state"}}'::jsonb
  FROM deleted_jobs
  WHERE id NOT IN (SELECT id FROM retried_jobs)
  RETURNING id, state
)
SELECT true AS reclaimed, id, state FROM retried_jobs
UNION ALL
SELECT true, id, state FROM failed_jobs;
-- step 5, window R
COMMIT;
-- step 6, window B
BEGIN;
-- fetchNextJob: lock up to :batch queued jobs (created or retry) of the queue
-- whose start_after has passed, highest priority first, then oldest, skipping
-- rows other workers hold, and make them active: started_on = '2100-01-01 00:15:01.004000+00'::timestamptz, and
-- retry_count + 1 when the job was started before (a retry).
-- pg-boss fixes each job's expire_in when it is sent (expireInSeconds); the
-- claim writes it from :lease_secs, which stands for jobs sent with
-- expireInSeconds = lease.duration (by default the same 15 minutes).
WITH next AS (
  SELECT id
  FROM job
  WHERE name = 'queuebench'::text
    AND state < 'active'
    AND start_after < '2100-01-01 00:15:01.004000+00'::timestamptz
  ORDER BY priority DESC, created_on, id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE job j
SET state = 'active',
    started_on = '2100-01-01 00:15:01.004000+00'::timestamptz,
    retry_count = CASE WHEN j.started_on IS NOT NULL THEN j.retry_count + 1 ELSE j.retry_count END,
    expire_in = make_interval(secs => 900.0::float8)
FROM next
WHERE j.name = 'queuebench'::text
  AND j.id = next.id
RETURNING j.id, j.retry_count, j.data ->> 'class' AS class;
-- step 7, window B
COMMIT;
-- step 8, window A
BEGIN;
-- completeJobs: fenced by queue name and state = 'active' only (no attempt, no
-- owner). A job expired and fetched again is active for its new owner, so the
-- old owner's completion lands on it.
UPDATE job
SET completed_on = '2100-01-01 00:15:01.005000+00'::timestamptz,
    state = 'completed'
WHERE name = 'queuebench'::text
  AND id = 'e9fb2669-5b0e-40bc-a5d3-c72106ab001c'
  AND state = 'active';
-- step 9, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
