-- First round trip: read the oldest queued jobs, no lock.
SELECT id FROM jobs
WHERE queue = 'default' AND status = 'queued' AND run_at <= now()
ORDER BY run_at
LIMIT :batch
