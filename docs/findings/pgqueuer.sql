-- The counterexample by hand (pgqueuer): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
WITH next_queued AS (
  SELECT id, priority FROM pgqueuer
  WHERE entrypoint = 'queuebench'::text AND status = 'queued' AND execute_after < '2100-01-01 00:00:00.001000+00'::timestamptz
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), next_stale AS (
  SELECT id, priority FROM pgqueuer
  WHERE status = 'picked' AND entrypoint = 'queuebench'::text
    AND heartbeat < '2100-01-01 00:00:00.001000+00'::timestamptz - make_interval(secs => 30.0::float8)
    AND execute_after < '2100-01-01 00:00:00.001000+00'::timestamptz
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), eligible AS (
  SELECT id FROM (SELECT id, priority FROM next_queued UNION ALL SELECT id, priority FROM next_stale) AS both_sets
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
), claimed AS (
  UPDATE pgqueuer
  SET status = 'picked', updated = '2100-01-01 00:00:00.001000+00'::timestamptz, heartbeat = '2100-01-01 00:00:00.001000+00'::timestamptz,
      queue_manager_id = md5('A'::text || '/' || pg_backend_pid())::uuid
  WHERE id IN (SELECT id FROM eligible)
  RETURNING id, attempts, status, entrypoint, priority, headers
), log_pick AS (
  INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
  SELECT id, status, entrypoint, priority FROM claimed
)
SELECT id, attempts + 1 AS attempt, coalesce(headers->>'class', entrypoint) AS job_class
FROM claimed;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 31 s
-- step 4, window B
BEGIN;
WITH next_queued AS (
  SELECT id, priority FROM pgqueuer
  WHERE entrypoint = 'queuebench'::text AND status = 'queued' AND execute_after < '2100-01-01 00:00:31.003000+00'::timestamptz
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), next_stale AS (
  SELECT id, priority FROM pgqueuer
  WHERE status = 'picked' AND entrypoint = 'queuebench'::text
    AND heartbeat < '2100-01-01 00:00:31.003000+00'::timestamptz - make_interval(secs => 30.0::float8)
    AND execute_after < '2100-01-01 00:00:31.003000+00'::timestamptz
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
), eligible AS (
  SELECT id FROM (SELECT id, priority FROM next_queued UNION ALL SELECT id, priority FROM next_stale) AS both_sets
  ORDER BY priority DESC, id ASC
  LIMIT 1::int8
), claimed AS (
  UPDATE pgqueuer
  SET status = 'picked', updated = '2100-01-01 00:00:31.003000+00'::timestamptz, heartbeat = '2100-01-01 00:00:31.003000+00'::timestamptz,
      queue_manager_id = md5('B'::text || '/' || pg_backend_pid())::uuid
  WHERE id IN (SELECT id FROM eligible)
  RETURNING id, attempts, status, entrypoint, priority, headers
), log_pick AS (
  INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
  SELECT id, status, entrypoint, priority FROM claimed
)
SELECT id, attempts + 1 AS attempt, coalesce(headers->>'class', entrypoint) AS job_class
FROM claimed;
-- step 5, window A (waits; returns after step 6)
BEGIN;
WITH deleted AS (
  DELETE FROM pgqueuer WHERE id = 1 RETURNING id, entrypoint, priority
)
INSERT INTO pgqueuer_log (job_id, status, entrypoint, priority)
SELECT id, 'successful', entrypoint, priority FROM deleted;
-- step 6, window B
COMMIT;
-- step 7, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
