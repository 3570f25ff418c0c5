-- The agents are told to stop (their workers stop, they upload).
UPDATE qb_agent_run SET state = 'stopping' WHERE state <> 'done'
