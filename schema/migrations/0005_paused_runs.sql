-- 0005_paused_runs: a run can be paused.
--
-- A run that stops to wait (a rate limit longer than the client sleeps, or a
-- worker draining for shutdown) is not a failure: its checkpoint is kept and
-- the next run of its kind resumes it. Such runs were recorded as failed,
-- which alerts and status read as failures; they are recorded as paused now.

ALTER TABLE {{schema}}.sync_runs DROP CONSTRAINT sync_runs_status;
ALTER TABLE {{schema}}.sync_runs ADD CONSTRAINT sync_runs_status
    CHECK (status IN ('running', 'succeeded', 'failed', 'paused', 'abandoned'));
