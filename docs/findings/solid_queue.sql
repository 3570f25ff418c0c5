-- The counterexample by hand (solid_queue): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
WITH picked AS (
  SELECT id, job_id FROM solid_queue_ready_executions
  WHERE queue_name = 'default'::text
  ORDER BY priority, job_id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), unready AS (
  DELETE FROM solid_queue_ready_executions AS r USING picked WHERE r.id = picked.id
), registered AS (
  INSERT INTO solid_queue_processes (id, kind, last_heartbeat_at, pid, hostname, name, created_at)
  VALUES (pg_backend_pid(), 'Worker', timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz), pg_backend_pid(), 'queuebench',
          'worker-' || 'A'::text || '-' || pg_backend_pid(), timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz))
  ON CONFLICT (id) DO NOTHING
), refreshed AS (
  UPDATE solid_queue_processes SET last_heartbeat_at = timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz)
  WHERE id = pg_backend_pid()
    AND last_heartbeat_at < timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz) - make_interval(secs => 60::int8)
), claimed AS (
  INSERT INTO solid_queue_claimed_executions (job_id, process_id, created_at)
  SELECT job_id, pg_backend_pid(), timezone('UTC', '2100-01-01 00:00:00.001000+00'::timestamptz) FROM picked
  RETURNING id, job_id
)
SELECT c.job_id AS id, c.id AS claim_id, j.class_name
FROM claimed AS c JOIN solid_queue_jobs AS j ON j.id = c.job_id;
-- step 2, window A
COMMIT;
-- step 3, window A: close the window (\q), or from another: SELECT pg_terminate_backend(<its pid>);
-- from here on, left to itself: no more faults, every session in turn
-- step 4, window B
BEGIN;
WITH picked AS (
  SELECT id, job_id FROM solid_queue_ready_executions
  WHERE queue_name = 'default'::text
  ORDER BY priority, job_id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), unready AS (
  DELETE FROM solid_queue_ready_executions AS r USING picked WHERE r.id = picked.id
), registered AS (
  INSERT INTO solid_queue_processes (id, kind, last_heartbeat_at, pid, hostname, name, created_at)
  VALUES (pg_backend_pid(), 'Worker', timezone('UTC', '2100-01-01 00:00:00.003000+00'::timestamptz), pg_backend_pid(), 'queuebench',
          'worker-' || 'B'::text || '-' || pg_backend_pid(), timezone('UTC', '2100-01-01 00:00:00.003000+00'::timestamptz))
  ON CONFLICT (id) DO NOTHING
), refreshed AS (
  UPDATE solid_queue_processes SET last_heartbeat_at = timezone('UTC', '2100-01-01 00:00:00.003000+00'::timestamptz)
  WHERE id = pg_backend_pid()
    AND last_heartbeat_at < timezone('UTC', '2100-01-01 00:00:00.003000+00'::timestamptz) - make_interval(secs => 60::int8)
), claimed AS (
  INSERT INTO solid_queue_claimed_executions (job_id, process_id, created_at)
  SELECT job_id, pg_backend_pid(), timezone('UTC', '2100-01-01 00:00:00.003000+00'::timestamptz) FROM picked
  RETURNING id, job_id
)
SELECT c.job_id AS id, c.id AS claim_id, j.class_name
FROM claimed AS c JOIN solid_queue_jobs AS j ON j.id = c.job_id;
-- step 5, window B
COMMIT;
-- step 6: time passes (a lease): the clock moves to 301 s
-- step 7, window R
BEGIN;
WITH silent AS (
  SELECT id FROM solid_queue_processes
  WHERE last_heartbeat_at <= timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz) - make_interval(secs => 300.0::float8)
  FOR UPDATE SKIP LOCKED
), released AS (
  DELETE FROM solid_queue_claimed_executions AS c USING silent WHERE c.process_id = silent.id
  RETURNING c.job_id
), deregistered AS (
  DELETE FROM solid_queue_processes AS p USING silent WHERE p.id = silent.id
)
INSERT INTO solid_queue_failed_executions (job_id, error, created_at)
SELECT job_id,
       jsonb_build_object('exception_class', 'SolidQueue::Processes::ProcessPrunedError',
                          'message', 'Process was found dead and pruned', 'backtrace', '[]'::jsonb)::text,
       timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz)
FROM released
ON CONFLICT (job_id) DO NOTHING
RETURNING job_id;
-- step 8, window B (waits; returns after step 9)
BEGIN;
WITH picked AS (
  SELECT id, job_id FROM solid_queue_ready_executions
  WHERE queue_name = 'default'::text
  ORDER BY priority, job_id
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), unready AS (
  DELETE FROM solid_queue_ready_executions AS r USING picked WHERE r.id = picked.id
), registered AS (
  INSERT INTO solid_queue_processes (id, kind, last_heartbeat_at, pid, hostname, name, created_at)
  VALUES (pg_backend_pid(), 'Worker', timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz), pg_backend_pid(), 'queuebench',
          'worker-' || 'B'::text || '-' || pg_backend_pid(), timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz))
  ON CONFLICT (id) DO NOTHING
), refreshed AS (
  UPDATE solid_queue_processes SET last_heartbeat_at = timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz)
  WHERE id = pg_backend_pid()
    AND last_heartbeat_at < timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz) - make_interval(secs => 60::int8)
), claimed AS (
  INSERT INTO solid_queue_claimed_executions (job_id, process_id, created_at)
  SELECT job_id, pg_backend_pid(), timezone('UTC', '2100-01-01 00:05:01.004000+00'::timestamptz) FROM picked
  RETURNING id, job_id
)
SELECT c.job_id AS id, c.id AS claim_id, j.class_name
FROM claimed AS c JOIN solid_queue_jobs AS j ON j.id = c.job_id;
-- step 9, window R
COMMIT;
-- step 10, window B
COMMIT;
-- then: left to itself (no more faults, every session going on: until no job was left to run): 1 job ended dead after a single fault and no failure of their own (a fault hit 1 job)
