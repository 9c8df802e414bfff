-- 0004_user_teams_of_users: user_teams only holds rows of users in users.
--
-- A per-team membership pass used to write rows for members the warehouse had
-- not synced yet, and every page of new users had to clear them first (one
-- index probe per user). The pass now leaves such members out (the next sync
-- writes the user and lists membership again), so a user new to the
-- warehouse has no user_teams rows. This removes the rows earlier passes left.
-- The warehouse's shape does not change.

DELETE FROM {{schema}}.user_teams ut
WHERE NOT EXISTS (SELECT 1 FROM {{schema}}.users u WHERE u.id = ut.user_id);
