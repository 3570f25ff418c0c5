-- The plan for the agents: the run's one row.
INSERT INTO qb_agent_run (run_id, agents, bundle) VALUES ($1, $2, $3)
