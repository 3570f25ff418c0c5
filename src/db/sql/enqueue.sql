-- One open-model arrival: $1 class, $2 priority, $3 padding, $4 max_attempts.
INSERT INTO jobs (class, priority, payload, max_attempts)
VALUES ($1, $2, jsonb_build_object('pad', $3::text), $4)
RETURNING id
