-- The run is over.
UPDATE qb_agent_run SET state = 'done'
