-- What-if for bench/api_load.py --setup-sql: the attempts table without ten of its sixteen indexes,
-- which a POST never reads (the grading queue, the dashboard and the admin search do): what keeping
-- them costs a write under load. Not a migration.
DROP INDEX ix_attempts_queue;
DROP INDEX ix_attempts_created;
DROP INDEX ix_attempts_verdict_created;
DROP INDEX ix_attempts_likely_cause_created;
DROP INDEX ix_attempts_client_created;
DROP INDEX ix_attempts_exercise_created;
DROP INDEX ix_attempts_course_created;
DROP INDEX ix_attempts_learner_created;
DROP INDEX ix_attempts_score;
DROP INDEX ix_attempts_exercise_score;
