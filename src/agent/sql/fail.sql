-- Why agent $1 gave up ($2).
UPDATE qb_agent SET state = 'failed', error = $2, seen_at = clock_timestamp() WHERE agent = $1
