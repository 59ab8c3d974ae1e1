-- What-if for bench/api_load.py --setup-sql: no foreign keys from a new attempt and its idempotency
-- record to the rows every one of a class's POSTs names (the API client, the exercise and its
-- version). Each check takes a FOR KEY SHARE lock on the parent row, which concurrent writers
-- share; this measures what that costs under load. Not a migration.
ALTER TABLE attempts DROP CONSTRAINT fk_attempts_client_id_api_clients;
ALTER TABLE attempts DROP CONSTRAINT fk_attempts_exercise_id_exercises;
ALTER TABLE attempts DROP CONSTRAINT fk_attempts_exercise_version_id_exercise_versions;
ALTER TABLE idempotency_records DROP CONSTRAINT fk_idempotency_records_client_id_api_clients;
