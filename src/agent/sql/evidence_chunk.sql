-- One chunk of an agent's evidence part ($1 agent, $2 part, $3 seq, $4 bytes).
INSERT INTO qb_agent_evidence (agent, part, seq, data) VALUES ($1, $2, $3, $4)
