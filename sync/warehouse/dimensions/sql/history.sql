-- The history statement of a dimension (teams, roles, profiles), rendered
-- once per dimension (see history.go): {{table}} is its table, {{stage}} the
-- staging table its list is upserted from, {{history}} its history table
-- and {{key}} that table's id column; {{columns}}, {{t.columns}} and
-- {{st.columns}} are the versioned columns (every column the upsert writes
-- but id: attributes, to-one ids, raw), bare and qualified.

-- name: archive
-- Before the upsert replaces a row's content, or brings a deleted row back,
-- its current version (held in the row) is closed into the history: at the
-- deletion for a deleted row, now for a changed one. The condition is the
-- upsert's, so an unchanged list writes nothing.
INSERT INTO {{history}} ({{key}}, {{columns}}, valid_from, valid_to)
SELECT t.id, {{t.columns}}, t.version_valid_from, coalesce(t.deleted_at, now())
FROM {{table}} t JOIN {{stage}} st ON st.id = t.id
WHERE t.deleted_at IS NOT NULL OR ({{t.columns}}) IS DISTINCT FROM ({{st.columns}})
