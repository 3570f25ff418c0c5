-- The producers are done.
UPDATE qb_agent_run SET producers_done = true
