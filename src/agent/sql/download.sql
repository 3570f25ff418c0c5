-- One agent's uploaded part ($1 agent, $2 part), its chunks in order.
SELECT data FROM qb_agent_evidence WHERE agent = $1 AND part = $2 ORDER BY seq
