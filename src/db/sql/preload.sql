-- Preload: $1 jobs with strictly increasing run_at (1 µs apart, all in the
-- past), so FIFO order is id order; $2 = max_attempts.
INSERT INTO jobs (payload, run_at, max_attempts)
SELECT jsonb_build_object('n', g), now() - make_interval(secs => ($1::int8 - g) / 1e6), $2::int4
FROM generate_series(1, $1::int8) AS g
