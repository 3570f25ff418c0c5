-- The application's own row, in the same transaction as the enqueue
-- (jobs.business_row = true, seed 004).
INSERT INTO business_rows (payload) VALUES (jsonb_build_object('pad', $1::text))
