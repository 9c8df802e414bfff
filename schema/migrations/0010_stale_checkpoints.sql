-- 0010_stale_checkpoints: checkpoints no run will resume are cleared.
--
-- A run's next_url is only read to resume it, and only while it is failed or
-- paused with no later run of its kind succeeded or running
-- (failedRunToResume). Earlier versions kept every other checkpoint too,
-- and stored the next link as the API sent it, with whatever query
-- parameters it carried (an access token, a session): those rows are cleared
-- here; the ones still resumable are rebuilt from the cursor when resumed.
-- From now on abandoning or finishing a run clears what it leaves behind.

UPDATE {{schema}}.sync_runs r SET next_url = NULL
WHERE next_url IS NOT NULL AND (status NOT IN ('failed', 'paused', 'running')
    OR EXISTS (SELECT 1 FROM {{schema}}.sync_runs n
               WHERE n.kind = r.kind AND n.run_id > r.run_id AND n.status IN ('succeeded', 'running')));
