-- Joining: how many agents the run wants, its state, and how many joined.
SELECT agents, state, (SELECT count(*) FROM qb_agent) FROM qb_agent_run
