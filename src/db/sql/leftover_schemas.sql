-- Schemas named like those of earlier runs (kept with --keep, or the run was killed), besides
-- $1: a run's (queuebench_<run id>, a repeat's with _K), validate's or repro's scratch schema,
-- with the bytes of its tables (indexes and TOAST included) and the schema's comment: the
-- mark queuebench wrote when it created it (db::schema::Mark), or whatever a look-alike has.
-- A schema a live run is using is left out: its connections carry application_name
-- 'queuebench <schema>'.
SELECT n.nspname,
       coalesce((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
                 WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'm')), 0)::int8,
       coalesce(obj_description(n.oid, 'pg_namespace'), '')
FROM pg_namespace n
WHERE (n.nspname ~ '^queuebench_[0-9]{8}_[0-9]{6}_[0-9a-f]{4}(_[0-9]+)?$'
       OR n.nspname ~ '^queuebench_(validate|repro)_[0-9a-f]{8}$')
  AND n.nspname <> $1
  AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = 'queuebench ' || n.nspname)
ORDER BY 1
