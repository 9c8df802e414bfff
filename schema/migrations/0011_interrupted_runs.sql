-- 0011_interrupted_runs: a run stopped by a shutdown is interrupted.
--
-- A run stopped by Ctrl-C, SIGTERM or a worker draining for shutdown did not
-- fail: its checkpoint is kept and the next run of its kind resumes it. Such
-- runs were recorded as failed ("context canceled") or paused (a drained
-- worker), which alerts and status read as failures or as waits; they are
-- recorded as interrupted now, and paused keeps to runs that stopped to wait
-- for the API's rate limit. The rows earlier versions wrote are moved too.

ALTER TABLE {{schema}}.sync_runs DROP CONSTRAINT sync_runs_status;
ALTER TABLE {{schema}}.sync_runs ADD CONSTRAINT sync_runs_status
    CHECK (status IN ('running', 'succeeded', 'failed', 'paused', 'interrupted', 'abandoned'));

UPDATE {{schema}}.sync_runs SET status = 'interrupted'
WHERE (status = 'failed' AND error LIKE '%context canceled%')
   OR (status = 'paused' AND error LIKE '%process is shutting down%');
