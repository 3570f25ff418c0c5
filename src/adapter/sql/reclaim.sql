-- The reaper (seed 000): expired leases go back to the queue after a
-- backoff, and a reclaim consumes an attempt like any failure, so a job that
-- kills every worker ends dead instead of looping forever.
UPDATE jobs
SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
    run_at = now() + make_interval(secs => least(:retry_cap_secs, :retry_base_secs * power(2, greatest(attempts - 1, 0)))),
    locked_until = NULL,
    claim_token = NULL,
    locked_by = NULL,
    last_error = 'LEASE_EXPIRED'
WHERE status = 'running' AND locked_until < now()
RETURNING id, status
