-- What proves a schema is an account's, and the drop that touches only
-- what usersync made. The marker is a table in the account's schema
-- ({{target}}, filled when it runs), one row naming the fleet (its River
-- schema), the database and the account: a table, not the schema's comment,
-- which usersync migrate rewrites. Its name is its own so that no catalog
-- table takes it.

-- name: database
-- The database's name, and whether its cluster's system identifier may be
-- read (pg_control_system is public unless revoked).
SELECT current_database(), has_function_privilege('pg_control_system()', 'EXECUTE')

-- name: systemID
SELECT system_identifier::text FROM pg_control_system()

-- name: createMarker
CREATE TABLE IF NOT EXISTS {{target}}.usersync_owner (
	fleet      text NOT NULL,
	database   text NOT NULL,
	account    text NOT NULL,
	written_at timestamptz NOT NULL DEFAULT now())

-- name: commentMarker
COMMENT ON TABLE {{target}}.usersync_owner IS 'Which usersync fleet (its River schema), database and account made this schema: accounts remove --drop-data drops only a schema this proves is the account''s.'

-- name: clearMarker
DELETE FROM {{target}}.usersync_owner

-- name: writeMarker
INSERT INTO {{target}}.usersync_owner (fleet, database, account) VALUES ($1, $2, $3)

-- name: markerExists
-- $1: the marker table's name; a missing schema is not an error.
SELECT to_regclass($1) IS NOT NULL

-- name: readMarker
-- Every row: more than one is no proof.
SELECT fleet, database, account FROM {{target}}.usersync_owner

-- name: dependents
-- The objects outside schema $1 that depend on its objects, directly or
-- through others (a view over a view), leaving out the schemas $2 and what
-- depends on their objects (the union views, remade first without the
-- account). A view depends on a table through its rewrite rule, taken for
-- the view. Deepest first: the order they can be dropped in.
WITH RECURSIVE dep(classid, objid, depth) AS (
	SELECT d.classid, d.objid, 0 FROM pg_depend d
	WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = (SELECT oid FROM pg_namespace WHERE nspname = $1)
	UNION
	SELECT coalesce(r.cls, d.classid), coalesce(r.ev_class, d.objid), dep.depth + 1
	FROM dep JOIN pg_depend d ON d.refclassid = dep.classid AND d.refobjid = dep.objid AND d.deptype IN ('n', 'a')
	LEFT JOIN LATERAL (SELECT 'pg_class'::regclass::oid AS cls, w.ev_class FROM pg_rewrite w
		WHERE d.classid = 'pg_rewrite'::regclass AND w.oid = d.objid) r ON true
	WHERE dep.depth < 32
		AND NOT (coalesce(r.cls, d.classid) = dep.classid AND coalesce(r.ev_class, d.objid) = dep.objid)
		AND NOT EXISTS (SELECT 1 FROM pg_class x JOIN pg_namespace xn ON xn.oid = x.relnamespace
			WHERE coalesce(r.cls, d.classid) = 'pg_class'::regclass AND x.oid = coalesce(r.ev_class, d.objid) AND xn.nspname = ANY($2)))
SELECT o.type, o.identity, coalesce(o.schema, tn.nspname, ''), max(dep.depth) AS depth
FROM dep CROSS JOIN LATERAL pg_identify_object(dep.classid, dep.objid, 0) o
-- A column's default, a trigger and a policy are in their table's schema.
LEFT JOIN LATERAL (SELECT coalesce(
	(SELECT adrelid FROM pg_attrdef WHERE dep.classid = 'pg_attrdef'::regclass AND oid = dep.objid),
	(SELECT tgrelid FROM pg_trigger WHERE dep.classid = 'pg_trigger'::regclass AND oid = dep.objid),
	(SELECT polrelid FROM pg_policy WHERE dep.classid = 'pg_policy'::regclass AND oid = dep.objid)) AS rel) t ON true
LEFT JOIN pg_class tc ON tc.oid = t.rel LEFT JOIN pg_namespace tn ON tn.oid = tc.relnamespace
WHERE dep.depth > 0 AND coalesce(o.schema, tn.nspname) IS DISTINCT FROM $1
GROUP BY o.type, o.identity, 3
ORDER BY depth DESC, o.identity

-- name: lockTables
-- Every relation of schema $1, to lock before looking for dependents: no
-- view can be made over them until the drop commits.
SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')

-- name: lock
LOCK TABLE {{target}} IN ACCESS EXCLUSIVE MODE

-- name: ownObjects
-- The objects of schema $1 itself (what depends on the schema): each is
-- dropped without CASCADE, so that the drop cannot reach past the schema.
SELECT o.type, o.identity FROM pg_depend d, pg_identify_object(d.classid, d.objid, 0) o
WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = (SELECT oid FROM pg_namespace WHERE nspname = $1)
ORDER BY o.type DESC, o.identity

-- name: dropObject
-- {{kind}}: VIEW, TABLE, …; {{target}}: the object's identity.
DROP {{kind}} IF EXISTS {{target}}

-- name: dropEmptySchema
-- Without CASCADE: it fails when anything is left in it.
DROP SCHEMA IF EXISTS {{target}}
