-- Coordinator: can the run still progress once agents are missing? The queue's jobs by whether
-- anything could still move them: queued ones (some live worker can claim them), running ones
-- held by a live worker, and running ones held by a missing agent's workers ($1, $2: the
-- missing agents' worker identity ranges, first and last of each, as `w<N>` in locked_by).
SELECT count(*) FILTER (WHERE status = 'queued') AS queued,
       count(*) FILTER (WHERE status = 'running' AND NOT held) AS running_alive,
       count(*) FILTER (WHERE status = 'running' AND held) AS running_missing
FROM jobs,
     LATERAL (SELECT locked_by ~ '^w[0-9]{1,9}$'
                     AND EXISTS (SELECT 1 FROM unnest($1::int4[], $2::int4[]) AS r(lo, hi)
                                 WHERE substr(locked_by, 2)::int BETWEEN r.lo AND r.hi) AS held) AS h
