-- Cancel a job that is still waiting; 0 rows if a worker already has it.
UPDATE jobs
SET status = 'cancelled'
WHERE id = :id AND status = 'queued'
