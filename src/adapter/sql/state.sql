-- The end state every checker reads: one row per job, by id.
SELECT id, status, attempts, max_attempts, coalesce(locked_until < now(), false) AS lease_expired
FROM jobs
ORDER BY id
