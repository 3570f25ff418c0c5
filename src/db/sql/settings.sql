-- The server's settings whose source is not the default, recorded once per run.
SELECT name, setting FROM pg_settings WHERE source NOT IN ('default', 'override') ORDER BY name
