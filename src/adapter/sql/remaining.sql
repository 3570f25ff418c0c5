-- Is anything left to do? (stop = "drained")
SELECT EXISTS (SELECT 1 FROM jobs WHERE status IN ('queued', 'running'))
