-- The sampler: the queue table's ($1) statistics and sizes, the oldest transaction,
-- the xmin horizon's age and what non-idle backends wait on; one query per
-- sample. The statistics come from the pg_stat_get_* functions (the
-- pg_stat_user_tables view costs ~2 ms more) and the backends are read once
-- (`a`), not once per figure as three pg_stat_activity scans were.
WITH a AS MATERIALIZED (
  SELECT datid, xact_start, backend_xmin, state, wait_event_type, wait_event
  FROM pg_stat_get_activity(NULL) WHERE pid <> pg_backend_pid()
)
SELECT pg_stat_get_live_tuples(t.r), pg_stat_get_dead_tuples(t.r),
       pg_stat_get_vacuum_count(t.r), pg_stat_get_autovacuum_count(t.r),
       pg_table_size(t.r), pg_indexes_size(t.r),
       (SELECT greatest(coalesce(max(extract(epoch FROM now() - xact_start)), 0), 0)::float8 FROM a
        WHERE datid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND xact_start IS NOT NULL),
       (SELECT coalesce(max(age(backend_xmin)), 0)::int8 FROM a),
       (SELECT coalesce(string_agg(w || '=' || n, ' ' ORDER BY w), '') FROM (
          SELECT wait_event_type || ':' || wait_event AS w, count(*) AS n FROM a
          WHERE state <> 'idle' AND wait_event IS NOT NULL GROUP BY 1) AS x)
FROM (SELECT to_regclass(quote_ident($1::text)) AS r) AS t
