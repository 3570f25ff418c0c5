-- A missing agent's executions from the effects ledger: the rows its workers wrote ($1..$2:
-- its worker slots, $3..$4: its respawned workers' identities), at the time each was written.
SELECT job_id, worker, attempt, (extract(epoch FROM at) * 1e6)::int8
FROM effects, LATERAL (SELECT worker AS w) x
WHERE (w BETWEEN $1 AND $2 OR w BETWEEN $3 AND $4)
