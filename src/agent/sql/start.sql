-- The barrier: the run starts $1 seconds from now on the server's clock.
UPDATE qb_agent_run SET state = 'running', start_at = clock_timestamp() + make_interval(secs => $1)
RETURNING (extract(epoch FROM start_at) * 1e6)::int8
