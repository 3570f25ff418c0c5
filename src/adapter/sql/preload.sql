-- Preload: :count jobs with strictly increasing run_at (1 µs apart, all in
-- the past), so FIFO order is id order.
INSERT INTO jobs (payload, run_at, max_attempts)
SELECT jsonb_build_object('n', g), now() - make_interval(secs => (:count - g) / 1e6), :max_attempts
FROM generate_series(1, :count) AS g
