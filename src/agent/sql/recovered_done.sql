-- A missing agent's executions witnessed by the done rows its workers completed (same ranges
-- as recovered_ledger.sql) whose ledger rows were still batched in the agent when it died.
SELECT id, w, attempts
FROM jobs, LATERAL (SELECT substr(locked_by, 2)::int AS w) x
WHERE status = 'done' AND locked_by ~ '^w[0-9]{1,9}$' AND (w BETWEEN $1 AND $2 OR w BETWEEN $3 AND $4)
  AND NOT EXISTS (SELECT 1 FROM effects e WHERE e.job_id = jobs.id AND e.worker = x.w)
