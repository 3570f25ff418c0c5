-- Installed only when [workers] wakeup = "listen": every statement that
-- inserts into jobs sends one NOTIFY on a channel named after the table's
-- schema (the run's own schema), so concurrent runs never wake each other.
-- NOTIFY is transactional: it is delivered when the inserting transaction
-- commits, and never if it rolls back. Per statement, not per row: one
-- wake-up is enough for an idle worker, which then claims until empty.
CREATE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA, '');
  RETURN NULL;
END
$$;

CREATE TRIGGER jobs_notify AFTER INSERT ON jobs FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify();

COMMENT ON FUNCTION jobs_notify() IS 'queuebench';
