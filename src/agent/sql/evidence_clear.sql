-- An evidence part uploaded again replaces the earlier one ($1 agent, $2 part).
DELETE FROM qb_agent_evidence WHERE agent = $1 AND part = $2
