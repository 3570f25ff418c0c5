-- Schemas of earlier runs (kept with --keep, or the run was killed), besides $1.
SELECT nspname FROM pg_namespace
WHERE nspname ~ '^queuebench_[0-9]{8}_[0-9]{6}_[0-9a-f]{4}$' AND nspname <> $1
ORDER BY 1
