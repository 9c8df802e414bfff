-- 0006_history: the history of team membership, teams, roles and profiles.
--
-- As for users (0003), the current state stays in the current row and only
-- what it replaced is kept apart, so a backfill writes no more rows than
-- before and an unchanged page writes nothing:
--
--   - user_teams.valid_from is when the open membership began. A membership
--     that ends (the user left the team, the user or the team was marked
--     deleted) moves to user_team_history with its valid_to, in the statement
--     that deletes it from user_teams; the view user_team_versions unites both.
--     user_teams keeps its meaning, today's membership, and now holds no row
--     of a deleted user, nor of a team deleted since this migration.
--   - teams, roles and profiles gain version_valid_from, when their current
--     content was first seen. A row whose content changes (a rename, a new
--     parent role) moves its old version to team_history, role_history or
--     profile_history; a deleted row's current version ends at its deleted_at;
--     the views team_versions, role_versions and profile_versions unite them.
--
-- Existing warehouses: nothing before this migration is reconstructed. Every
-- current membership starts at its user_teams.synced_at, which is when
-- usersync first wrote it (membership rows are never rewritten); every team,
-- role and profile's current version starts at its synced_at, which is when
-- usersync last wrote the row, that is when its current content was first
-- seen. Memberships of users or teams already marked deleted are closed at
-- that deletion (the earlier of the two), starting at their synced_at or at
-- the deletion if they were written after it.

ALTER TABLE {{schema}}.user_teams ADD COLUMN valid_from timestamptz NOT NULL DEFAULT now();
UPDATE {{schema}}.user_teams SET valid_from = synced_at;

CREATE TABLE {{schema}}.user_team_history (
    user_id     bigint NOT NULL,
    team_id     bigint NOT NULL,
    valid_from  timestamptz NOT NULL,
    valid_to    timestamptz NOT NULL,
    ended_by    text NOT NULL,
    CONSTRAINT user_team_history_ended_by CHECK (ended_by IN ('removed', 'user_deleted', 'team_deleted'))
);
CREATE INDEX user_team_history_user_id ON {{schema}}.user_team_history (user_id, valid_to);
CREATE INDEX user_team_history_team_id ON {{schema}}.user_team_history (team_id, valid_from);

WITH ended AS (
    SELECT ut.user_id, ut.team_id, ut.valid_from,
           CASE WHEN u.deleted_at IS NOT NULL AND (t.deleted_at IS NULL OR u.deleted_at <= t.deleted_at)
                THEN u.deleted_at ELSE t.deleted_at END AS at,
           CASE WHEN u.deleted_at IS NOT NULL AND (t.deleted_at IS NULL OR u.deleted_at <= t.deleted_at)
                THEN 'user_deleted' ELSE 'team_deleted' END AS ended_by
    FROM {{schema}}.user_teams ut
    JOIN {{schema}}.users u ON u.id = ut.user_id
    LEFT JOIN {{schema}}.teams t ON t.id = ut.team_id
    WHERE u.deleted_at IS NOT NULL OR t.deleted_at IS NOT NULL
), moved AS (
    DELETE FROM {{schema}}.user_teams ut USING ended e
    WHERE ut.user_id = e.user_id AND ut.team_id = e.team_id
)
INSERT INTO {{schema}}.user_team_history (user_id, team_id, valid_from, valid_to, ended_by)
SELECT user_id, team_id, least(valid_from, at), at, ended_by FROM ended;

CREATE VIEW {{schema}}.user_team_versions AS
SELECT user_id, team_id, valid_from, valid_to FROM {{schema}}.user_team_history
UNION ALL
SELECT user_id, team_id, valid_from, NULL::timestamptz FROM {{schema}}.user_teams;

ALTER TABLE {{schema}}.teams ADD COLUMN version_valid_from timestamptz NOT NULL DEFAULT now();
ALTER TABLE {{schema}}.roles ADD COLUMN version_valid_from timestamptz NOT NULL DEFAULT now();
ALTER TABLE {{schema}}.profiles ADD COLUMN version_valid_from timestamptz NOT NULL DEFAULT now();
UPDATE {{schema}}.teams SET version_valid_from = synced_at;
UPDATE {{schema}}.roles SET version_valid_from = synced_at;
UPDATE {{schema}}.profiles SET version_valid_from = synced_at;

CREATE TABLE {{schema}}.team_history (
    team_id           bigint NOT NULL,
    name              text,
    color             text,
    scim_external_id  text,
    scim_source       text,
    created_at        timestamptz,
    updated_at        timestamptz,
    raw               jsonb NOT NULL,
    valid_from        timestamptz NOT NULL,
    valid_to          timestamptz NOT NULL
);
CREATE INDEX team_history_team_id_valid_from ON {{schema}}.team_history (team_id, valid_from);

CREATE TABLE {{schema}}.role_history (
    role_id           bigint NOT NULL,
    name              text,
    created_at        timestamptz,
    updated_at        timestamptz,
    parent_role_id    bigint,
    raw               jsonb NOT NULL,
    valid_from        timestamptz NOT NULL,
    valid_to          timestamptz NOT NULL
);
CREATE INDEX role_history_role_id_valid_from ON {{schema}}.role_history (role_id, valid_from);

CREATE TABLE {{schema}}.profile_history (
    profile_id        bigint NOT NULL,
    name              text,
    is_admin          boolean,
    special_id        text,
    created_at        timestamptz,
    updated_at        timestamptz,
    raw               jsonb NOT NULL,
    valid_from        timestamptz NOT NULL,
    valid_to          timestamptz NOT NULL
);
CREATE INDEX profile_history_profile_id_valid_from ON {{schema}}.profile_history (profile_id, valid_from);

CREATE VIEW {{schema}}.team_versions AS
SELECT team_id, name, color, scim_external_id, scim_source, created_at, updated_at, raw, valid_from, valid_to
FROM {{schema}}.team_history
UNION ALL
SELECT id, name, color, scim_external_id, scim_source, created_at, updated_at, raw, version_valid_from, deleted_at
FROM {{schema}}.teams;

CREATE VIEW {{schema}}.role_versions AS
SELECT role_id, name, created_at, updated_at, parent_role_id, raw, valid_from, valid_to
FROM {{schema}}.role_history
UNION ALL
SELECT id, name, created_at, updated_at, parent_role_id, raw, version_valid_from, deleted_at
FROM {{schema}}.roles;

CREATE VIEW {{schema}}.profile_versions AS
SELECT profile_id, name, is_admin, special_id, created_at, updated_at, raw, valid_from, valid_to
FROM {{schema}}.profile_history
UNION ALL
SELECT id, name, is_admin, special_id, created_at, updated_at, raw, version_valid_from, deleted_at
FROM {{schema}}.profiles;
