-- The plan the agent joined.
SELECT bundle FROM qb_agent_run
