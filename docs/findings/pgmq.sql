-- The counterexample by hand (pgmq): make a schema with the scenario's table and 1 waiting job(s),
--   queuebench prepare SCENARIO --set jobs.preload=1 --set workers.batch=1 --database-url URL --schema qb_explore
-- open one psql window per session, run `SET search_path = qb_explore;` in each, and send each step
-- in its window, in order. A step marked "waits" hangs on a lock: send the next step once it hangs;
-- it returns after the step named. The virtual clock is
-- written in as timestamps.
-- step 1, window A
BEGIN;
-- read(queue, vt => :lease_secs, qty => :batch): lock up to :batch visible
-- messages in msg_id order, skipping rows other readers hold, and hide them
-- for :lease_secs: vt = now + lease, read_ct + 1, last_read_at. Messages whose
-- vt passed while a reader had them are visible again, so this is also the
-- only reclaim.
WITH cte AS (
  SELECT msg_id
  FROM q_default
  WHERE vt <= '2100-01-01 00:00:00.001000+00'::timestamptz
  ORDER BY msg_id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE q_default m
SET last_read_at = '2100-01-01 00:00:00.001000+00'::timestamptz,
    vt = '2100-01-01 00:00:00.001000+00'::timestamptz + make_interval(secs => 30.0::float8),
    read_ct = read_ct + 1
FROM cte
WHERE m.msg_id = cte.msg_id
RETURNING m.msg_id, m.read_ct, coalesce(m.headers ->> 'class', 'default') AS class;
-- step 2, window A
COMMIT;
-- step 3: the lease runs out: the clock moves to 31 s
-- step 4, window B
BEGIN;
-- read(queue, vt => :lease_secs, qty => :batch): lock up to :batch visible
-- messages in msg_id order, skipping rows other readers hold, and hide them
-- for :lease_secs: vt = now + lease, read_ct + 1, last_read_at. Messages whose
-- vt passed while a reader had them are visible again, so this is also the
-- only reclaim.
WITH cte AS (
  SELECT msg_id
  FROM q_default
  WHERE vt <= '2100-01-01 00:00:31.003000+00'::timestamptz
  ORDER BY msg_id ASC
  LIMIT 1::int8
  FOR UPDATE SKIP LOCKED
)
UPDATE q_default m
SET last_read_at = '2100-01-01 00:00:31.003000+00'::timestamptz,
    vt = '2100-01-01 00:00:31.003000+00'::timestamptz + make_interval(secs => 30.0::float8),
    read_ct = read_ct + 1
FROM cte
WHERE m.msg_id = cte.msg_id
RETURNING m.msg_id, m.read_ct, coalesce(m.headers ->> 'class', 'default') AS class;
-- step 5, window A (waits; returns after step 6)
BEGIN;
-- archive(queue, msg_id): move the message to the archive in one statement.
-- By msg_id only: no check of vt or read_ct, so a reader whose vt ran out
-- archives the message another reader now holds.
WITH archived AS (
  DELETE FROM q_default
  WHERE msg_id = 1
  RETURNING msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers
)
INSERT INTO a_default (msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers)
SELECT msg_id, vt, read_ct, enqueued_at, last_read_at, message, headers
FROM archived
RETURNING msg_id;
-- step 6, window B
COMMIT;
-- step 7, window A
COMMIT;
-- then: stale writes that landed: 1 completions, 0 failures, 0 heartbeats; rejected by the fence: 0 completions, 0 failures
