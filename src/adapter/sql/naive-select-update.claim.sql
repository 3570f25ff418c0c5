-- Second round trip: mark what the SELECT saw, whoever took it meanwhile.
UPDATE jobs
SET status = 'running',
    attempts = attempts + 1,
    locked_until = now() + make_interval(secs => :lease_secs),
    claim_token = gen_random_uuid(),
    locked_by = :worker
WHERE id = ANY (:ids)
RETURNING id, attempts, claim_token, class
