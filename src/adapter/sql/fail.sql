-- A failed execution: back to the queue after a backoff, or dead once the
-- attempts reach max_attempts (seeds 000 and 001). The harness computes the
-- backoff (capped exponential, optional full jitter) and binds it. The fence
-- placeholder below becomes the fencing mode, as in complete.sql.
UPDATE jobs
SET status = CASE WHEN attempts >= max_attempts THEN 'dead' ELSE 'queued' END,
    run_at = now() + make_interval(secs => :backoff_secs),
    locked_until = NULL,
    last_error = :error
WHERE id = :id {fence}
