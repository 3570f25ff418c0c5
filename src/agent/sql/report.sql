-- An agent's sign of life ($1 agent, $2 state, $3 its report at the end); the run's state back.
WITH me AS (
  UPDATE qb_agent SET seen_at = clock_timestamp(), state = $2, report = coalesce($3, report)
  WHERE agent = $1
)
SELECT state, (extract(epoch FROM start_at) * 1e6)::int8, producers_done FROM qb_agent_run
