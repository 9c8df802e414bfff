-- 0009_pii_policy_of_rows: which personal-data policy each user row was
-- written under, so usersync pii apply knows which values hold hashes
-- and under which key instead of guessing from their shape.
--
-- pii_policies gets an identity, policy_id. users, user_version_history and
-- quarantine get pii_policy_id: the policy a sync (or pii apply) last wrote
-- the row's personal values under; a superseded version keeps its row's.
-- No foreign key: a COPY of a backfill would check one per row.
--
-- Rows written before this migration get an id only when it is known: when
-- pii_policies holds exactly one policy, a row is under it if it was
-- written (users.synced_at, a version's valid_from, a quarantine record's
-- received_at) since that policy was first recorded, or when a pii apply of
-- that policy finished (it rewrote every row to it). Older rows were written
-- before usersync recorded policies, in clear, and stay null, as do all rows
-- when several policies were recorded: for those legacy rows only, pii apply
-- still takes a value of 64 lower-case hex digits for a hash.

ALTER TABLE {{schema}}.pii_policies ADD COLUMN policy_id bigint GENERATED ALWAYS AS IDENTITY;
ALTER TABLE {{schema}}.pii_policies ADD CONSTRAINT pii_policies_policy_id UNIQUE (policy_id);
ALTER TABLE {{schema}}.pii_apply ADD COLUMN kept_other_key bigint NOT NULL DEFAULT 0;
ALTER TABLE {{schema}}.users ADD COLUMN pii_policy_id bigint;
ALTER TABLE {{schema}}.user_version_history ADD COLUMN pii_policy_id bigint;
ALTER TABLE {{schema}}.quarantine ADD COLUMN pii_policy_id bigint;

-- o is the one policy ever recorded (no row when there are none or several)
-- and whether a pii apply of it finished.
UPDATE {{schema}}.users u SET pii_policy_id = o.policy_id
FROM (SELECT p.policy_id, p.first_used_at, EXISTS (SELECT FROM {{schema}}.pii_apply a
        WHERE a.fingerprint = p.fingerprint AND a.finished_at IS NOT NULL) AS applied
    FROM {{schema}}.pii_policies p WHERE (SELECT count(*) FROM {{schema}}.pii_policies) = 1) AS o
WHERE o.applied OR u.synced_at >= o.first_used_at;

UPDATE {{schema}}.user_version_history h SET pii_policy_id = o.policy_id
FROM (SELECT p.policy_id, p.first_used_at, EXISTS (SELECT FROM {{schema}}.pii_apply a
        WHERE a.fingerprint = p.fingerprint AND a.finished_at IS NOT NULL) AS applied
    FROM {{schema}}.pii_policies p WHERE (SELECT count(*) FROM {{schema}}.pii_policies) = 1) AS o
WHERE o.applied OR h.valid_from >= o.first_used_at;

UPDATE {{schema}}.quarantine q SET pii_policy_id = o.policy_id
FROM (SELECT p.policy_id, p.first_used_at, EXISTS (SELECT FROM {{schema}}.pii_apply a
        WHERE a.fingerprint = p.fingerprint AND a.finished_at IS NOT NULL) AS applied
    FROM {{schema}}.pii_policies p WHERE (SELECT count(*) FROM {{schema}}.pii_policies) = 1) AS o
WHERE q.resource_type = 'user' AND (o.applied OR q.received_at >= o.first_used_at);
