-- --reuse: the objects named like queuebench's own in schema $1 (tables $2 and
-- the function jobs_notify), and whether each carries queuebench's mark $3.
SELECT c.relname, coalesce(obj_description(c.oid, 'pg_class'), '') = $3
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = ANY($2)
UNION ALL
SELECT p.proname, coalesce(obj_description(p.oid, 'pg_proc'), '') = $3
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = $1 AND p.proname = 'jobs_notify'
