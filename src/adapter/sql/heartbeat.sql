-- Extend the lease while working; 0 rows means the job is no longer ours.
UPDATE jobs
SET locked_until = now() + make_interval(secs => :lease_secs)
WHERE id = :id {fence}
