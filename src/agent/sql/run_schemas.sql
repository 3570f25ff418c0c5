-- The schemas that hold a run across agents ($1: the marking table's name) that this role may use.
-- Any role that may create a schema can make one that looks like a run, so only a plain table
-- (no view, no row security) whose columns run_id, state and created_at have the built-in types
-- the control tables give them counts: reading it then runs no function of that role (a cast
-- from a type of its own to text would run as the agent's role). find_run quotes the name.
SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relname = $1 AND c.relkind = 'r' AND NOT c.relrowsecurity AND has_schema_privilege(n.oid, 'USAGE')
  AND (SELECT count(*) FROM pg_attribute a
       WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
         AND (a.attname, a.atttypid) IN (('run_id', 'pg_catalog.text'::pg_catalog.regtype),
                                         ('state', 'pg_catalog.text'::pg_catalog.regtype),
                                         ('created_at', 'pg_catalog.timestamptz'::pg_catalog.regtype))) = 3
