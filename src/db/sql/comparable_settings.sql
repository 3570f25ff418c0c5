-- The settings the run's fingerprint records (model::fingerprint::SETTINGS), as SHOW prints them.
SELECT name, current_setting(name) FROM unnest($1::text[]) AS name ORDER BY name
