-- Joining as agent $1, named $2.
INSERT INTO qb_agent (agent, name) VALUES ($1, $2)
