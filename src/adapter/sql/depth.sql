-- The sampler: queue depth by class and status, and each class's oldest ready
-- age in seconds; one query per sample.
SELECT class, status, count(*),
       coalesce(extract(epoch FROM now() - min(run_at) FILTER (WHERE status = 'queued' AND run_at <= now())), 0)::float8
FROM jobs
GROUP BY class, status
