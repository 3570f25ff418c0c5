-- One open-model arrival: its class and priority, a payload of the class's
-- size, the scenario's max_attempts.
INSERT INTO jobs (class, priority, payload, max_attempts)
VALUES (:class, :priority, :payload, :max_attempts)
RETURNING id
