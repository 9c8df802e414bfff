-- 0014_dimension_digests: the digest of each dimension list last applied.
--
-- A sync listed teams, roles and profiles in full and staged each into
-- temporary tables every run, changed or not. The digest of the list it
-- applied (SHA-256 over its typed rows in id order) is kept in the stream
-- named after the dimension's table ('teams', 'roles', 'profiles'), so an
-- incremental sync that lists the same again writes nothing.

ALTER TABLE {{schema}}.sync_state ADD COLUMN digest bytea;
