-- The counterexample by hand (procrastinate): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
WITH me AS (
  INSERT INTO procrastinate_workers (id, last_heartbeat) OVERRIDING SYSTEM VALUE
  VALUES (pg_backend_pid(), '2100-01-01 00:00:00.001000+00'::timestamptz)
  ON CONFLICT (id) DO NOTHING
), refreshed AS (
  UPDATE procrastinate_workers SET last_heartbeat = '2100-01-01 00:00:00.001000+00'::timestamptz
  WHERE id = pg_backend_pid() AND last_heartbeat < '2100-01-01 00:00:00.001000+00'::timestamptz - make_interval(secs => 10::int8)
), candidate AS (
  SELECT jobs.id FROM procrastinate_jobs AS jobs
  WHERE jobs.status = 'todo'
    AND jobs.queue_name = 'default'::text
    AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= '2100-01-01 00:00:00.001000+00'::timestamptz)
    AND NOT EXISTS (
      SELECT 1 FROM procrastinate_jobs AS other
      WHERE jobs.lock IS NOT NULL AND other.lock = jobs.lock
        AND (other.status = 'doing'
             OR (other.status = 'todo'
                 AND (other.priority > jobs.priority
                      OR (other.priority = jobs.priority AND other.id < jobs.id)))))
  ORDER BY jobs.priority DESC, jobs.id ASC
  LIMIT 1
  FOR UPDATE OF jobs SKIP LOCKED
)
UPDATE procrastinate_jobs AS j
SET status = 'doing', worker_id = pg_backend_pid()
FROM candidate
WHERE j.id = candidate.id
RETURNING j.id, j.attempts + 1 AS attempt, j.task_name;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 31 s
-- step 4, window R
BEGIN;
UPDATE procrastinate_jobs AS j
SET status = CASE WHEN j.abort_requested THEN 'failed' ELSE 'todo' END::procrastinate_job_status,
    attempts = CASE WHEN j.abort_requested THEN j.attempts ELSE j.attempts + 1 END,
    scheduled_at = CASE WHEN j.abort_requested THEN j.scheduled_at ELSE '2100-01-01 00:00:31.003000+00'::timestamptz END
WHERE j.status = 'doing' AND j.queue_name = 'default'::text
  AND (j.worker_id IS NULL
       OR j.worker_id IN (SELECT id FROM procrastinate_workers
                          WHERE last_heartbeat < '2100-01-01 00:00:31.003000+00'::timestamptz - make_interval(secs => 30.0::float8)))
RETURNING j.id;
-- step 5, window R
COMMIT;
-- step 6, window B
BEGIN;
WITH me AS (
  INSERT INTO procrastinate_workers (id, last_heartbeat) OVERRIDING SYSTEM VALUE
  VALUES (pg_backend_pid(), '2100-01-01 00:00:31.004000+00'::timestamptz)
  ON CONFLICT (id) DO NOTHING
), refreshed AS (
  UPDATE procrastinate_workers SET last_heartbeat = '2100-01-01 00:00:31.004000+00'::timestamptz
  WHERE id = pg_backend_pid() AND last_heartbeat < '2100-01-01 00:00:31.004000+00'::timestamptz - make_interval(secs => 10::int8)
), candidate AS (
  SELECT jobs.id FROM procrastinate_jobs AS jobs
  WHERE jobs.status = 'todo'
    AND jobs.queue_name = 'default'::text
    AND (jobs.scheduled_at IS NULL OR jobs.scheduled_at <= '2100-01-01 00:00:31.004000+00'::timestamptz)
    AND NOT EXISTS (
      SELECT 1 FROM procrastinate_jobs AS other
      WHERE jobs.lock IS NOT NULL AND other.lock = jobs.lock
        AND (other.status = 'doing'
             OR (other.status = 'todo'
                 AND (other.priority > jobs.priority
                      OR (other.priority = jobs.priority AND other.id < jobs.id)))))
  ORDER BY jobs.priority DESC, jobs.id ASC
  LIMIT 1
  FOR UPDATE OF jobs SKIP LOCKED
)
UPDATE procrastinate_jobs AS j
SET status = 'doing', worker_id = pg_backend_pid()
FROM candidate
WHERE j.id = candidate.id
RETURNING j.id, j.attempts + 1 AS attempt, j.task_name;
-- step 7, window A (waits; returns after step 8)
BEGIN;
UPDATE procrastinate_jobs
SET status = 'succeeded', abort_requested = false,
    attempts = CASE status WHEN 'doing' THEN attempts + 1 ELSE attempts END
WHERE id = 1 AND status IN ('todo', 'doing');
-- step 8, window B
COMMIT;
-- step 9, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
