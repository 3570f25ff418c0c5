-- Mark the job done. The fence placeholder below becomes the fencing mode:
-- none: nothing; status: AND status = 'running';
-- attempts: ... AND attempts = :attempt; token: ... AND claim_token = :token
UPDATE jobs
SET status = 'done', locked_until = NULL
WHERE id = :id {fence}
