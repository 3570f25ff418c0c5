-- Joining: the numbers and names taken.
SELECT agent, name FROM qb_agent
