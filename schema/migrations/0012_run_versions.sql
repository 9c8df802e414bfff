-- 0012_run_versions: a run's checkpoint saves the versions it wrote.
--
-- sync_runs kept every counter of a run's progress but the user versions it
-- wrote, so a resumed run counted its versions from 0 and status showed
-- none. Runs recorded before this migration keep 0: their count is lost.

ALTER TABLE {{schema}}.sync_runs ADD COLUMN versions bigint NOT NULL DEFAULT 0;
