-- The schemas that hold a run across agents ($1: the marking table's name) that this role may use.
SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = $1 AND c.relkind = 'r' AND has_schema_privilege(n.oid, 'USAGE')
