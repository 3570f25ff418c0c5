-- Every agent that joined, by number, with how long it has been silent (server clock).
SELECT agent, name, state, extract(epoch FROM clock_timestamp() - seen_at)::float8, report, error,
       (extract(epoch FROM seen_at) * 1e6)::int8
FROM qb_agent ORDER BY agent
