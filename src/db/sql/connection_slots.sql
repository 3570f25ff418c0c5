-- The server's max_connections minus superuser-reserved slots minus the other
-- clients' connections (this one is not counted: the run's budget includes it).
SELECT current_setting('max_connections')::int8 - current_setting('superuser_reserved_connections')::int8
     - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())
